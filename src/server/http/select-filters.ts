// `select_filters` of the list calls that take one (the v1 instance list, the template search):
// a JSON object of `{field: {op: value}}` (a bare value means eq) with the operators eq, neq, gt,
// gte, lt, lte, in and notin. Each caller names its fields, the column each reads and how a
// value is coerced; an unknown field or operator, or a value of the wrong type, is a 400 naming
// it, never silently dropped. The checked conditions are applied to a query by db/filters.ts's whereFilters.
import type { AppError } from '../errors.js';
import { quoteValue } from '../errors.js';
import { jsonTooDeep, tooDeep } from './json-limits.js';
import type { SelectFilter } from '../db/filters.js';

const OPS: Record<string, '=' | '<>' | '>' | '>=' | '<' | '<=' | 'in' | 'not in'> = {
  eq: '=',
  neq: '<>',
  gt: '>',
  gte: '>=',
  lt: '<',
  lte: '<=',
  in: 'in',
  notin: 'not in',
};

/** At most this many values in one in/notin list. */
export const MAX_IN_VALUES = 1000;

/** A query value that may be JSON text (GET) or already parsed; undefined when absent or empty. */
export function parseJsonParam(name: string, raw: unknown, bad: (msg: string) => AppError): unknown {
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string') return raw;
  if (jsonTooDeep(raw)) throw tooDeep();
  try {
    return JSON.parse(raw);
  } catch {
    throw bad(`${name} must be JSON`);
  }
}

export interface FilterSpec<K extends string> {
  /** By field name, the column it reads and the kind of its values. */
  fields: Record<string, { col: string; kind: K }>;
  /** A value as the column holds it; null only where the column may be null. Throws a 400. */
  coerce(field: string, kind: K, v: unknown): string | number | null;
  /** Whether gt, gte, lt and lte apply to values of this kind. */
  ordered(kind: K): boolean;
  bad(msg: string): AppError;
}

/** The checked conditions of a parsed select_filters object (undefined: none). */
export function selectFilters<K extends string>(filters: unknown, spec: FilterSpec<K>): SelectFilter[] {
  const { bad } = spec;
  if (filters === undefined) return [];
  if (typeof filters !== 'object' || filters === null || Array.isArray(filters))
    throw bad('select_filters must be a JSON object of field: {op: value}');
  const conds: SelectFilter[] = [];
  for (const [field, fieldSpec] of Object.entries(filters as Record<string, unknown>)) {
    const def = Object.hasOwn(spec.fields, field) ? spec.fields[field] : undefined;
    if (!def)
      throw bad(
        `select_filters: unknown field ${quoteValue(field)} (use ${Object.keys(spec.fields).join(', ')})`,
      );
    const ops =
      fieldSpec !== null && typeof fieldSpec === 'object' && !Array.isArray(fieldSpec)
        ? Object.entries(fieldSpec as Record<string, unknown>)
        : [['eq', fieldSpec] as [string, unknown]];
    for (const [op, v] of ops) {
      const sqlOp = Object.hasOwn(OPS, op) ? OPS[op] : undefined;
      if (!sqlOp) throw bad(`select_filters: unknown operator ${quoteValue(op)} on ${field}`);
      const col = def.col;
      if (sqlOp === 'in' || sqlOp === 'not in') {
        if (!Array.isArray(v) || v.length === 0 || v.length > MAX_IN_VALUES)
          throw bad(`select_filters: ${field}.${op} takes a non-empty array`);
        const all = v.map((x) => spec.coerce(field, def.kind, x));
        const vals = all.filter((x) => x !== null);
        // null is matched with IS NULL, never inside IN ().
        conds.push({ col, op: sqlOp, vals, withNull: vals.length !== all.length });
      } else {
        const val = spec.coerce(field, def.kind, v);
        if (val === null) {
          if (op !== 'eq' && op !== 'neq')
            throw bad(`select_filters: ${field}.${op} cannot compare with null`);
          conds.push({ col, op: op === 'eq' ? 'is' : 'is not' });
        } else {
          if (!spec.ordered(def.kind) && op !== 'eq' && op !== 'neq')
            throw bad(`select_filters: ${op} does not apply to ${field}`);
          conds.push({ col, op: sqlOp, val });
        }
      }
    }
  }
  return conds;
}
