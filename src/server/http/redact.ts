// What a log line may show of a request target. Credentials ride the query string for older
// clients (`?api_key=KEY`), and the query parser decodes parameter names before the auth hook reads
// them: `?api%5Fkey=KEY` and `?%61pi_key=KEY` authenticate exactly like `?api_key=KEY`. So a value
// is redacted by its parameter's decoded name, never by the name's spelling in the raw URL.

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
  return SECRET_PARAMS.has(decodedName.trim().toLowerCase());
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
