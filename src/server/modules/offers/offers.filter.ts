// The search-filter compiler (rules in docs/api.md, "Search filters"). Pure: a request
// body becomes a validated plan, and a plan becomes one parameterised SQL statement.
// - Each filter field sits at the top level as {op: value} (several ops on one field are ANDed; a
//   bare value means eq). Operators: eq neq gt gte lt lte in notin; in/notin take arrays.
// - Values given as strings are coerced to the field's type ("1" → 1, "true" → true). A field
//   compared by a number (compareAs: driver_version) takes that number or a value that makes it,
//   with every operator.
// - Unknown field, operator or uncoercible value: a 400 bad_request naming it. Nothing is dropped.
// - `order`: [[field, "asc"|"desc"], …]; `type`: on-demand | bid (interruptible) | reserved;
//   `limit`; `allocated_storage` (GB, priced into dph_total, and offers must have that much disk).
// - Rented or unlisted machines appear only when the filter names `rented`, `listed` or
//   `rentable`; deleted machines never do.
import { booleanOf } from '../../../contract/text.js';
import { CommonErrors, quoteValue } from '../../errors.js';
import type { ParamType, SqlDialect } from '../../db/dialect.js';
import {
  FREE_DISK_SQL,
  MIN_BID_SQL,
  OFFER_FIELDS,
  OPERATORS,
  lit,
  type FieldDef,
  type Operator,
  type SqlContext,
} from './offers.fields.js';
import { unknownFieldMessage } from './offers.refused-fields.js';

export const DEFAULT_LIMIT = 64;
export const MAX_LIMIT = 1000;
export const MAX_IN_VALUES = 1000;
export const DEFAULT_STORAGE_GB = 5;
export const SEARCH_TYPES = ['on-demand', 'bid', 'reserved'] as const;
export type SearchType = (typeof SEARCH_TYPES)[number];

export type Scalar = number | string | boolean;
export interface Condition {
  field: string;
  op: Operator;
  /** One value, or the list of in/notin. */
  value: Scalar | Scalar[];
}

export interface SearchPlan {
  conditions: Condition[];
  order: { field: string; dir: 'asc' | 'desc' }[];
  type: SearchType;
  limit: number;
  storage: number;
}

const RESERVED_KEYS = new Set(['order', 'type', 'limit', 'allocated_storage', 'disable_bundling']);

function bad(msg: string): never {
  throw CommonErrors.badRequest(msg);
}

/** A bad value in a message: at most about 100 characters of it. */
const show = (v: unknown): string => quoteValue(v);

/** Coerces one value to the field's type, or throws a 400 naming the field. */
export function coerce(field: string, def: FieldDef, v: unknown): Scalar {
  if (def.compareAs) {
    const n = def.compareAs.valueOf(v);
    if (n === null) bad(`Invalid value for ${field}: ${show(v)} is not ${def.compareAs.expects}`);
    return n;
  }
  switch (def.type) {
    case 'int': {
      const n =
        typeof v === 'number'
          ? v
          : typeof v === 'string' && /^\s*[+-]?\d+(\.0*)?\s*$/.test(v)
            ? Number(v)
            : NaN;
      if (!Number.isSafeInteger(n)) bad(`Invalid value for ${field}: ${show(v)} is not an integer`);
      return n;
    }
    case 'float': {
      const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
      if (!Number.isFinite(n)) bad(`Invalid value for ${field}: ${show(v)} is not a number`);
      return n;
    }
    case 'bool':
      return booleanOf(v) ?? bad(`Invalid value for ${field}: ${show(v)} is not a boolean`);
    case 'string': {
      if (typeof v === 'number' && Number.isFinite(v)) return String(v);
      if (typeof v !== 'string') return bad(`Invalid value for ${field}: ${show(v)} is not a string`);
      if (v.length > 256) return bad(`Invalid value for ${field}: longer than 256 characters`);
      return field === 'gpu_name' ? v.replace(/_/g, ' ') : v;
    }
  }
}

function isOperator(op: string): op is Operator {
  return (OPERATORS as readonly string[]).includes(op);
}

