// Authentication (the forms are listed in docs/api.md, "Authentication").
// - `Authorization: Bearer KEY`, or `?api_key=KEY` for older clients; the header wins.
// - A key is found by the SHA-256 of what was presented, through a unique index: no scan, and the
//   key itself is never stored. No cache: a revoked key is refused on its very next request, by
//   every `serve` process. The lookups are db/credentials.ts's, built once, and read committed state
//   only: a key revoked by a committed transaction is refused; one inside an open one is not yet.
// - Session keys from a 2FA login (CLI flow) are Bearer tokens too; browser sessions ride a cookie.
// - A route may have its own first read made with the API key lookup (KeyJoinedRead): on
//   PostgreSQL in the lookup's statement (one round trip instead of two on the polling path), on a
//   SQLite file in the lookup's read transaction. The key is checked the same.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.types.js';
import { CommonErrors, AppError } from '../errors.js';
import { sha256Hex } from '../crypto.js';
import { allows, type Access, type PermissionFamily, type Permissions } from '../../contract/permissions.js';
import { SESSION_KEY_PREFIX, type AuthContext } from '../identity.js';
import {
  apiKeyByHash,
  joinsKeyReads,
  keyWithRead,
  sessionByHash,
  type JoinedRead,
  type KeyRow,
} from '../db/credentials.js';
import { recordKeyUse } from './key-uses.js';
import { recordAddressUse } from '../modules/audit/audit.addresses.js';
import { clientAddress } from '../modules/audit/audit.args.js';
import { teamAuthContext } from '../modules/teams/teams.auth.js';
import { resolveScheduledRun, SCHEDULED_RUN_PREFIX } from '../modules/schedules/schedules.credential.js';

export const SESSION_COOKIE = 'openrig_session';

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
  /** The route's read for its caller, made with the API key lookup (KeyJoinedRead). */
  keyJoinedRead?: KeyJoinedRead;
}

/**
 * A read of a route's own, for the caller, made with the API key lookup. On PostgreSQL it is made
 * in the same statement: every statement is a round trip, and the instance poll (one row, asked
 * every few seconds by every client) made two, which were most of its cost. On a SQLite file the
 * two statements share one read transaction (Store.readSnapshot, with the other requests of the
 * same turn of the event loop): a statement of its own begins and ends one, which costs more than
 * the indexed read itself. Only a request that presents an API key (not a session or cookie) makes
 * it. The key is resolved and checked exactly as without it; the row reaches the route
 * (keyJoinedRow) only once the request is authenticated.
 */
