// Authentication (the forms are listed in docs/api.md, "Authentication").
// - `Authorization: Bearer KEY`, or `?api_key=KEY` for older clients; the header wins.
// - A key is found by the SHA-256 of what was presented, through a unique index: no scan, and the
//   key itself is never stored. No cache: a revoked key is refused on its very next request, by
//   every `serve` process. The lookups are built once (db/prepared.ts) and read committed state
//   only: a key revoked by a committed transaction is refused; one inside an open one is not yet.
// - Session keys from a 2FA login (CLI flow) are Bearer tokens too; browser sessions ride a cookie.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.js';
import { CommonErrors, AppError } from '../errors.js';
import { sha256Hex } from '../crypto.js';
import { allows, type Access, type PermissionFamily, type Permissions } from '../../contract/permissions.js';
import type { UsersTable } from '../db/tables/foundation.js';
import type { Selectable } from 'kysely';
import { preparedRead } from '../db/prepared.js';
import { recordKeyUse } from './key-uses.js';

export const SESSION_COOKIE = 'openrig_session';
export const API_KEY_PREFIX = 'or_';
export const INSTANCE_KEY_PREFIX = 'ori_';
export const SESSION_KEY_PREFIX = 'ors_';

export type User = Selectable<UsersTable>;

export interface AuthContext {
  user: User;
  via: 'api_key' | 'instance_key' | 'session' | 'cookie';
  keyId: number | null;
  sessionId: number | null;
  /**
   * The API key behind the credential: the key itself, or the key whose 2FA login made the
   * session (null for a password login's session).
   */
  originKeyId: number | null;
  teamId: number | null;
  permissions: Permissions | null;
  /** Set for an instance_api_key: the one instance it may start, stop or destroy. */
  instanceId: number | null;
  isAdminSession: boolean;
  /** The credential as presented (returned as `api_key` by /users/current, compat). */
  credential: string;
}

/**
 * Per-route authentication settings, in the route's `config`:
 * - `auth`: 'required' (default), 'optional' (handler decides; e.g. 2FA calls that accept a
 *   tfa_secret alone), or 'none'.
 * - `scope`: the permission family; `access` defaults to read for GET, write otherwise.
 * - `instanceKey`: true where an instance_api_key may act (start/stop/destroy its instance).
 */
export interface RouteAuthConfig {
  auth?: 'required' | 'optional' | 'none';
  scope?: PermissionFamily;
  access?: Access;
  instanceKey?: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext | null;
  }
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface FastifyContextConfig extends RouteAuthConfig {}
}

export function presentedCredential(req: FastifyRequest): string | null {
  const h = req.headers.authorization;
  if (typeof h === 'string' && h.length > 0) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
    return m ? m[1]! : h.trim();
  }
  const q = (req.query as Record<string, unknown> | undefined)?.api_key;
  if (typeof q === 'string' && q.length > 0) return q;
  return null;
}

/** A session by its token's hash, with the revocation of the API key that made it. */
const sessionByHash = preparedRead(({ db }, hash: string) =>
  db
    .selectFrom('sessions as s')
    .innerJoin('users as u', 'u.id', 's.user_id')
    .leftJoin('api_keys as k', 'k.id', 's.api_key_id')
    .selectAll('u')
    .select([
      's.id as sid',
      's.team_id as s_team',
      's.expires_at',
      's.revoked_at',
      's.is_admin as s_admin',
      's.kind as s_kind',
      's.api_key_id as s_key',
      's.permissions as s_perms',
      'k.revoked_at as k_revoked',
    ])
    .where('s.token_hash', '=', hash),
);

/** An API key by its hash, joined with its user (bench/ceiling.mjs makes this same read). */
export const apiKeyByHash = preparedRead(({ db }, hash: string) =>
  db
    .selectFrom('api_keys as k')
    .innerJoin('users as u', 'u.id', 'k.user_id')
    .selectAll('u')
    .select([
      'k.id as kid',
      'k.team_id as k_team',
      'k.kind as k_kind',
      'k.instance_id as k_instance',
      'k.permissions as k_perms',
      'k.revoked_at as k_revoked',
      'k.last_used_at as k_used',
    ])
    .where('k.key_hash', '=', hash),
);

/** A live session of the given kind as an AuthContext; null when unknown, revoked or another kind. */
async function resolveSession(
  deps: Deps,
  token: string,
  kind: 'cli' | 'cookie',
): Promise<AuthContext | null> {
  const [row] = await sessionByHash(deps.store, sha256Hex(token));
  if (!row || row.revoked_at !== null || row.s_kind !== kind) return null;
  // A session dies with the key that made it (revoking a key also revokes its sessions; this
  // check holds for sessions made while the revocation was committing).
  if (row.k_revoked !== null && row.k_revoked !== undefined) return null;
  if (row.expires_at <= deps.clock.now()) {
    // The CLI falls back to its API key on exactly this answer.
    if (kind === 'cli') throw CommonErrors.sessionExpired();
    return null;
  }
  const {
    sid,
    s_team,
    expires_at: _e,
    revoked_at: _r,
    s_admin,
    s_kind: _k,
    s_key,
    s_perms,
    k_revoked: _kr,
    ...user
  } = row;
  return {
    user,
    via: kind === 'cli' ? 'session' : 'cookie',
    keyId: null,
    sessionId: sid,
    originKeyId: s_key,
    teamId: s_team,
    // The permissions of the key that made the session; a password login's session is full.
    permissions: s_perms ? (JSON.parse(s_perms) as Permissions) : null,
    instanceId: null,
    isAdminSession: s_admin === 1,
    credential: token,
  };
}

