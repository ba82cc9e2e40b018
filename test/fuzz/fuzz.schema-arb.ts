// fast-check arbitraries from the JSON schemas of the OpenAPI document: values that satisfy a
// schema (so requests reach the handlers), and hostile ones (bad types, huge values, unknown
// fields) so validation and handlers are both exercised.
import fc from 'fast-check';

export type Schema = Record<string, any>;

/** Inlines `#/components/schemas/X` references (the document has no recursive schemas). */
export function deref(schema: unknown, doc: Schema, depth = 0): any {
  if (depth > 20 || schema === null || typeof schema !== 'object') return schema;
  if (Array.isArray(schema)) return schema.map((s) => deref(s, doc, depth + 1));
  const s = schema as Schema;
  if (typeof s.$ref === 'string' && s.$ref.startsWith('#/')) {
    const target = s.$ref
      .slice(2)
      .split('/')
      .reduce((o: any, k: string) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    return deref(target, doc, depth + 1);
  }
  const out: Schema = {};
  for (const [k, v] of Object.entries(s)) out[k] = deref(v, doc, depth + 1);
  return out;
}

const HUGE = 'x'.repeat(100_000);

/** Values no schema expects: wrong types, extremes, odd strings. */
export const hostile: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(
    null,
    true,
    false,
    0,
    -1,
    1.5,
    1e308,
    -1e308,
    2 ** 53 + 2,
    Number.MAX_SAFE_INTEGER,
    '',
    ' ',
    '0',
    '-1',
    '1e3',
    'NaN',
    'null',
    '９',
    '\u0000',
    '<script>alert(1)</script>',
    "' or 1=1 --",
    '../../etc/passwd',
    '9'.repeat(400),
    HUGE,
    [],
    {},
    [1, 2, 3],
    { __proto__: { admin: true } },
    { constructor: { prototype: { x: 1 } } },
    '+15555550123',
    'RTX 4090',
    '123456',
    'AAAA-BBBB-CCCC',
  ),
  fc.string({ maxLength: 50 }),
  fc.integer(),
  fc.double(),
  fc.jsonValue({ maxDepth: 3 }),
);

/** A value that (mostly) satisfies `schema`. */
export function valid(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || typeof schema !== 'object' || depth > 5) return fc.jsonValue({ maxDepth: 2 });
  if (Array.isArray(schema.enum) && schema.enum.length > 0)
    return fc.constantFrom(...(schema.enum as unknown[]));
  if (schema.const !== undefined) return fc.constant(schema.const);
  const alts = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (Array.isArray(alts) && alts.length > 0) return fc.oneof(...alts.map((s) => valid(s, depth + 1)));
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0)
    return valid(Object.assign({}, ...schema.allOf), depth + 1);
  const types: string[] = Array.isArray(schema.type)
    ? schema.type
    : schema.type
      ? [schema.type]
      : schema.properties
        ? ['object']
        : [];
  if (types.length > 1) return fc.oneof(...types.map((t) => valid({ ...schema, type: t }, depth + 1)));
  switch (types[0]) {
    case 'string': {
      if (schema.format === 'email') return fc.emailAddress();
      if (typeof schema.pattern === 'string') {
        try {
          return fc
            .stringMatching(new RegExp(schema.pattern))
            .filter((s) => s.length <= (schema.maxLength ?? 1e6));
        } catch {
          /* a pattern JS can't compile: plain strings */
        }
      }
      const min = schema.minLength ?? 0;
      return fc.string({ minLength: min, maxLength: Math.max(min, Math.min(schema.maxLength ?? 40, 80)) });
    }
    case 'integer':
      return fc.integer({
        min: Math.max(schema.minimum ?? -1000, -(2 ** 31)),
        max: Math.min(schema.maximum ?? 100_000, 2 ** 31),
      });
    case 'number':
      return fc.double({
        min: schema.minimum ?? -1e6,
        max: schema.maximum ?? 1e9,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(valid(schema.items as Schema | undefined, depth + 1), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.max(schema.minItems ?? 0, Math.min(schema.maxItems ?? 4, 6)),
      });
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, Schema>;
      const required = new Set<string>((schema.required as string[] | undefined) ?? []);
      const rec: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, v] of Object.entries(props)) rec[k] = valid(v, depth + 1);
      return fc.record(rec, { requiredKeys: Object.keys(props).filter((k) => required.has(k)) });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

export type Mutation =
  | { kind: 'valid' }
  | { kind: 'drop'; pick: number }
  | { kind: 'unknown'; key: string; value: unknown }
  | { kind: 'badValue'; pick: number; value: unknown }
  | { kind: 'replace'; value: unknown };

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'valid' as const }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant('drop' as const), pick: fc.nat() }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('unknown' as const),
      key: fc.string({ minLength: 1, maxLength: 12 }),
      value: hostile,
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({ kind: fc.constant('badValue' as const), pick: fc.nat(), value: hostile }),
    weight: 3,
  },
  { arbitrary: fc.record({ kind: fc.constant('replace' as const), value: hostile }), weight: 1 },
);

export function applyMutation(body: unknown, m: Mutation): unknown {
  if (m.kind === 'valid') return body;
  if (m.kind === 'replace') return m.value;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    if (m.kind === 'unknown') return { [m.key]: m.value };
    return m.kind === 'badValue' ? m.value : body;
  }
  const copy: Record<string, unknown> = { ...(body as Record<string, unknown>) };
  const keys = Object.keys(copy);
  switch (m.kind) {
    case 'drop':
      if (keys.length) delete copy[keys[m.pick % keys.length]!];
      return copy;
    case 'unknown':
      copy[m.key] = m.value;
      return copy;
    case 'badValue':
      if (keys.length) copy[keys[m.pick % keys.length]!] = m.value;
      else copy.x = m.value;
      return copy;
  }
}
