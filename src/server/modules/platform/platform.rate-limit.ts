// Rate limits (docs/platform.md): a fixed-window counter per route family and per caller (the
// account behind the credential, or the client IP when anonymous), kept in the database.
//
// Why the database and not Redis: it is the one thing every `serve` process already shares, on
// SQLite and on PostgreSQL, so limits hold across processes with no extra service to run, and a
// limit survives a restart. Why a fixed window: one atomic upsert per limited request
// (INSERT … ON CONFLICT DO UPDATE SET hits = hits + 1 RETURNING hits) is decided by the database,
// never read-then-write, so N processes racing on one bucket count exactly N hits. Only the four
// abuse-prone families are limited; polling and other reads cost no write.
//
// Where the counters live: a counter may lose its last hits on a power loss, so it must not pay
// for the durability of an acknowledged write. On PostgreSQL the table is UNLOGGED (migration
// 008: no WAL, emptied after a crash). On a SQLite file it is in the store's scratch database
// beside the main file (synchronous=OFF, its own lock): in the main file every search would wait
// for an fsync and for any open write transaction.
//
// Headers: RateLimit-Policy and RateLimit as in draft-ietf-httpapi-ratelimit-headers (structured
// fields: `"search";q=120;w=60` and `"search";r=119;t=42`), and Retry-After (RFC 9110) on 429.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../../deps.types.js';
import type { Store } from '../../db/connection.js';
import type { RateLimitFamily, RateLimitRule } from '../../config.js';
import { rateLimited } from './platform.errors.js';

interface FamilyInfo {
  /** Policy name in the headers. */
  name: string;
  /** Noun for the 429 message. */
  what: string;
}

export const FAMILIES: Record<RateLimitFamily, FamilyInfo> = {
  codeSends: { name: 'code_sends', what: 'verification codes requested' },
  logins: { name: 'logins', what: 'login attempts' },
  creates: { name: 'creates', what: 'instance creations' },
  search: { name: 'search', what: 'offer searches' },
};

// Route patterns with their parameters collapsed to ':' and no trailing slash.
const ROUTES: [RegExp, RegExp, RateLimitFamily][] = [
  // Sends of a 2FA code by SMS or e-mail, including the deprecated aliases.
  [/^POST$/, /^\/api\/v0\/tfa\/(sms|sms\/resend|email|test|resend|authorize-new-method)$/, 'codeSends'],
  // E-mailed links: sign-up and password reset (anonymous: per client address).
  [/^POST$/, /^\/api\/v0\/users\/(signup|password-reset)$/, 'codeSends'],
  // Password login and the 2FA login that completes it.
  [/^POST$/, /^\/api\/v0\/(users\/login|tfa)$/, 'logins'],
  // Single sign-on's two legs (anonymous: per client address); each start records a state.
  [/^GET$/, /^\/api\/v0\/auth\/oidc\/:\/(start|callback)$/, 'logins'],
  [/^(PUT|POST)$/, /^\/api\/v0\/asks\/:$/, 'creates'],
  [/^(POST|GET)$/, /^\/api\/v0\/bundles$/, 'search'],
  // The GPU name list answers anonymous callers, so it is limited per client address.
  [/^GET$/, /^\/api\/v0\/gpu_names\/unique$/, 'search'],
];

/** The family a route belongs to, or null when it is not limited. Pure. */
export function familyOf(method: string, routeUrl: string | undefined): RateLimitFamily | null {
  if (!routeUrl) return null;
  const pattern = routeUrl.replace(/:[^/]+/g, ':').replace(/\/+$/, '');
  for (const [m, p, family] of ROUTES) if (m.test(method) && p.test(pattern)) return family;
  return null;
}

export interface WindowState {
  windowStart: number;
  /** Seconds until the window ends (at least 1). */
  resetS: number;
}

/** The fixed window containing `now`. Pure. */
export function windowAt(now: number, rule: RateLimitRule): WindowState {
  const ms = rule.windowS * 1000;
  const windowStart = Math.floor(now / ms) * ms;
  return { windowStart, resetS: Math.max(1, Math.ceil((windowStart + ms - now) / 1000)) };
}