function condition(field: string, def: FieldDef, op: string, raw: unknown): Condition {
  if (!isOperator(op)) bad(`Unknown operator ${show(op)} for field ${field} (use ${OPERATORS.join(', ')})`);
  if (
    (def.type === 'bool' || (def.type === 'string' && !def.compareAs)) &&
    op !== 'eq' &&
    op !== 'neq' &&
    op !== 'in' &&
    op !== 'notin'
  ) {
    bad(
      `Operator ${op} does not apply to ${field} (a ${def.type === 'bool' ? 'boolean' : 'string'}; use eq, neq, in, notin)`,
    );
  }
  if (op === 'in' || op === 'notin') {
    if (!Array.isArray(raw)) bad(`Invalid value for ${field}.${op}: expected an array`);
    if (raw.length > MAX_IN_VALUES) bad(`Invalid value for ${field}.${op}: at most ${MAX_IN_VALUES} values`);
    return { field, op, value: raw.map((v) => coerce(field, def, v)) };
  }
  if (Array.isArray(raw)) bad(`Invalid value for ${field}.${op}: an array needs in or notin`);
  return { field, op, value: coerce(field, def, raw) };
}

/**
 * An `order` value: [[field, "asc"|"desc"], …] (a bare field name sorts ascending), at most 8
 * fields, each checked by `checkField`; none given: score, highest first. Offer and volume
 * searches both read it.
 */
export function parseOrder(
  raw: unknown,
  checkField: (field: string) => void,
): { field: string; dir: 'asc' | 'desc' }[] {
  if (raw === undefined || raw === null) return [{ field: 'score', dir: 'desc' }];
  if (!Array.isArray(raw)) bad('order must be an array of [field, "asc"|"desc"] pairs');
  if (raw.length > 8) bad('order takes at most 8 fields');
  return raw.map((entry: unknown) => {
    const pair = typeof entry === 'string' ? [entry] : entry;
    if (!Array.isArray(pair) || pair.length < 1 || pair.length > 2 || typeof pair[0] !== 'string') {
      bad(`Invalid order entry ${show(entry)}: expected [field, "asc"|"desc"]`);
    }
    const field = pair[0];
    checkField(field);
    const dir = pair[1] === undefined ? 'asc' : typeof pair[1] === 'string' ? pair[1].toLowerCase() : '';
    if (dir !== 'asc' && dir !== 'desc')
      bad(`Invalid order direction ${show(pair[1])} for ${field} (use asc or desc)`);
    return { field, dir };
  });
}

function parseType(raw: unknown): SearchType {
  if (raw === undefined || raw === null) return 'on-demand';
  if (raw === 'interruptible') return 'bid';
  // The OpenAPI document of the marketplace spells on-demand without the hyphen.
  if (raw === 'ondemand') return 'on-demand';
  if (typeof raw !== 'string' || !(SEARCH_TYPES as readonly string[]).includes(raw)) {
    bad(`Invalid type ${show(raw)} (use on-demand, bid or reserved)`);
  }
  return raw as SearchType;
}

/** A search's limit: an integer from 1 to MAX_LIMIT, DEFAULT_LIMIT when absent. */
export function parseLimit(raw: unknown): number {
  if (raw === undefined || raw === null) return DEFAULT_LIMIT;
  const n =
    typeof raw === 'number' ? raw : typeof raw === 'string' && /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_LIMIT)
    bad(`Invalid limit ${show(raw)}: an integer from 1 to ${MAX_LIMIT}`);
  return n;
}

/** A search's allocated_storage: GB from 0 to 1,000,000, `fallbackGb` when absent. */
export function parseStorage(raw: unknown, fallbackGb: number = DEFAULT_STORAGE_GB): number {
  if (raw === undefined || raw === null) return fallbackGb;
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN;
  if (!Number.isFinite(n) || n < 0 || n > 1_000_000)
    bad(`Invalid allocated_storage ${show(raw)}: a number of GB from 0 to 1000000`);
  return n;
}

