// A team-context credential (a team key, or a session switched to a team) acts as the team's
// account, within the member's role, checked on every request: the membership and the role are
// read with it, never cached, so a removed member's key is refused and a narrowed role narrows
// every key of its members on their very next request, in every `serve` process.
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import { AppError } from '../../errors.js';
import { PERMISSION_FAMILIES, type Permissions } from '../../../contract/permissions.js';
import { teamAuthRow } from './teams.repo.js';

/** What both allow: null is everything; a family's access is the lesser of the two. */
export function intersect(a: Permissions | null, b: Permissions | null): Permissions | null {
  if (a === null) return b;
  if (b === null) return a;
  const out: Permissions = {};
  for (const f of PERMISSION_FAMILIES) {
    const x = a[f];
    const y = b[f];
    if (!x || !y) continue;
    out[f] = x === 'write' && y === 'write' ? 'write' : 'read';
  }
  return out;
}

/**
 * The credential's context for its team: the team's account as `user`, the member as `member`,
 * its permissions narrowed to the member's role. A personal context is returned as it is; a
 * team the user is no longer a member of (or that was destroyed) is refused with a 403 that says so.
 */
export async function teamAuthContext(
  deps: Pick<Deps, 'db'>,
  ctx: AuthContext | null,
): Promise<AuthContext | null> {
  if (ctx === null || ctx.teamId === null || ctx.member) return ctx;
  const row = await teamAuthRow(deps.db, ctx.teamId, ctx.user.id);
  if (!row) {
    throw new AppError(
      403,
      'team_access_ended',
      'This credential acts for a team you are no longer a member of (or that was destroyed): use your own key',
    );
  }
  const { t_name, t_owner, r_name, r_perms, p_email, ...account } = row;
  const rolePermissions = r_perms === null ? null : (JSON.parse(r_perms) as Permissions);
  return {
    ...ctx,
    user: account,
    member: {
      userId: ctx.user.id,
      email: p_email,
      teamName: t_name,
      role: r_name ?? 'member',
      rolePermissions: r_name === null ? {} : rolePermissions,
      isOwner: t_owner === ctx.user.id,
    },
    permissions: intersect(ctx.permissions, r_name === null ? {} : rolePermissions),
  };
}