/** Header values for a family after `hits` requests in the window. Pure. */
export function rateLimitHeaders(
  family: RateLimitFamily,
  rule: RateLimitRule,
  hits: number,
  resetS: number,
): Record<string, string> {
  const name = FAMILIES[family].name;
  return {
    'ratelimit-policy': `"${name}";q=${rule.limit};w=${rule.windowS}`,
    ratelimit: `"${name}";r=${Math.max(0, rule.limit - hits)};t=${resetS}`,
  };
}

/** Where a store keeps its counters (see the head of this file). */
export interface Counters {
  /** Counts one request in the bucket's window; returns the window's hits including this one. */
  hit(bucket: string, windowStart: number, expiresAt: number): Promise<number>;
  /** Deletes windows that have ended. */
  sweep(now: number): Promise<number>;
}

/** The counters of a store, in its scratch state (Store.scratch). Built once per process (deps.ts). */
export function makeCounters(store: Store): Counters {
  const scratch = store.scratch;
  // Where the scratch state is a side database, this table is its whole schema.
  scratch.ensure(`CREATE TABLE IF NOT EXISTS rate_limit_counters (
    bucket TEXT NOT NULL, window_start INTEGER NOT NULL, hits INTEGER NOT NULL, expires_at INTEGER NOT NULL,
    PRIMARY KEY (bucket, window_start)) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS rate_limit_counters_expires_idx ON rate_limit_counters (expires_at);`);
  const p = (n: number) => store.dialect.param(n);
  // One atomic statement: concurrent requests (any process) each get a distinct count. On
  // PostgreSQL it runs as a named prepared statement: parsed and planned on every search, it made
  // a search cost about 15 % more CPU, in the server and in PostgreSQL alike.
  const upsert = `INSERT INTO rate_limit_counters (bucket, window_start, hits, expires_at) VALUES (${p(1)}, ${p(2)}, 1, ${p(3)})
    ON CONFLICT (bucket, window_start) DO UPDATE SET hits = rate_limit_counters.hits + 1 RETURNING hits`;
  const sweep = `DELETE FROM rate_limit_counters WHERE expires_at < ${p(1)} RETURNING 1 AS n`;
  return {
    hit: async (bucket, windowStart, expiresAt) =>
      Number((await scratch.run<{ hits: number }>(upsert, [bucket, windowStart, expiresAt]))[0]!.hits),
    sweep: async (now) => (await scratch.run(sweep, [now])).length,
  };
}

const SWEEP_EVERY_MS = 60_000;

/** The onRequest hook (registered after authentication, so the caller is known). */
export function rateLimitHook(deps: Deps) {
  let lastSweep = 0;
  const counters = deps.rateLimitCounters;
  return async function rateLimit(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (!deps.config.rateLimits.enabled) return;
    const family = familyOf(req.method, req.routeOptions.url);
    if (!family) return;
    const rule = deps.config.rateLimits[family];
    const now = deps.clock.now();
    const { windowStart, resetS } = windowAt(now, rule);
    const who = req.auth ? `u:${req.auth.user.id}` : `ip:${req.ip}`;
    let hits: number;
    try {
      hits = await counters.hit(
        `${FAMILIES[family].name}:${who}`,
        windowStart,
        windowStart + rule.windowS * 1000,
      );
    } catch (err) {
      // Fail open: an unreachable database fails the request itself with a clear error; the
      // limiter must not turn a counting hiccup into a refusal.
      req.log.warn({ err }, 'rate limit counter unavailable');
      return;
    }
    if (now - lastSweep > SWEEP_EVERY_MS) {
      lastSweep = now;
      counters.sweep(now).catch((err: unknown) => req.log.warn({ err }, 'rate limit sweep failed'));
    }
    reply.headers(rateLimitHeaders(family, rule, hits, resetS));
    if (hits > rule.limit) {
      deps.metrics.rateLimited.inc({ family: FAMILIES[family].name });
      throw rateLimited(FAMILIES[family].what, resetS);
    }
  };
}
