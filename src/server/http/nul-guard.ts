// NUL characters in request text (found by the OpenAPI fuzzer: a login e-mail of "\u0000" was a
// 500 on PostgreSQL, which cannot store U+0000 in text and fails the statement with SQLSTATE
// 22021, while SQLite stored it). No field of this API has a use for U+0000, so it is refused as
// bad input on both databases, before anything reads or writes: in a JSON body (any string, key
// or value), in the URL (%00 in the path or the query, api_key included), and, for anything that
// still reaches PostgreSQL some other way, the database's own refusal becomes the same 400.
import { AppError } from '../errors.js';

export const NUL_MESSAGE = 'Text must not contain NUL characters (U+0000)';

export const nulInText = (): AppError => new AppError(400, 'bad_request', NUL_MESSAGE);

/** True when a parsed JSON value holds U+0000 in any string, object keys included. */
export function holdsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (Array.isArray(value)) return value.some(holdsNul);
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) if (k.includes('\u0000') || holdsNul(v)) return true;
  }
  return false;
}

/**
 * A JSON body's text can only carry U+0000 as the escape `\u0000` (a raw control character is
 * malformed JSON), so bodies without that text are not walked.
 */
export function jsonBodyHoldsNul(raw: string, parsed: unknown): boolean {
  return raw.includes('\\u0000') && holdsNul(parsed);
}

/** %00 anywhere in a request target (path or query), in either case. */
export const urlHoldsNul = (url: string): boolean => url.includes('%00');

/** PostgreSQL's refusal of U+0000 in a text value (SQLSTATE 22021, "0x00"). */
export function isPgNulError(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return !!e && e.code === '22021' && typeof e.message === 'string' && e.message.includes('0x00');
}
