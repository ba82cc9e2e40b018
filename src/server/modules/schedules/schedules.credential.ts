// A scheduled run acts as the account that made the job, with the permissions that the API key or
// session which made it has at run time. The runner sends the job's request with a one-time
// credential (SCHEDULED_RUN_PREFIX + 256 random bits) whose hash is kept on the run row while it
// runs; the auth hook resolves it here. A revoked or deleted key, a revoked or expired session
// (or the key that made it revoked) resolves to nothing: the request is a 401 and the job stops.
import type { Deps } from '../../deps.types.js';
import type { Permissions } from '../../../contract/permissions.js';
import type { AuthContext } from '../../identity.js';
import { sha256Hex } from '../../crypto.js';
import { runCredential } from './schedules.repo.js';

/** A scheduled run's one-time credential begins with this. */
export const SCHEDULED_RUN_PREFIX = 'orj_';

const perms = (json: string | null): Permissions | null => (json ? (JSON.parse(json) as Permissions) : null);

/** The AuthContext of a running scheduled job's credential; null when it is unknown, spent or dead. */
export async function resolveScheduledRun(deps: Deps, token: string): Promise<AuthContext | null> {
  const row = await runCredential(deps.db, sha256Hex(token));
  if (!row || row.r_finished !== null) return null;
  const {
    r_finished: _f,
    j_key,
    j_session,
    k_id,
    k_kind,
    k_team,
    k_perms,
    k_revoked,
    s_id,
    s_team,
    s_expires,
    s_revoked,
    s_key,
    s_perms,
    sk_revoked,
    ...user
  } = row;
  const base = { user, instanceId: null, isAdminSession: false, credential: token };
  if (j_key !== null) {
    // An instance key can make no job; its kind is checked again all the same.
    if (k_id === null || k_revoked !== null || k_kind !== 'user') return null;
    return {
      ...base,
      via: 'api_key',
      keyId: k_id,
      sessionId: null,
      originKeyId: k_id,
      teamId: k_team,
      permissions: perms(k_perms),
    };
  }
  if (j_session !== null) {
    if (s_id === null || s_revoked !== null || s_expires === null || s_expires <= deps.clock.now())
      return null;
    if (s_key !== null && sk_revoked !== null) return null;
    return {
      ...base,
      via: 'session',
      keyId: null,
      sessionId: s_id,
      originKeyId: s_key,
      teamId: s_team,
      permissions: perms(s_perms),
    };
  }
  return null;
}