/** Resolves a credential string; null when unknown or revoked; throws sessionExpired. */
export async function resolveCredential(deps: Deps, credential: string): Promise<AuthContext | null> {
  if (credential.startsWith(SESSION_KEY_PREFIX)) return resolveSession(deps, credential, 'cli');
  const [row] = await apiKeyByHash(deps.store, sha256Hex(credential));
  if (!row || row.k_revoked !== null) return null;
  const { kid, k_team, k_kind, k_instance, k_perms, k_revoked: _r, k_used, ...user } = row;
  recordKeyUse(deps, kid, k_used, deps.clock.now());
  return {
    user,
    via: k_kind === 'instance' ? 'instance_key' : 'api_key',
    keyId: kid,
    sessionId: null,
    originKeyId: kid,
    teamId: k_team,
    permissions: k_perms ? (JSON.parse(k_perms) as Permissions) : null,
    instanceId: k_instance,
    isAdminSession: false,
    credential,
  };
}

export function resolveCookie(deps: Deps, token: string): Promise<AuthContext | null> {
  return resolveSession(deps, token, 'cookie');
}

/** Fastify onRequest hook: fills `req.auth` and enforces the route's auth config. */
export function authHook(deps: Deps) {
  return async function authenticate(req: FastifyRequest, _reply: FastifyReply): Promise<void> {
    req.auth = null;
    const cfg = req.routeOptions.config as RouteAuthConfig | undefined;
    const mode = cfg?.auth ?? 'required';
    if (mode === 'none' || !req.routeOptions.url) return;
    const credential = presentedCredential(req);
    if (credential) {
      req.auth = await resolveCredential(deps, credential);
      if (!req.auth) {
        throw CommonErrors.invalidKey();
      }
    } else {
      const cookie = req.cookies?.[SESSION_COOKIE];
      if (cookie) {
        req.auth = await resolveCookie(deps, cookie);
        if (req.auth) checkCookieWrite(req);
      }
    }
    if (!req.auth) {
      if (mode === 'optional') return;
      throw CommonErrors.authMissing('Missing API key: send Authorization: Bearer KEY');
    }
    enforceScope(req, req.auth, cfg);
  };
}

/** The header the web console sends with every call; another site's page cannot set it. */
export const CSRF_HEADER = 'x-openrig-csrf';

/**
 * A cookie rides along with any request the browser makes, including a form or script on another
 * site, so a cookie-authenticated write (any method but GET, HEAD, OPTIONS) must carry the
 * `X-Openrig-Csrf` header, which no cross-site page can set without a CORS preflight that this
 * server never grants, and, when the browser names the page's origin (`Origin`,
 * `Sec-Fetch-Site`), that origin must be this server's own. Bearer and api_key callers send no
 * cookie and are never checked.
 */
function checkCookieWrite(req: FastifyRequest): void {
  if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return;
  const refuse = (why: string) => {
    throw new AppError(403, 'forbidden', `Cookie-authenticated write refused: ${why}`);
  };
  if (!req.headers[CSRF_HEADER]) refuse(`the ${CSRF_HEADER} header is required`);
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') refuse('cross-site request');
  const origin = req.headers.origin;
  if (typeof origin === 'string' && origin !== 'null') {
    // Hosts compared as URLs parse them, so an explicit default port equals an omitted one.
    const hostOf = (u: string) => {
      try {
        return new URL(u).host;
      } catch {
        return null;
      }
    };
    const own = hostOf(`${req.protocol}://${req.host}`);
    if (own === null || hostOf(origin) !== own) refuse(`origin ${origin} is not this server`);
  } else if (origin === 'null') refuse('opaque origin');
}

function enforceScope(req: FastifyRequest, auth: AuthContext, cfg: RouteAuthConfig | undefined): void {
  if (auth.via === 'instance_key') {
    // An instance key can only start, stop or destroy its one instance.
    const id = Number((req.params as Record<string, string> | undefined)?.id);
    if (!cfg?.instanceKey || id !== auth.instanceId) {
      throw new AppError(
        403,
        'forbidden',
        'An instance API key can only start, stop or destroy its own instance',
      );
    }
    return;
  }
  if (!cfg?.scope) return;
  const access: Access = cfg.access ?? (req.method === 'GET' || req.method === 'HEAD' ? 'read' : 'write');
  if (!allows(auth.permissions, cfg.scope, access)) {
    throw new AppError(403, 'forbidden', `This API key lacks ${access} permission on ${cfg.scope}`);
  }
}

/** For handlers of `auth: 'optional'` routes and services: the caller, or 401. */
export function requireAuth(req: FastifyRequest): AuthContext {
  if (!req.auth) throw CommonErrors.authMissing('Missing API key: send Authorization: Bearer KEY');
  return req.auth;
}
