// Teams (docs/teams.md): creating and destroying a team, its members, roles and invitations.
// A team command acts on the caller's team context (a team key or a session switched to the
// team); creating a team and accepting an invitation are done from one's own account. No one grants
// what their own role does not hold: a role's permissions, an invitation's role and a member's new
// role must be within the caller's. Every multi-step write is one transaction.
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Deps } from '../../deps.types.js';
import type { DB } from '../../db/schema.js';
import type { AuthContext } from '../../identity.js';
import { isUniqueViolation, tx } from '../../db/connection.js';
import { sha256Hex } from '../../crypto.js';
import {
  CATEGORY_FAMILIES,
  PERMISSION_FAMILIES,
  allows,
  parsePermissions,
  type Permissions,
} from '../../../contract/permissions.js';
import { insertApiKey } from '../accounts/accounts.service.js';
import { enqueueEmail } from '../notifications/notifications.outbox.js';
import * as repo from './teams.repo.js';
import * as setup from './teams.setup.js';
import { TeamErrors } from './teams.errors.js';
import { inviteMail } from './teams.mail.js';

export {
  addMember,
  setMemberRole,
  removeMember,
  createTeamFor,
  teamByName,
  joinTeamByName,
  DEFAULT_ROLES,
  type TeamRef,
} from './teams.setup.js';
export { teamAuthContext } from './teams.auth.js';

/** How long an invitation link works. */
export const INVITE_TTL_DAYS = 7;
const DAY_MS = 86_400_000;
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
/** The most dollars one create team may move. */
const MAX_TRANSFER_USD = 1_000_000_000;

/** The person behind the credential: the member in a team context, else the account. */
function person(auth: AuthContext): { id: number; email: string } {
  return auth.member
    ? { id: auth.member.userId, email: auth.member.email }
    : { id: auth.user.id, email: auth.user.email };
}

interface TeamCtx {
  team: repo.TeamRow;
  actor: NonNullable<AuthContext['member']>;
}

/** The team the credential acts for; a personal credential is refused with what to do instead. */
async function teamOf(db: Kysely<DB>, auth: AuthContext): Promise<TeamCtx> {
  if (auth.teamId === null || !auth.member) throw TeamErrors.teamContextRequired();
  const team = await repo.teamById(db, auth.teamId);
  if (!team) throw TeamErrors.notFound('The team was destroyed');
  return { team, actor: auth.member };
}

/** True when everything `requested` allows, `held` allows too (null: everything). */
function within(requested: Permissions | null, held: Permissions | null): boolean {
  if (held === null) return true;
  if (requested === null) return false;
  return PERMISSION_FAMILIES.every((f) => {
    const want = requested[f];
    return !want || allows(held, f, want);
  });
}

const parseStored = (s: string | null): Permissions | null =>
  s === null ? null : (JSON.parse(s) as Permissions);

/** Stored permissions in the marketplace's format: each category whose families they allow. */
export function marketplaceView(p: Permissions | null): { api: Record<string, Record<string, never>> } {
  const api: Record<string, Record<string, never>> = {};
  for (const [category, [families, access]] of Object.entries(CATEGORY_FAMILIES))
    if (families.every((f) => allows(p, f, access))) api[category] = {};
  return { api };
}

const identifier = (name: string) =>
  name
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');

function roleView(r: repo.RoleRow & { members?: number | string }) {
  return {
    id: r.id,
    name: r.name,
    identifier: identifier(r.name),
    permissions:
      r.permissions_given !== null
        ? (JSON.parse(r.permissions_given) as unknown)
        : marketplaceView(parseStored(r.permissions)),
    members: Number(r.members ?? 0),
  };
}

function cleanName(raw: unknown, what: string): string {
  const name = typeof raw === 'string' ? raw.trim() : '';
  if (!name) throw TeamErrors.badRequest(`${what} must not be empty`);
  if (name.length > 64) throw TeamErrors.badRequest(`${what} is longer than 64 characters`);
  return name;
}

function parseRolePermissions(raw: unknown): { value: Permissions | null; given: string } {
  if (raw === undefined || raw === null)
    throw TeamErrors.badRequest(
      'permissions are required: a permission file\'s JSON, {"api": {category: {}}}',
    );
  const parsed = parsePermissions(raw);
  if (!parsed.ok) throw TeamErrors.badRequest(parsed.msg);
  return { value: parsed.value, given: JSON.stringify(raw) };
}

