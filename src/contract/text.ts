// The text of a value read from JSON, a query string or a database row, for messages and keys.
// Scalars as String() writes them; anything else as JSON, never "[object Object]".
export function textOf(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (v === null || v === undefined) return '';
  return JSON.stringify(v) ?? '';
}
