// Teams on /api/v0/team/ (docs/teams.md). Reading the team needs the `team` family's read,
// changing it its write; in a team context the caller's permissions are already narrowed to their
// role (teams.auth.ts). Writes made for a team are in the team's audit log by the audit hook (the
// team's account, with the member); creating a team and accepting an invitation are made from a
// personal account, so they add a row to the team's log here.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/teams.js';
import { recordAudit } from '../audit/audit.service.js';
import { auditArgs, clientAddress, routePattern } from '../audit/audit.args.js';
import type { AuthContext } from '../../identity.js';
import * as S from './teams.service.js';

const team = { scope: 'team' } as const;

/** A row in the team's audit log for a team action made from a personal account. */
function auditForTeam(deps: Deps, req: FastifyRequest, auth: AuthContext, accountUserId: number): void {
  void recordAudit(deps, {
    userId: accountUserId,
    memberId: auth.user.id,
    at: deps.clock.now(),
    ip: clientAddress(req.ip),
    apiKeyId: auth.via === 'api_key' ? auth.keyId : null,
    credential:
      auth.via === 'api_key' ? 'api_key' : auth.via === 'session' ? 'session_key' : 'browser_session',
    method: req.method,
    route: routePattern(req.routeOptions.url ?? req.url),
    status: 200,
    args: auditArgs(req),
    usedAccount: false,
  }).catch((err: unknown) =>
    deps.log.warn({ err: (err as Error)?.message }, 'writing the team audit log failed'),
  );
}

export const createTeam = route(C.createTeam)({
  config: { scope: 'user', access: 'write' },
  handler: (deps) => async (req) => {
    const auth = requireAuth(req);
    const { accountUserId, ...out } = await S.createTeam(deps, auth, req.body);
    auditForTeam(deps, req, auth, accountUserId);
    return out;
  },
});

export const destroyTeam = route(C.destroyTeam)({
  config: team,
  handler: (deps) => async (req) => S.destroyTeam(deps, requireAuth(req)),
});

/** The official CLI sends email and role in the query string with an empty body; a JSON body works too. */
export const inviteMember = route(C.inviteMember)({
  config: team,
  handler: (deps) => async (req) => {
    const body = (req.body && typeof req.body === 'object' ? req.body : {}) as Record<string, unknown>;
    return S.inviteMember(deps, requireAuth(req), {
      email: req.query.email ?? body.email,
      role: req.query.role ?? body.role,
    });
  },
});

export const showInvite = route(C.showInvite)({
  handler: (deps) => async (req) => S.showInvite(deps, requireAuth(req), req.params.token),
});

export const acceptInvite = route(C.acceptInvite)({
  config: { scope: 'user', access: 'write' },
  handler: (deps) => async (req) => {
    const auth = requireAuth(req);
    const { accountUserId, ...out } = await S.acceptInvite(deps, auth, req.params.token);
    auditForTeam(
      deps,
      req,
      { ...auth, user: auth.member ? { ...auth.user, id: auth.member.userId } : auth.user },
      accountUserId,
    );
    return out;
  },
});

export const listMembers = route(C.listMembers)({
  config: team,
  handler: (deps) => async (req) => S.listMembers(deps, requireAuth(req)),
});

export const removeMember = route(C.removeMember)({
  config: team,
  handler: (deps) => async (req) => S.removeTeamMember(deps, requireAuth(req), req.params.id),
});

export const setMemberRole = route(C.setMemberRole)({
  config: team,
  handler: (deps) => async (req) => S.changeMemberRole(deps, requireAuth(req), req.params.id, req.body.role),
});

export const createRole = route(C.createRole)({
  config: team,
  handler: (deps) => async (req) => S.createRole(deps, requireAuth(req), req.body),
});

export const showRole = route(C.showRole)({
  config: team,
  handler: (deps) => async (req) => S.showRole(deps, requireAuth(req), req.params.name),
});

export const listRoles = route(C.listRoles)({
  config: team,
  handler: (deps) => async (req) => S.listRoles(deps, requireAuth(req)),
});

export const updateRole = route(C.updateRole)({
  config: team,
  handler: (deps) => async (req) => S.updateRole(deps, requireAuth(req), Number(req.params.name), req.body),
});

export const removeRole = route(C.removeRole)({
  config: team,
  handler: (deps) => async (req) => S.removeRole(deps, requireAuth(req), req.params.name),
});

export const myTeams = route(C.myTeams)({
  handler: (deps) => async (req) => S.myTeams(deps, requireAuth(req)),
});

export const switchTeam = route(C.switchTeam)({
  handler: (deps) => async (req) => S.switchTeam(deps, requireAuth(req), req.body.team_id ?? null),
});

export const teamRoutes = [
  createTeam,
  destroyTeam,
  inviteMember,
  showInvite,
  acceptInvite,
  listMembers,
  removeMember,
  setMemberRole,
  createRole,
  showRole,
  listRoles,
  updateRole,
  removeRole,
  myTeams,
  switchTeam,
];

export async function teamsRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, teamRoutes);
}
