// What a log line may show of a request target. Credentials ride the query string for older
// clients (`?api_key=KEY`), and the query parser decodes parameter names before the auth hook reads
// them: `?api%5Fkey=KEY` and `?%61pi_key=KEY` authenticate exactly like `?api_key=KEY`. So a value
// is redacted by its parameter's decoded name, never by the name's spelling in the raw URL, and
// with any bracketed suffix (`api_key[]`, `api_key[0]`) taken off, as array-minded query builders
// write it: such a name authenticates nothing, but the value is still the caller's key. A route
// whose path itself holds a secret (an unguessable result URL) names those path parameters in
// its `secretParams`, and the line shows its pattern with them redacted.

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Path parameters whose values are secrets: never shown in a log line. */
    secretParams?: readonly string[];
  }
}

/** Query parameters whose values are credentials or one-time codes. */
const SECRET_PARAMS = new Set([
  'api_key',
  'secret',
  'code',
  'backup_code',
  'token',
  'session_key',
  'tfa_secret',
]);

export const REDACTED = '[redacted]';

function decodeName(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    // A malformed escape: the query parser keeps such a name undecoded too.
    return raw;
  }
}

/** True when a query parameter, by its decoded name, carries a credential or a one-time code. */
export function isSecretParam(decodedName: string): boolean {
  return SECRET_PARAMS.has(
    decodedName
      .trim()
      .replace(/(\[[^\]]*\])+$/, '')
      .toLowerCase(),
  );
}

/** The URL with the value of every credential parameter replaced by `[redacted]`. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const hash = url.indexOf('#', q);
  const query = url.slice(q + 1, hash === -1 ? undefined : hash);
  const parts = query.split('&').map((pair) => {
    const eq = pair.indexOf('=');
    const name = eq === -1 ? pair : pair.slice(0, eq);
    if (!isSecretParam(decodeName(name))) return pair;
    return `${name}=${REDACTED}`;
  });
  return url.slice(0, q + 1) + parts.join('&') + (hash === -1 ? '' : url.slice(hash));
}

/** The parts of a request a log line's target is made of (Fastify's request has them all). */
export interface LoggedRequest {
  url: string;
  params?: unknown;
  routeOptions?: { url?: string; config?: { secretParams?: readonly string[] } };
}

/**
 * The request target as a log line shows it: `redactUrl`, and for a route with `secretParams`
 * its path rebuilt from the route's pattern with those parameters `[redacted]`.
 */
export function loggedUrl(
  req: LoggedRequest,
  route: LoggedRequest['routeOptions'] = req.routeOptions,
): string {
  const secret = route?.config?.secretParams;
  const pattern = route?.url;
  if (!secret?.length || !pattern) return redactUrl(req.url);
  const params = (req.params ?? {}) as Record<string, unknown>;
  const path = pattern.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) =>
    secret.includes(name)
      ? REDACTED
      : encodeURIComponent(typeof params[name] === 'string' ? params[name] : ''),
  );
  const q = req.url.indexOf('?');
  const slash = (q === -1 ? req.url : req.url.slice(0, q)).endsWith('/') && !path.endsWith('/') ? '/' : '';
  return q === -1 ? path + slash : path + slash + redactUrl(req.url.slice(q));
}