/** A search body as its object of filters (none: {}); older clients wrap it as {"q": {...}}. */
export function searchObject(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body))
    bad('The search body must be a JSON object of filters');
  const obj = body as Record<string, unknown>;
  if (Object.keys(obj).length === 1 && obj.q && typeof obj.q === 'object' && !Array.isArray(obj.q))
    return obj.q as Record<string, unknown>;
  return obj;
}

/** Validates a search body into a plan; a 400 bad_request naming the culprit otherwise. */
export function compileSearch(body: unknown): SearchPlan {
  const obj = searchObject(body);
  const conditions: Condition[] = [];
  for (const [key, raw] of Object.entries(obj)) {
    if (RESERVED_KEYS.has(key)) continue;
    const def = Object.hasOwn(OFFER_FIELDS, key) ? OFFER_FIELDS[key] : undefined;
    if (!def) bad(unknownFieldMessage('search', key, show(key)));
    if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
      const ops = Object.entries(raw as Record<string, unknown>);
      if (ops.length === 0) bad(`Empty filter for ${key}: give {op: value}`);
      for (const [op, v] of ops) conditions.push(condition(key, def, op, v));
    } else {
      conditions.push(condition(key, def, 'eq', raw));
    }
  }
  if (obj.disable_bundling !== undefined && typeof obj.disable_bundling !== 'boolean')
    bad('disable_bundling must be a boolean');
  return {
    conditions,
    order: parseOrder(obj.order, (field) => {
      if (!Object.hasOwn(OFFER_FIELDS, field)) bad(unknownFieldMessage('order', field, show(field)));
    }),
    type: parseType(obj.type),
    limit: parseLimit(obj.limit),
    storage: parseStorage(obj.allocated_storage),
  };
}

/** The keys of a condition's values on a field with alsoMatches (distinct, in order). */
export function alsoMatchKeys(c: Condition, also: NonNullable<FieldDef['alsoMatches']>): string[] {
  const vs = Array.isArray(c.value) ? c.value : [c.value];
  const keys = new Set<string>();
  for (const v of vs) {
    const k = also.keyOf(String(v));
    if (k !== null) keys.add(k);
  }
  return [...keys];
}

/**
 * A condition on a field with alsoMatches (a string field: eq, neq, in, notin): the field's value
 * is one of the values or its key is one of theirs; neq and notin negate that.
 */
function alsoMatchesSql(
  c: Condition,
  e: string,
  also: NonNullable<FieldDef['alsoMatches']>,
  param: (v: unknown) => string,
): string {
  const vs = Array.isArray(c.value) ? c.value : [c.value];
  const positive = c.op === 'eq' || c.op === 'in';
  if (vs.length === 0) return positive ? '1 = 0' : '1 = 1';
  const oneOf = (x: string, list: readonly unknown[]) =>
    list.length === 1 ? `${x} = ${param(list[0])}` : `${x} IN (${list.map(param).join(', ')})`;
  const keys = alsoMatchKeys(c, also);
  const hit = keys.length ? `(${oneOf(e, vs)} OR ${oneOf(also.sql(), keys)})` : `(${oneOf(e, vs)})`;
  return positive ? hit : `NOT ${hit}`;
}

export interface CompiledSql {
  sql: string;
  params: unknown[];
}

const CMP: Record<Exclude<Operator, 'in' | 'notin'>, string> = {
  eq: '=',
  neq: '<>',
  gt: '>',
  gte: '>=',
  lt: '<',
  lte: '<=',
};

/** The fields every reply row carries, selected by their SQL (derived ones included). */
export const SELECTED_FIELDS = Object.keys(OFFER_FIELDS);

