// What an audit row keeps of a request: the route's pattern, its path parameters, its query
// (credential parameters redacted, as in the access log) and the NAMES of its body's fields,
// never their values: bodies carry passwords, 2FA codes, secret values and keys. Pure functions.
import { isIP } from 'node:net';
import { isSecretParam, REDACTED } from '../../http/redact.js';

/** The most path parameters, query parameters and body field names kept, each. */
export const MAX_ARGS = 32;
/** Longer values and names are cut to this many characters (with "…"). */
export const MAX_ARG_CHARS = 100;

export interface AuditArgs {
  path?: Record<string, string>;
  query?: Record<string, string | string[]>;
  body?: string[];
}

const cut = (s: string): string => (s.length > MAX_ARG_CHARS ? `${s.slice(0, MAX_ARG_CHARS)}…` : s);

/**
 * A route as Fastify declares it (`/api/v0/instances/:id`) in the published form: parameters in
 * braces, a regular expression after a parameter dropped, and a trailing slash
 * (`/api/v0/instances/{id}/`).
 */
export function routePattern(url: string): string {
  const p = url.replace(/:([A-Za-z0-9_]+)(\([^)]*\))?/g, '{$1}');
  return p.endsWith('/') ? p : `${p}/`;
}

/** The path parameters, each value cut to MAX_ARG_CHARS. */
export function pathArgs(params: unknown): Record<string, string> | undefined {
  if (!params || typeof params !== 'object') return undefined;
  const out: Record<string, string> = {};
  let n = 0;
  for (const [k, v] of Object.entries(params as Record<string, unknown>)) {
    if (n++ >= MAX_ARGS) break;
    out[cut(k)] = cut(String(v));
  }
  return n > 0 ? out : undefined;
}

/**
 * The query string of a URL as sent (not as a route's schema coerced it): a repeated parameter
 * gives a list; a credential parameter (by its decoded name, as the access log redacts it) is
 * `[redacted]`.
 */
export function queryArgs(url: string): Record<string, string | string[]> | undefined {
  const q = url.indexOf('?');
  if (q === -1) return undefined;
  const hash = url.indexOf('#', q);
  const params = new URLSearchParams(url.slice(q + 1, hash === -1 ? undefined : hash));
  const out: Record<string, string | string[]> = {};
  let names = 0;
  for (const [rawName, rawValue] of params) {
    const name = cut(rawName);
    const value = isSecretParam(rawName) ? REDACTED : cut(rawValue);
    const had = out[name];
    if (had === undefined) {
      if (names++ >= MAX_ARGS) continue;
      out[name] = value;
    } else if (Array.isArray(had)) {
      if (had.length < MAX_ARGS) had.push(value);
    } else out[name] = [had, value];
  }
  return names > 0 ? out : undefined;
}

/**
 * The names of a JSON body's top-level fields (of each object of an array body), never a value;
 * undefined for no body or one that has no fields.
 */
export function bodyFieldNames(body: unknown): string[] | undefined {
  const names = new Set<string>();
  const add = (o: unknown) => {
    if (!o || typeof o !== 'object' || Array.isArray(o)) return;
    for (const k of Object.keys(o)) {
      if (names.size >= MAX_ARGS) return;
      names.add(cut(k));
    }
  };
  if (Array.isArray(body)) for (const item of body) add(item);
  else add(body);
  return names.size > 0 ? [...names] : undefined;
}

export function auditArgs(req: { params: unknown; url: string; body: unknown }): AuditArgs {
  const args: AuditArgs = {};
  const path = pathArgs(req.params);
  if (path) args.path = path;
  const query = queryArgs(req.url);
  if (query) args.query = query;
  const body = bodyFieldNames(req.body);
  if (body) args.body = body;
  return args;
}

/**
 * The client address as stored: an IPv4 address a dual-stack socket reports in its IPv6 form
 * (`::ffff:203.0.113.7`) as plain IPv4; null for anything that is not an IP address.
 */
export function clientAddress(ip: string | undefined): string | null {
  if (!ip) return null;
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  const a = v4 ? v4[1]! : ip;
  return isIP(a) !== 0 ? a.toLowerCase() : null;
}
