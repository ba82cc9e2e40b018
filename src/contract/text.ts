// The text of a value read from JSON, a query string or a database row, for messages and keys.
// Scalars as String() writes them; anything else as JSON, never "[object Object]".
export function textOf(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (v === null || v === undefined) return '';
  return JSON.stringify(v) ?? '';
}

/**
 * A yes/no value as clients send it: a JSON boolean, 1 or 0, or the text `true`/`false`/`1`/`0`
 * (any case, surrounding blanks ignored). Null when it is none of these.
 */
export function booleanOf(v: unknown): boolean | null {
  if (typeof v === 'boolean') return v;
  if (v === 1 || v === 0) return v === 1;
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (s === 'true' || s === '1') return true;
    if (s === 'false' || s === '0') return false;
  }
  return null;
}
