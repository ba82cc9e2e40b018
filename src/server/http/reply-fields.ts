// A reply field its response schema does not declare is dropped from the JSON without a word (the
// serialiser writes declared fields only). undeclaredFields names those fields; with
// OPENRIG_CHECK_REPLIES=1 in the environment, registerRoutes (route.ts) checks every reply a
// route's handler returns and answers 500 naming them, so a test that reaches the route fails.
// Off, it adds nothing to a request.

type Schema = {
  type?: unknown;
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
};

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date) && !Buffer.isBuffer(v);

/**
 * The paths (`$.instances[0].foo`) of the fields of `value` that `schema` does not declare: not
 * among its properties, where it allows no other properties. Fields whose value is undefined are
 * never written, so they are not counted.
 */
export function undeclaredFields(schema: unknown, value: unknown, path = '$'): string[] {
  const s = schema as Schema | undefined;
  if (!s || typeof s !== 'object') return [];
  if (Array.isArray(value)) {
    if (!s.items) return [];
    return value.flatMap((v, i) => undeclaredFields(s.items, v, `${path}[${i}]`));
  }
  if (!isPlainObject(value)) return [];
  const out: string[] = [];
  const props = s.properties ?? {};
  for (const [k, v] of Object.entries(value)) {
    if (v === undefined) continue;
    if (Object.hasOwn(props, k)) out.push(...undeclaredFields(props[k], v, `${path}.${k}`));
    else if (s.additionalProperties === true) continue;
    else if (s.additionalProperties && typeof s.additionalProperties === 'object')
      out.push(...undeclaredFields(s.additionalProperties, v, `${path}.${k}`));
    else out.push(`${path}.${k}`);
  }
  return out;
}

/** Whether registerRoutes checks replies (read once, when the routes are registered). */
export const checkingReplies = (): boolean => process.env.OPENRIG_CHECK_REPLIES === '1';

/** The reply schema for a status: its own, else its class's (`2XX`), else none. */
export function responseSchemaFor(response: Record<string, unknown> | undefined, status: number): unknown {
  if (!response) return undefined;
  return response[status] ?? response[`${String(status)[0]}XX`] ?? response[`${String(status)[0]}xx`];
}