export interface KeyJoinedRead extends JoinedRead {
  /**
   * The read's arguments from the request as it arrives (its path parameters are not validated
   * yet: return null, and the route reads as usual, for anything but a value the route's schema
   * would take unchanged).
   */
  args(req: FastifyRequest, now: number): unknown[] | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext | null;
    /** What the route's KeyJoinedRead read for this authenticated request, with its arguments. */
    keyJoined: { read: KeyJoinedRead; args: unknown[]; row: unknown } | null;
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

/**
 * What `read` read for this request, with the arguments it read with (the route checks they are
 * its own); undefined when it made no read, and the route reads as usual.
 */
export function keyJoinedRow(
  req: FastifyRequest,
  read: KeyJoinedRead,
): { args: unknown[]; row: unknown } | undefined {
  const k = req.keyJoined;
  return k && k.read === read ? k : undefined;
}

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

/**
 * Resolves a credential string; null when unknown or revoked; throws sessionExpired. `ip`, the
 * client's address, is kept with the key's use (login addresses) when given.
 */
export async function resolveCredential(
  deps: Deps,
  credential: string,
  ip?: string,
): Promise<AuthContext | null> {
  if (credential.startsWith(SESSION_KEY_PREFIX))
    return teamAuthContext(deps, await resolveSession(deps, credential, 'cli'));
  // A scheduled job's run, acting with the key or session that made the job.
  if (credential.startsWith(SCHEDULED_RUN_PREFIX))
    return teamAuthContext(deps, await resolveScheduledRun(deps, credential));
  const [row] = await apiKeyByHash(deps.store, sha256Hex(credential));
  return teamAuthContext(deps, keyContext(deps, row, credential, ip));
}

/**
 * An API key's row as an AuthContext; null when there is none or it is revoked. A use that marks
 * the key's last_used_at (once a minute) also queues its address; neither adds a statement here.
 */
function keyContext(
  deps: Deps,
  row: KeyRow | undefined,
  credential: string,
  ip: string | undefined,
): AuthContext | null {
  if (!row || row.k_revoked !== null) return null;
  const { kid, k_team, k_kind, k_instance, k_perms, k_revoked: _r, k_used, ...user } = row;
  const now = deps.clock.now();
  if (recordKeyUse(deps, kid, k_used, now) && ip !== undefined)
    recordAddressUse(deps, user.id, clientAddress(ip), now);
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

/**
 * The API key with the route's KeyJoinedRead for its user, read together (db/credentials.ts);
 * null (and nothing kept) when the key is unknown or revoked.
 */
async function resolveKeyWithRead(
  deps: Deps,
  req: FastifyRequest,
  credential: string,
  read: KeyJoinedRead,
  args: unknown[],
): Promise<AuthContext | null> {
  const found = await keyWithRead(deps.store, sha256Hex(credential), read, args);
  const auth = await teamAuthContext(deps, keyContext(deps, found.key, credential, req.ip));
  // The joined read was made for the key's own user: a team key acts as the team's account, whose
  // route reads as usual.
  if (auth && auth.teamId === null) req.keyJoined = { read, args, row: found.joined };
  return auth;
}

export async function resolveCookie(deps: Deps, token: string): Promise<AuthContext | null> {
  return teamAuthContext(deps, await resolveSession(deps, token, 'cookie'));
}

/** Fastify onRequest hook: fills `req.auth` and enforces the route's auth config. */
export function authHook(deps: Deps) {
  return async function authenticate(req: FastifyRequest, _reply: FastifyReply): Promise<void> {
    req.auth = null;
    req.keyJoined = null;
    // req.routeOptions builds a new object at each read: read once.
    const route = req.routeOptions;
    const cfg = route.config as RouteAuthConfig | undefined;
    const mode = cfg?.auth ?? 'required';
    if (mode === 'none' || !route.url) return;
    const credential = presentedCredential(req);
    if (credential) {
      const read = cfg?.keyJoinedRead;
      const args =
        read &&
        joinsKeyReads(deps.store) &&
        !credential.startsWith(SESSION_KEY_PREFIX) &&
        !credential.startsWith(SCHEDULED_RUN_PREFIX)
          ? read.args(req, deps.clock.now())
          : null;
      req.auth = !args
        ? await resolveCredential(deps, credential, req.ip)
        : await resolveKeyWithRead(deps, req, credential, read!, args);
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
  const why = cookieWriteRefusal(req);
  if (why !== null) throw new AppError(403, 'forbidden', `Cookie-authenticated write refused: ${why}`);
}

/** Why checkCookieWrite refuses this cookie-authenticated request; null when it does not. */
export function cookieWriteRefusal(req: FastifyRequest): string | null {
  if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return null;
  if (!req.headers[CSRF_HEADER]) return `the ${CSRF_HEADER} header is required`;
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') return 'cross-site request';
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
    if (own === null || hostOf(origin) !== own) return `origin ${origin} is not this server`;
  } else if (origin === 'null') return 'opaque origin';
  return null;
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
    const m = auth.member;
    if (m && !allows(m.rolePermissions, cfg.scope, access))
      throw new AppError(
        403,
        'forbidden',
        `Your role "${m.role}" in team "${m.teamName}" lacks ${access} permission on ${cfg.scope}`,
      );
    throw new AppError(403, 'forbidden', `This API key lacks ${access} permission on ${cfg.scope}`);
  }
}

/** For handlers of `auth: 'optional'` routes and services: the caller, or 401. */
export function requireAuth(req: FastifyRequest): AuthContext {
  if (!req.auth) throw CommonErrors.authMissing('Missing API key: send Authorization: Bearer KEY');
  return req.auth;
}