/** A team key for the person (permissions null: the role's, read on each request). */
async function teamKey(
  db: Kysely<DB>,
  userId: number,
  team: { id: number; name: string },
  now: number,
): Promise<string> {
  const made = await insertApiKey(db, {
    userId,
    teamId: team.id,
    name: `team:${team.name}`,
    permissions: null,
    now,
  });
  return made.key;
}

// The team

export async function createTeam(
  deps: Pick<Deps, 'store' | 'clock'>,
  auth: AuthContext,
  body: { team_name: string; transfer_credit?: number | string | null },
) {
  if (auth.teamId !== null)
    throw TeamErrors.personalContextRequired(
      'You cannot create a team from within a team: use your personal API key',
    );
  const name = cleanName(body.team_name, 'team_name');
  const raw = body.transfer_credit;
  const usd = raw === undefined || raw === null || raw === '' ? 0 : Number(raw);
  if (!Number.isFinite(usd) || usd < 0 || usd > MAX_TRANSFER_USD)
    throw TeamErrors.badRequest('transfer_credit must be a number of dollars, 0 or more');
  const micros = Math.round(usd * 1_000_000);
  const now = deps.clock.now();
  try {
    return await tx(deps.store, async (db) => {
      const team = await setup.createTeamFor(db, auth.user.id, name, now);
      if (micros > 0) {
        if (!(await repo.debitIfCovered(db, auth.user.id, micros))) throw TeamErrors.lowBalance();
        await repo.credit(db, team.accountUserId, micros);
        await repo.insertTransfer(db, auth.user.id, team.accountUserId, micros, now);
      }
      const key = await teamKey(db, auth.user.id, team, now);
      return {
        success: true,
        msg: `Team ${name} created; you are its owner. Use this team API key to act for it.`,
        team_id: team.id,
        team_name: name,
        role: setup.OWNER_ROLE,
        api_key: key,
        accountUserId: team.accountUserId,
      };
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw TeamErrors.nameTaken(`A team named ${JSON.stringify(name)} exists`);
    throw err;
  }
}

/**
 * Destroys the team (its owner only, once it has no instances): what its balance holds goes back
 * to the owner, every team key is revoked, sessions acting for it go back to their own accounts,
 * pending invitations die, members leave; the name is free again.
 */
export async function destroyTeam(deps: Pick<Deps, 'store' | 'clock'>, auth: AuthContext) {
  const now = deps.clock.now();
  return tx(deps.store, async (db) => {
    const { team, actor } = await teamOf(db, auth);
    if (team.owner_id !== actor.userId) throw TeamErrors.notOwner("Only the team's owner can destroy it");
    const account = team.account_user_id!;
    const live = await repo.liveInstanceCount(db, account);
    if (live > 0) throw TeamErrors.hasInstances(`The team still has ${live} instance(s): destroy them first`);
    const back = await repo.drainBalance(db, account);
    if (back > 0) {
      await repo.credit(db, actor.userId, back);
      await repo.insertTransfer(db, account, actor.userId, back, now);
    }
    await repo.revokeTeamKeys(db, team.id, undefined, now);
    await repo.sessionsLeaveTeam(db, team.id, undefined);
    await repo.revokePendingInvites(db, team.id, undefined, now);
    await repo.deleteAllMembers(db, team.id);
    if (!(await repo.markDestroyed(db, team.id, now))) throw TeamErrors.notFound('The team was destroyed');
    return {
      success: true,
      msg: `Team ${team.name} destroyed${back > 0 ? `; $${(back / 1e6).toFixed(2)} returned to your balance` : ''}`,
    };
  });
}

// Invitations

export async function inviteMember(
  deps: Pick<Deps, 'store' | 'clock' | 'config'>,
  auth: AuthContext,
  input: { email?: unknown; role?: unknown },
) {
  const email = typeof input.email === 'string' ? input.email.trim().toLowerCase() : '';
  if (!EMAIL_RE.test(email) || email.length > 254)
    throw TeamErrors.badRequest('email must be an e-mail address');
  const roleName = cleanName(input.role, 'role');
  const now = deps.clock.now();
  const token = randomBytes(36).toString('base64url');
  const expiresAt = now + INVITE_TTL_DAYS * DAY_MS;
  return tx(deps.store, async (db) => {
    const { team, actor } = await teamOf(db, auth);
    if (roleName === setup.OWNER_ROLE)
      throw TeamErrors.ownerFixed('No one is invited as owner: a team has one owner');
    const role = await repo.roleByName(db, team.id, roleName);
    if (!role) throw TeamErrors.noSuchRole(`The team has no role named ${JSON.stringify(roleName)}`);
    if (!within(parseStored(role.permissions), auth.permissions)) throw TeamErrors.beyondOwn();
    const existing = await repo.userByEmail(db, email);
    if (existing && (await repo.memberOf(db, team.id, existing.id)))
      throw TeamErrors.alreadyMember(
        existing.id === team.owner_id
          ? `${email} is the team's owner`
          : `${email} is a member of the team already (change their role instead)`,
      );
    await repo.revokePendingInvites(db, team.id, email, now);
    const id = await repo.insertInvite(db, {
      teamId: team.id,
      email,
      roleId: role.id,
      tokenHash: sha256Hex(token),
      invitedBy: actor.userId,
      now,
      expiresAt,
    });
    await enqueueEmail(db, now, {
      key: `team-invite:${id}`,
      to: email,
      ...inviteMail({
        teamName: team.name,
        role: role.name,
        inviter: actor.email,
        link: `${deps.config.accounts.publicUrl}/team/invite/${token}`,
        ttlDays: INVITE_TTL_DAYS,
      }),
      category: 'team.invite',
    });
    return {
      success: true,
      msg: `Invitation sent to ${email} (role ${role.name}); it expires in ${INVITE_TTL_DAYS} days`,
      email,
      role: role.name,
      expires_at: expiresAt / 1000,
    };
  });
}

async function liveInvite(db: Kysely<DB>, token: string, now: number) {
  const inv = await repo.inviteByHash(db, sha256Hex(token));
  if (!inv || inv.accepted_at !== null || inv.revoked_at !== null || inv.expires_at <= now)
    throw TeamErrors.inviteGone();
  const team = await repo.teamById(db, inv.team_id);
  if (!team) throw TeamErrors.inviteGone();
  const role = await repo.roleById(db, team.id, inv.role_id);
  if (!role) throw TeamErrors.inviteGone();
  return { inv, team, role };
}

export async function showInvite(deps: Pick<Deps, 'db' | 'clock'>, auth: AuthContext, token: string) {
  const { inv, team, role } = await liveInvite(deps.db, token, deps.clock.now());
  return {
    team_name: team.name,
    role: role.name,
    email: inv.email,
    expires_at: inv.expires_at / 1000,
    for_you: person(auth).email === inv.email,
  };
}

/**
 * Accepts an invitation as the account it was sent to: the token is spent by a conditional
 * update, so of two concurrent accepts one wins and the other is told the link is used.
 */
export async function acceptInvite(deps: Pick<Deps, 'store' | 'clock'>, auth: AuthContext, token: string) {
  const me = person(auth);
  const now = deps.clock.now();
  return tx(deps.store, async (db) => {
    const { inv, team, role } = await liveInvite(db, token, now);
    if (inv.email !== me.email) throw TeamErrors.notForYou();
    if (await repo.memberOf(db, team.id, me.id))
      throw TeamErrors.alreadyMember('You are a member of this team already');
    if (!(await repo.claimInvite(db, inv.id, me.id, now))) throw TeamErrors.inviteGone();
    await setup.addMember(db, team.id, me.id, role.name, now);
    const key = await teamKey(db, me.id, team, now);
    return {
      success: true,
      msg: `You joined the team ${team.name} as ${role.name}. Use this team API key to act for it.`,
      team_id: team.id,
      team_name: team.name,
      role: role.name,
      api_key: key,
      accountUserId: team.account_user_id!,
    };
  });
}

// Members

export async function listMembers(deps: Pick<Deps, 'db'>, auth: AuthContext) {
  const { team } = await teamOf(deps.db, auth);
  return (await repo.membersOf(deps.db, team.id)).map((m) => ({
    id: m.user_id,
    username: m.email,
    email: m.email,
    fullname: m.full_name,
    roles: m.role_name ? [m.role_name] : [],
    is_owner: m.user_id === team.owner_id,
    joined_at: m.created_at / 1000,
  }));
}

/** The member's role permissions, checked to be within the caller's (one manages only those below). */
async function targetWithin(db: Kysely<DB>, auth: AuthContext, teamId: number, userId: number) {
  const m = await repo.memberOf(db, teamId, userId);
  if (!m) throw TeamErrors.notFound('That user is not a member of the team');
  const role = m.role_id === null ? undefined : await repo.roleById(db, teamId, m.role_id);
  if (role && !within(parseStored(role.permissions), auth.permissions))
    throw TeamErrors.beyondOwn("That member's role holds permissions yours does not: you cannot change them");
  return m;
}

export async function removeTeamMember(
  deps: Pick<Deps, 'store' | 'clock'>,
  auth: AuthContext,
  userId: number,
) {
  const now = deps.clock.now();
  return tx(deps.store, async (db) => {
    const { team } = await teamOf(db, auth);
    if (userId === team.owner_id) throw TeamErrors.ownerFixed("The team's owner cannot be removed");
    const m = await targetWithin(db, auth, team.id, userId);
    await setup.removeMember(db, team.id, userId, now);
    return { success: true, msg: `${m.email} was removed from the team; their team keys are revoked` };
  });
}

export async function changeMemberRole(
  deps: Pick<Deps, 'store' | 'clock'>,
  auth: AuthContext,
  userId: number,
  roleName: string,
) {
  const now = deps.clock.now();
  return tx(deps.store, async (db) => {
    const { team } = await teamOf(db, auth);
    if (userId === team.owner_id) throw TeamErrors.ownerFixed();
    await targetWithin(db, auth, team.id, userId);
    const name = cleanName(roleName, 'role');
    const role = await repo.roleByName(db, team.id, name);
    if (role && !within(parseStored(role.permissions), auth.permissions)) throw TeamErrors.beyondOwn();
    await setup.setMemberRole(db, team.id, userId, name, now);
    return { success: true, msg: `The member's role is now ${name}` };
  });
}

// Roles

export async function createRole(
  deps: Pick<Deps, 'store' | 'clock'>,
  auth: AuthContext,
  body: { name: string; permissions?: unknown },
) {
  const name = cleanName(body.name, 'name');
  const perms = parseRolePermissions(body.permissions);
  const now = deps.clock.now();
  try {
    return await tx(deps.store, async (db) => {
      const { team } = await teamOf(db, auth);
      if (!within(perms.value, auth.permissions)) throw TeamErrors.beyondOwn();
      const id = await repo.insertRole(db, {
        teamId: team.id,
        name,
        permissions: perms.value === null ? null : JSON.stringify(perms.value),
        given: perms.given,
        now,
      });
      return {
        success: true,
        msg: `Role ${name} created`,
        ...roleView((await repo.roleById(db, team.id, id))!),
      };
    });
  } catch (err) {
    if (isUniqueViolation(err))
      throw TeamErrors.nameTaken(`The team has a role named ${JSON.stringify(name)} already`);
    throw err;
  }
}

export async function showRole(deps: Pick<Deps, 'db'>, auth: AuthContext, name: string) {
  const { team } = await teamOf(deps.db, auth);
  const role = (await repo.rolesOf(deps.db, team.id)).find((r) => r.name === name);
  if (!role) throw TeamErrors.notFound(`The team has no role named ${JSON.stringify(name)}`);
  return roleView(role);
}

export async function listRoles(deps: Pick<Deps, 'db'>, auth: AuthContext) {
  const { team } = await teamOf(deps.db, auth);
  return (await repo.rolesOf(deps.db, team.id)).map(roleView);
}

/**
 * Renames a role or changes its permissions; the owner role never changes. Every key of its
 * members follows on its next request (the role is read with each one).
 */
export async function updateRole(
  deps: Pick<Deps, 'store' | 'clock'>,
  auth: AuthContext,
  id: number,
  body: { name?: string | null; permissions?: unknown },
) {
  const name =
    body.name === undefined || body.name === null || body.name === ''
      ? undefined
      : cleanName(body.name, 'name');
  const perms =
    body.permissions === undefined || body.permissions === null
      ? undefined
      : parseRolePermissions(body.permissions);
  if (name === undefined && perms === undefined)
    throw TeamErrors.badRequest('Give a new name, permissions, or both');
  try {
    return await tx(deps.store, async (db) => {
      const { team } = await teamOf(db, auth);
      const role = await repo.roleById(db, team.id, id);
      if (!role) throw TeamErrors.notFound(`The team has no role with id ${id}`);
      if (role.name === setup.OWNER_ROLE) throw TeamErrors.ownerFixed('The owner role cannot be changed');
      if (name === setup.OWNER_ROLE) throw TeamErrors.nameTaken('"owner" is the owner role\'s name');
      if (!within(parseStored(role.permissions), auth.permissions)) throw TeamErrors.beyondOwn();
      if (perms && !within(perms.value, auth.permissions)) throw TeamErrors.beyondOwn();
      // A narrowed role ends its members' team keys: each makes a new one, within the new role.
      // Their console sessions stay, checked against the role on each request.
      const narrowed = perms !== undefined && !within(parseStored(role.permissions), perms.value);
      const revoked = narrowed ? await repo.revokeRoleKeys(db, team.id, id, deps.clock.now()) : [];
      await repo.updateRole(db, team.id, id, {
        ...(name !== undefined ? { name } : {}),
        ...(perms !== undefined
          ? {
              permissions: perms.value === null ? null : JSON.stringify(perms.value),
              permissions_given: perms.given,
            }
          : {}),
      });
      const after = (await repo.rolesOf(db, team.id)).find((r) => r.id === id)!;
      const msg = revoked.length
        ? `Role ${after.name} updated; narrowed, so its members' ${revoked.length} team key(s) were revoked`
        : `Role ${after.name} updated`;
      return { success: true, msg, ...roleView(after), revoked_keys: revoked.length };
    });
  } catch (err) {
    if (isUniqueViolation(err))
      throw TeamErrors.nameTaken(`The team has a role named ${JSON.stringify(name)} already`);
    throw err;
  }
}

export async function removeRole(deps: Pick<Deps, 'store' | 'clock'>, auth: AuthContext, name: string) {
  const now = deps.clock.now();
  return tx(deps.store, async (db) => {
    const { team } = await teamOf(db, auth);
    const role = await repo.roleByName(db, team.id, name);
    if (!role) throw TeamErrors.notFound(`The team has no role named ${JSON.stringify(name)}`);
    if (role.name === setup.OWNER_ROLE) throw TeamErrors.ownerFixed('The owner role cannot be removed');
    if (!within(parseStored(role.permissions), auth.permissions)) throw TeamErrors.beyondOwn();
    const uses = await repo.roleUses(db, team.id, role.id, now);
    if (uses > 0)
      throw TeamErrors.roleInUse(
        `${uses} member(s) or pending invitation(s) have the role ${name}: give them another first`,
      );
    await repo.deleteRole(db, team.id, role.id);
    return { success: true, msg: `Role ${name} removed` };
  });
}

// The console: the caller's teams, and switching a session

export async function myTeams(deps: Pick<Deps, 'db'>, auth: AuthContext) {
  const me = person(auth);
  const rows = await repo.teamsOfUser(deps.db, me.id);
  return {
    current: auth.teamId,
    teams: rows.map((t) => ({
      id: t.id,
      name: t.name,
      role: t.role ?? 'member',
      is_owner: t.owner_id === me.id,
    })),
  };
}

/** Moves the signed-in session (console cookie or CLI session key) to a team of the person's, or home. */
export async function switchTeam(deps: Pick<Deps, 'store'>, auth: AuthContext, teamId: number | null) {
  if ((auth.via !== 'cookie' && auth.via !== 'session') || auth.sessionId === null)
    throw TeamErrors.badRequest(
      "An API key's team is fixed: use a team key for the team, or your personal key",
    );
  const me = person(auth);
  return tx(deps.store, async (db) => {
    if (teamId !== null && !(await repo.memberOf(db, teamId, me.id)))
      throw TeamErrors.notFound('You are not a member of that team');
    if (teamId !== null && !(await repo.teamById(db, teamId))) throw TeamErrors.notFound('No such team');
    if (!(await repo.setSessionTeam(db, auth.sessionId!, me.id, teamId)))
      throw TeamErrors.notFound('No such session');
    return {
      success: true,
      msg: teamId === null ? 'Acting for your own account' : 'Acting for the team',
      team_id: teamId,
    };
  });
}
