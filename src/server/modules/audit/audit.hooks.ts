// Which requests the audit log records, written after the reply (docs/security.md, "The audit log"):
// - every POST, PUT, PATCH and DELETE whose caller authenticated (API key, instance key, CLI
//   session key, browser session), whatever its status: a refused write is worth seeing too;
// - sign-ins on an existing account: the password step (`POST /users/login/`, found by its
//   e-mail) and the 2FA step made with the login secret alone (`POST /tfa/`, found by the
//   secret's challenge), success or failure. A 2FA step made with an API key is an
//   authenticated request like any other. A sign-in answered 429 (locked account or method, rate
//   limit) checked nothing and is not recorded: anyone could otherwise flood an owner's log;
// - not: reads (GET, HEAD: the hook is not even installed on their routes, so the instance
//   poll pays nothing), requests whose credential was refused (no account is known), the host
//   agent's protocol (machine traffic, not a user's action), routes whose permission is a read
//   (`access: 'read'`: a search sent as POST), and cookie writes refused as cross-site (another
//   site's doing).
// The row is written after the reply has gone (onResponse): it adds no latency, and a failure
// to write it is a warning in the log that never changes the reply. A process that dies between
// an action's commit and its audit write loses that row.
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onResponseHookHandler,
  RouteOptions,
} from 'fastify';
import type { Deps } from '../../deps.types.js';
import { cookieWriteRefusal, SESSION_COOKIE } from '../../http/auth.js';
import { type AuthContext } from '../../identity.js';
import { sha256Hex } from '../../crypto.js';
import { AGENT_API_PREFIX } from '../../../contract/agent-protocol.js';
import type { AuditCredential } from '../../db/tables/audit.js';
import { assertNever } from '../../errors.js';
import { auditArgs, clientAddress, routePattern } from './audit.args.js';
import { flushAddressUses } from './audit.addresses.js';
import { recordAudit, type AuditEntry } from './audit.service.js';
import { userIdByEmail, userIdByLoginSecret } from './audit.repo.js';

/**
 * In a sign-in route's `config`: which step it is; the hook finds the account from its body.
 */
export type AuditRouteMode = 'password-login' | 'tfa-login';

declare module 'fastify' {
  interface FastifyContextConfig {
    audit?: AuditRouteMode;
  }
}

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

function credentialOf(auth: AuthContext): AuditCredential {
  switch (auth.via) {
    case 'api_key':
      return 'api_key';
    case 'instance_key':
      return 'instance_key';
    case 'session':
      return 'session_key';
    case 'cookie':
      return 'browser_session';
    default:
      return assertNever(auth.via, 'via');
  }
}

const bodyString = (req: FastifyRequest, field: string): string | null => {
  const v = (req.body as Record<string, unknown> | null | undefined)?.[field];
  return typeof v === 'string' && v.length > 0 ? v : null;
};

/** True when the reply set the session cookie: the sign-in completed. */
function setSession(reply: FastifyReply): boolean {
  const h = reply.getHeader('set-cookie');
  const all = Array.isArray(h) ? h : typeof h === 'string' ? [h] : [];
  return all.some((c) => c.startsWith(`${SESSION_COOKIE}=`) && !c.startsWith(`${SESSION_COOKIE}=;`));
}

/** The audit row of a finished request, or null when it gets none; async only for sign-ins. */
async function entryFor(deps: Deps, req: FastifyRequest, reply: FastifyReply): Promise<AuditEntry | null> {
  if (!WRITES.has(req.method) || !req.routeOptions.url) return null;
  const base = {
    at: deps.clock.now(),
    ip: clientAddress(req.ip),
    method: req.method,
    route: routePattern(req.routeOptions.url),
    status: reply.statusCode,
    args: auditArgs(req),
  };
  const auth = req.auth;
  if (auth) {
    if (auth.via === 'cookie' && cookieWriteRefusal(req) !== null) return null;
    return {
      ...base,
      userId: auth.user.id,
      // A team's row names the member who acted for it (docs/teams.md).
      memberId: auth.member?.userId ?? null,
      apiKeyId: auth.via === 'api_key' || auth.via === 'instance_key' ? auth.keyId : null,
      credential: credentialOf(auth),
      usedAccount: true,
    };
  }
  const mode = req.routeOptions.config.audit;
  if (!mode || reply.statusCode === 429) return null;
  let userId: number | undefined;
  let credential: AuditCredential;
  if (mode === 'password-login') {
    const email = bodyString(req, 'email');
    userId = email === null ? undefined : await userIdByEmail(deps.db, email);
    credential = 'password';
  } else {
    const secret = bodyString(req, 'secret');
    userId = secret === null ? undefined : await userIdByLoginSecret(deps.db, sha256Hex(secret));
    credential = 'login_secret';
  }
  if (userId === undefined) return null;
  return {
    ...base,
    userId,
    apiKeyId: null,
    credential,
    usedAccount: reply.statusCode === 200 && setSession(reply),
  };
}

/** The route-level onResponse hook: schedules the write and returns at once. */
export function auditHook(deps: Deps): onResponseHookHandler {
  return function audit(req, reply, done) {
    const p: Promise<void> = (async () => {
      const e = await entryFor(deps, req, reply);
      if (e) await recordAudit(deps, e);
    })()
      .catch((err: unknown) => {
        // The message only: the row holds no secret, but a driver's error could quote a value.
        deps.log.warn(
          {
            err: (err as Error)?.message ?? String(err),
            method: req.method,
            route: req.routeOptions.url ?? null,
            user: req.auth?.user.id ?? null,
          },
          'writing the audit log failed',
        );
      })
      .finally(() => deps.auditWrites.pending.delete(p));
    deps.auditWrites.pending.add(p);
    done();
  };
}

/** True when a route may write audit rows: a write method, not the agent's, not declared a read. */
export function audited(route: Pick<RouteOptions, 'method' | 'url' | 'config'>): boolean {
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  if (!methods.some((m) => WRITES.has(m))) return false;
  if (route.url.startsWith(AGENT_API_PREFIX)) return false;
  return (route.config as { access?: string } | undefined)?.access !== 'read';
}

/**
 * Installs the hook on every route that may write audit rows (call before the routes are
 * declared), and makes the app's close wait for pending writes and queued addresses.
 */
export function installAuditHooks(app: FastifyInstance, deps: Deps): void {
  const hook = auditHook(deps);
  app.addHook('onRoute', (route) => {
    if (!audited(route)) return;
    const own =
      route.onResponse === undefined
        ? []
        : Array.isArray(route.onResponse)
          ? route.onResponse
          : [route.onResponse];
    route.onResponse = [...own, hook];
  });
  app.addHook('onClose', async () => {
    await Promise.all([...deps.auditWrites.pending]);
    await flushAddressUses(deps);
  });
}
