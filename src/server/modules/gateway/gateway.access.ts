// Who may reach an instance's port through the gateway (docs/gateway.md, "Access"): anyone when
// the renter marked the port public; else only the instance's owner, shown by one of
// - a signed link's `openrig_token` query parameter (gateway.tokens.ts), which a GET trades for a
//   cookie scoped to that instance (path `/i/ID/`, or the port's own host) and a redirect to the
//   same URL without it;
// - that cookie (`openrig_gw`);
// - the owner's API key or CLI session key as `Authorization: Bearer` (an instance's own key too);
// - the console's session cookie, on the server's own host (path URLs).
// Anyone else: 401 without a credential, 403 with someone else's.
import type { IncomingMessage } from 'node:http';
import type { Deps } from '../../deps.types.js';
import { resolveCookie, resolveCredential, SESSION_COOKIE } from '../../http/auth.js';
import { API_KEY_PREFIX, INSTANCE_KEY_PREFIX, SESSION_KEY_PREFIX, type AuthContext } from '../../identity.js';
import { portalOf, type PortalView } from './gateway.portal.js';
import { gatewayInstance, type GatewayInstanceRow } from './gateway.repo.js';
import { GatewayError } from './gateway.tunnels.js';
import { makeToken, readToken } from './gateway.tokens.js';

/** The query parameter of a signed link (not `token`, which apps such as Jupyter use themselves). */
export const TOKEN_PARAM = 'openrig_token';
/** The cookie a signed link sets. */
export const GATEWAY_COOKIE = 'openrig_gw';
/** A gateway request's instance row is read again after this long (in each process). */
const INSTANCE_CACHE_MS = 2_000;

/** Where a gateway request goes. */
export interface Target {
  instanceId: number;
  port: number;
  /** 'path': /i/ID/PORT/…; 'host': ID-PORT.DOMAIN. */
  mode: 'path' | 'host';
  /** The request's path after /i/ID/PORT (path mode), or whole (host mode); with its query. */
  rest: string;
}

const PATH_RE = /^\/i\/(\d{1,12})\/(\d{1,5})(\/[^?]*)?(\?.*)?$/;
const HOST_RE = /^(\d{1,12})-(\d{1,5})$/;

/** The gateway target a request names, by path or (with a gateway domain) by Host; else null. */
export function targetOf(req: IncomingMessage, domain: string | null): Target | null {
  const url = req.url ?? '/';
  if (domain !== null) {
    const host = String(req.headers.host ?? '')
      .toLowerCase()
      .replace(/:\d+$/, '');
    if (host.endsWith(`.${domain}`)) {
      const m = HOST_RE.exec(host.slice(0, -domain.length - 1));
      if (m) return { instanceId: Number(m[1]), port: Number(m[2]), mode: 'host', rest: url };
    }
  }
  if (!url.startsWith('/i/')) return null;
  const m = PATH_RE.exec(url);
  if (!m) return null;
  return { instanceId: Number(m[1]), port: Number(m[2]), mode: 'path', rest: `${m[3] ?? ''}${m[4] ?? ''}` };
}

/** A cookie header's values of `name` (a browser may send several, one per path). */
export function cookieValues(header: string | undefined, name: string): string[] {
  if (!header) return [];
  const out: string[] = [];
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) {
      try {
        out.push(decodeURIComponent(part.slice(eq + 1).trim()));
      } catch {
        /* not ours */
      }
    }
  }
  return out;
}

/** An openrig credential in `Authorization: Bearer`; null for anything else (the app's own). */
export function openrigBearer(req: IncomingMessage): string | null {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(String(req.headers.authorization ?? ''));
  if (!m) return null;
  const k = m[1]!;
  return k.startsWith(API_KEY_PREFIX) || k.startsWith(SESSION_KEY_PREFIX) || k.startsWith(INSTANCE_KEY_PREFIX)
    ? k
    : null;
}

export interface Admitted {
  inst: GatewayInstanceRow;
  entry: PortalView;
  /** A link's token was presented: the cookie to set (its value), and the URL to redirect to for a GET. */
  fromLink: { cookie: string; cleanRest: string } | null;
}

export class GatewayAccess {
  private readonly cache = new Map<number, { row: GatewayInstanceRow | undefined; at: number }>();

  constructor(private readonly deps: Deps) {}

  private async instance(id: number): Promise<GatewayInstanceRow | undefined> {
    const now = this.deps.clock.now();
    const hit = this.cache.get(id);
    if (hit && now - hit.at < INSTANCE_CACHE_MS) return hit.row;
    const row = await gatewayInstance(this.deps.db, id);
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(id, { row, at: now });
    return row;
  }