/** Turns a plan into one SELECT over machines (placeholders for the dialect). */
export function searchSql(plan: SearchPlan, dialect: SqlDialect, now: number): CompiledSql {
  const params: unknown[] = [];
  // Every parameter is read as its field's type (a placeholder's type is otherwise inferred from
  // the column it meets, and 1.5 against an integer column would fail).
  const TYPE: Record<FieldDef['type'], ParamType> = {
    int: 'bigint',
    float: 'float8',
    string: 'text',
    bool: 'untyped',
  };
  const p =
    (type: FieldDef['type']) =>
    (v: unknown): string => {
      params.push(v);
      return dialect.param(params.length, TYPE[type]);
    };
  const base = plan.type === 'bid' ? MIN_BID_SQL : '(m.price_gpu_dph * m.num_gpus)';
  const ctx: SqlContext = { base, storage: plan.storage, now, dialect };
  const expr = (field: string) => OFFER_FIELDS[field]!.sql(ctx);
  // What conditions and orders compare: a field's compareAs number (an integer), else its value.
  const compared = (field: string) => {
    const def = OFFER_FIELDS[field]!;
    return def.compareAs ? def.compareAs.sql(ctx) : def.sql(ctx);
  };
  const where: string[] = ['m.deleted_at IS NULL', `m.disk_space >= ${lit(plan.storage)}`];
  if (plan.type === 'bid') where.push('m.min_bid_dph > 0');
  const named = new Set(plan.conditions.map((c) => c.field));
  // Rented or unlisted machines only when the filter asks for them.
  if (!named.has('listed') && !named.has('rentable')) where.push(expr('listed'));
  // Not held by an on-demand or owner rental (a machine only a bid holds can be taken).
  if (!named.has('rented') && !named.has('rentable'))
    where.push('(m.rented = 0 OR m.bid_to_win_dph IS NOT NULL)');
  for (const c of plan.conditions) {
    const def = OFFER_FIELDS[c.field]!;
    const e = compared(c.field);
    const param = p(def.compareAs ? 'int' : def.type);
    if (def.type === 'bool') {
      // Booleans are predicates: compare by truth, never by 0/1 versus true/false across dialects.
      const set = new Set(Array.isArray(c.value) ? c.value : [c.value]);
      const positive = c.op === 'eq' || c.op === 'in';
      const wantTrue = set.has(true);
      const wantFalse = set.has(false);
      if (wantTrue && wantFalse) where.push(positive ? '1 = 1' : '1 = 0');
      else if (!wantTrue && !wantFalse) where.push(positive ? '1 = 0' : '1 = 1');
      else where.push(wantTrue === positive ? e : `NOT ${e}`);
      continue;
    }
    if (def.alsoMatches) {
      where.push(alsoMatchesSql(c, e, def.alsoMatches, param));
      continue;
    }
    if (c.op === 'in' || c.op === 'notin') {
      const vs = c.value as Scalar[];
      if (vs.length === 0) where.push(c.op === 'in' ? '1 = 0' : '1 = 1');
      else where.push(`${e} ${c.op === 'in' ? 'IN' : 'NOT IN'} (${vs.map(param).join(', ')})`);
      continue;
    }
    where.push(`${e} ${CMP[c.op]} ${param(c.value)}`);
  }
  // A compareAs number may be NULL: it orders as SQLite orders NULL (first ascending, last
  // descending), said outright because PostgreSQL's default is the reverse.
  const orderTerm = (o: SearchPlan['order'][number]) =>
    OFFER_FIELDS[o.field]!.compareAs
      ? `${compared(o.field)} ${o.dir === 'asc' ? 'ASC NULLS FIRST' : 'DESC NULLS LAST'}`
      : `${expr(o.field)} ${o.dir.toUpperCase()}`;
  const order = [...plan.order.map(orderTerm), 'm.id ASC'].join(', ');
  const select = SELECTED_FIELDS.map((f) => `${expr(f)} AS ${f}`).join(', ');
  // Two phases: find the page's ids computing only the order expressions, then compute every
  // reply field for those rows alone (the sorter would otherwise carry all fields of all rows).
  // The free disk (the machine's less what stopped instances on it hold), after the cheap tests.
  if (plan.storage > 0) where.push(`${FREE_DISK_SQL} >= ${lit(plan.storage)}`);
  const page = `SELECT m.id FROM machines m WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT ${plan.limit}`;
  const sql = `SELECT ${select} FROM machines m WHERE m.id IN (${page}) ORDER BY ${order}`;
  return { sql, params };
}
