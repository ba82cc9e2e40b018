// Schemas shared by every route of the API. Each route's body, params, query and response schema
// is declared once, under src/contract/schemas/: the server validates and serialises with these
// objects, the OpenAPI document shows them, and the client's types (api-types.ts) are derived from
// them. A field the server returns but its response schema does not declare is dropped from the
// reply, so adding a field to a reply is one edit: its schema here.
// Nothing here imports from the server.

// Plain text: control characters (C0 and C1, DEL, the Unicode line and paragraph separators) and
// invisible format characters (category Cf) are refused, but for the zero-width joiner between two
// emoji (the server's http/plain-text.ts says why).
const REFUSED = '\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\p{Cf}';
const EMOJI_JOINER =
  '(?<=\\p{Extended_Pictographic}(?:\\uFE0F|\\p{Emoji_Modifier})?)\\u200D(?=\\p{Extended_Pictographic})';

/** A JSON-schema `pattern` for plain text, one line of it (Ajv compiles patterns with the `u` flag). */
export const PLAIN_TEXT_PATTERN = `^(?:[^${REFUSED}]|${EMOJI_JOINER})*$`;

/** A string schema for a stored name or label: plain text, at most `maxLength` characters. */
export const plainText = (maxLength: number, extra: Record<string, unknown> = {}) =>
  ({ type: 'string', maxLength, pattern: PLAIN_TEXT_PATTERN, ...extra }) as const;

/** `{error, msg}`: every error reply. */
export const errorSchema = {
  type: 'object',
  required: ['error', 'msg'],
  properties: { error: { type: 'string' }, msg: { type: 'string' } },
  additionalProperties: true,
} as const;

export const successSchema = {
  type: 'object',
  properties: { success: { type: 'boolean' }, msg: { type: 'string' } },
} as const;

/** A `{success, msg}` reply with the route's `more` fields after them. */
export const successReply = <const P extends Record<string, unknown>>(more: P) =>
  ({ type: 'object', properties: { ...successSchema.properties, ...more } }) as const;

/**
 * A row id in a request: a positive integer JavaScript holds exactly, which also fits the
 * databases' 64-bit ids (a larger one would be a 500 on PostgreSQL, not a 400).
 */
export const rowId = { type: 'integer', minimum: 1, maximum: 9007199254740991 } as const;

/**
 * The `owner` query parameter the clients send (`owner=me`) to the caller's own lists: "me" is its
 * only value; anything else is a 400 naming it, never a silent "the caller".
 */
export const ownerParam = {
  type: 'string',
  enum: ['me'],
  description: 'the caller: "me", the only value',
} as const;

/** An alternation of the integers 1 to `max` as decimal text (no sign, no leading zero). */
function oneTo(max: number): string {
  const s = String(max);
  const alts: string[] = [];
  if (s.length > 1) alts.push(s.length === 2 ? '[1-9]' : `[1-9][0-9]{0,${s.length - 2}}`);
  for (let i = 0; i < s.length; i++) {
    const digit = Number(s[i]);
    const lo = i === 0 ? 1 : 0;
    const rest = s.length - i - 1;
    if (rest === 0) alts.push(`${s.slice(0, i)}[${lo}-${digit}]`);
    else if (digit - 1 >= lo) alts.push(`${s.slice(0, i)}[${lo}-${digit - 1}][0-9]{${rest}}`);
  }
  return alts.join('|');
}

/** A query value counting 1 to `max` (`limit`), as text; empty: the default. */
export const countText = <const D extends string>(max: number, description: D) =>
  ({ type: 'string', pattern: `^(?:${oneTo(max)})?$`, description }) as const;

/**
 * A query value holding a JSON object (`select_filters`, `q`); empty: none. (That it parses, and
 * what its fields may be, the route checks and names in its 400.)
 */
export const jsonObjectText = <const D extends string>(description: D) =>
  ({ type: 'string', pattern: '^\\s*(?:\\{[\\s\\S]*\\}\\s*)?$', description }) as const;

/** A query value holding a JSON array (`order_by`, `select_cols`); empty: none. */
export const jsonArrayText = <const D extends string>(description: D) =>
  ({ type: 'string', pattern: '^\\s*(?:\\[[\\s\\S]*\\]\\s*)?$', description }) as const;

/** JSON's blanks, in a pattern. */
const W = '[ \\t\\n\\r]*';

/** A JSON string, in a pattern. */
export const JSON_STRING = '"(?:[^"\\\\\\u0000-\\u001f]|\\\\(?:["\\\\/bfnrt]|u[0-9a-fA-F]{4}))*"';

/**
 * A pattern for an order_by entry: {"col": one of `cols`} with an optional "dir" (asc or desc, any
 * case), in either order.
 */
export function orderEntry(cols: readonly string[]): string {
  const col = `"(?:${cols.join('|')})"`;
  const dir = '"(?:[aA][sS][cC]|[dD][eE][sS][cC])"';
  return (
    `(?:\\{${W}"col"${W}:${W}${col}${W}(?:,${W}"dir"${W}:${W}${dir}${W})?\\}` +
    `|\\{${W}"dir"${W}:${W}${dir}${W},${W}"col"${W}:${W}${col}${W}\\})`
  );
}

/**
 * A pattern for query text holding a JSON array of `min` to `max` entries matching `entry`; empty
 * text (and, with `orNull`, JSON null) is none.
 */
export function jsonListText(entry: string, min: number, max: number, orNull = false): string {
  const more = `(?:${W},${W}${entry}){${Math.max(0, min - 1)},${max - 1}}`;
  const list = min > 0 ? `${entry}${more}` : `(?:${entry}${more})?`;
  return `^(?:${W}(?:\\[${W}${list}${W}\\]${orNull ? '|null' : ''})${W})?$`;
}

/** The params of a route with one `:id`. */
export const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: rowId },
} as const;

/** Standard error replies for an authenticated route. */
export const authErrors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema } as const;

/** A field of type `type` or null, with an optional description. */
export const nullable = <const T extends string>(type: T, description?: string) =>
  ({ type: [type, 'null'], description }) as {
    readonly type: readonly [T, 'null'];
    readonly description?: string;
  };

/** A maintenance window as machines, instances and offers show it. */
export const maintenanceWindowSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    machine_id: { type: 'integer' },
    start_time: { type: 'number' },
    end_time: { type: 'number' },
    duration_hours: { type: 'number' },
    maintenance_category: { type: 'string' },
  },
} as const;