  /** The cookie value for the owner of `inst`: a token that lives OPENRIG_GATEWAY_COOKIE_TTL_S. */
  cookieToken(inst: GatewayInstanceRow): string {
    const now = this.deps.clock.now();
    return makeToken(this.deps.config.secretKey, {
      i: inst.id,
      u: inst.user_id,
      e: now + this.deps.config.gateway.cookieTtlS * 1000,
    });
  }

  /** A signed link's token for the owner of `inst` (OPENRIG_GATEWAY_LINK_TTL_S). */
  linkToken(inst: { id: number; user_id: number }): { token: string; expiresAt: number } {
    const e = this.deps.clock.now() + this.deps.config.gateway.linkTtlS * 1000;
    return { token: makeToken(this.deps.config.secretKey, { i: inst.id, u: inst.user_id, e }), expiresAt: e };
  }

  /** Admits the request to its target, or throws the GatewayError that refuses it. */
  async admit(req: IncomingMessage, t: Target): Promise<Admitted> {
    const inst = await this.instance(t.instanceId);
    if (!inst || inst.destroyed_at !== null)
      throw new GatewayError(404, 'not_found', `No instance ${t.instanceId}`);
    let env: Record<string, string> = {};
    try {
      env = JSON.parse(inst.env) as Record<string, string>;
    } catch {
      env = {};
    }
    const entry = portalOf(inst.id, inst.portal, env).find((p) => p.port === t.port);
    if (!entry)
      throw new GatewayError(
        404,
        'not_found',
        `Port ${t.port} of instance ${t.instanceId} is not served through the gateway (name it in the create body's portal, or request it with -p)`,
      );
    if (inst.intended_status !== 'running' || inst.actual_status !== 'running')
      throw new GatewayError(503, 'instance_not_running', `Instance ${t.instanceId} is not running`);
    const who = await this.owner(req, t, inst);
    if (entry.public || who.ok) return { inst, entry, fromLink: who.ok ? who.fromLink : null };
    throw who.refusal;
  }

  private async owner(
    req: IncomingMessage,
    t: Target,
    inst: GatewayInstanceRow,
  ): Promise<{ ok: true; fromLink: Admitted['fromLink'] } | { ok: false; refusal: GatewayError }> {
    const now = this.deps.clock.now();
    const key = this.deps.config.secretKey;
    const mine = (c: { i: number; u: number } | null) =>
      c !== null && c.i === inst.id && c.u === inst.user_id;
    // A signed link.
    const q = t.rest.indexOf('?');
    if (q >= 0) {
      const params = new URLSearchParams(t.rest.slice(q + 1));
      const token = params.get(TOKEN_PARAM);
      if (token !== null) {
        if (!mine(readToken(key, token, now)))
          return {
            ok: false,
            refusal: new GatewayError(
              403,
              'forbidden',
              'The gateway link is expired or not for this instance',
            ),
          };
        params.delete(TOKEN_PARAM);
        const qs = params.toString();
        return {
          ok: true,
          fromLink: {
            cookie: this.cookieToken(inst),
            cleanRest: `${t.rest.slice(0, q)}${qs ? `?${qs}` : ''}`,
          },
        };
      }
    }
    // The cookie a link set.
    for (const v of cookieValues(req.headers.cookie, GATEWAY_COOKIE))
      if (mine(readToken(key, v, now))) return { ok: true, fromLink: null };
    // The owner's key.
    const bearer = openrigBearer(req);
    let someone: AuthContext | null = null;
    if (bearer !== null) {
      try {
        someone = await resolveCredential(this.deps, bearer);
      } catch {
        someone = null;
      }
      if (!someone)
        return { ok: false, refusal: new GatewayError(401, 'auth_invalid', 'The API key is not valid') };
    } else if (t.mode === 'path') {
      // The console's session, on the server's own host.
      for (const v of cookieValues(req.headers.cookie, SESSION_COOKIE)) {
        someone = await resolveCookie(this.deps, v).catch(() => null);
        if (someone) break;
      }
    }
    if (someone) {
      if (someone.user.id === inst.user_id && (someone.instanceId === null || someone.instanceId === inst.id))
        return { ok: true, fromLink: null };
      return {
        ok: false,
        refusal: new GatewayError(
          403,
          'forbidden',
          `Instance ${inst.id}'s port ${t.port} is its owner's only`,
        ),
      };
    }
    return {
      ok: false,
      refusal: new GatewayError(
        401,
        'auth_required',
        `Instance ${inst.id}'s port ${t.port} is its owner's only: open it from the console, with a signed link (openrig gateway-link), or with Authorization: Bearer API_KEY`,
      ),
    };
  }
}
