// Volume offer search: the offer query language (offers.filter.ts) over the volume listings.
// Pure. The same body shape as offer search: each field at the top level as {op: value} (or a
// bare value for eq), operators eq neq gt gte lt lte in notin, values coerced by the offer
// compiler's own rules (so "1" and 1 mean the same in both searches); `order`, `limit`,
// `allocated_storage`. An unknown field, a field of the offer search that volume offers lack, an
// operator a string or boolean takes no order with, or a value of the wrong type: a 400 naming it.
// Nothing is dropped. A comparison with NULL never holds (as in SQL).
import { CommonErrors, quoteValue } from '../../errors.js';
import { OPERATORS, type FieldDef, type Operator } from '../offers/offers.fields.js';
import {
  coerce,
  MAX_IN_VALUES,
  parseLimit,
  parseOrder,
  parseStorage,
  searchObject,
  type Scalar,
} from '../offers/offers.filter.js';
import { unknownFieldMessage } from '../offers/offers.refused-fields.js';

export type VolumeFieldType = 'int' | 'float' | 'bool' | 'string';
export type VolumeOfferValue = number | string | boolean | null;

/** A volume offer as search compares it (and, trimmed by its schema, replies with it). */
export type VolumeOfferRow = Record<string, VolumeOfferValue>;

/** The searchable fields of a volume offer, and their types. */
export const VOLUME_OFFER_FIELDS: Readonly<Record<string, VolumeFieldType>> = {
  id: 'int',
  ask_contract_id: 'int',
  machine_id: 'int',
  host_id: 'int',
  disk_space: 'float',
  storage_cost: 'float',
  disk_bw: 'float',
  inet_up: 'float',
  inet_down: 'float',
  reliability: 'float',
  reliability2: 'float',
  verified: 'bool',
  geolocation: 'string',
  driver_version: 'string',
  cuda_max_good: 'float',
  cpu_ghz: 'float',
  duration: 'float',
  external: 'bool',
  /** Orders only: the listing's value for its price (disk per dollar), as offers order by score. */
  score: 'float',
};

const RESERVED = new Set(['order', 'limit', 'allocated_storage', 'type', 'disable_bundling']);
const DEFAULT_STORAGE_GB = 1;

export interface VolumeCondition {
  field: string;
  op: Operator;
  value: Scalar | Scalar[];
}

export interface VolumePlan {
  conditions: VolumeCondition[];
  order: { field: string; dir: 'asc' | 'desc' }[];
  limit: number;
  storage: number;
}

function bad(msg: string): never {
  throw CommonErrors.badRequest(msg);
}

function isOperator(op: string): op is Operator {
  return (OPERATORS as readonly string[]).includes(op);
}

function fieldType(kind: 'search' | 'order', field: string): VolumeFieldType {
  const t = Object.hasOwn(VOLUME_OFFER_FIELDS, field) ? VOLUME_OFFER_FIELDS[field] : undefined;
  if (!t) {
    const known = Object.keys(VOLUME_OFFER_FIELDS).filter((f) => f !== 'score');
    bad(`${unknownFieldMessage(kind, field, quoteValue(field))} for volume offers (use ${known.join(', ')})`);
  }
  return t;
}

function condition(field: string, type: VolumeFieldType, op: string, raw: unknown): VolumeCondition {
  if (!isOperator(op))
    bad(`Unknown operator ${quoteValue(op)} for field ${field} (use ${OPERATORS.join(', ')})`);
  if ((type === 'bool' || type === 'string') && !['eq', 'neq', 'in', 'notin'].includes(op))
    bad(
      `Operator ${op} does not apply to ${field} (a ${type === 'bool' ? 'boolean' : 'string'}; use eq, neq, in, notin)`,
    );
  // The offer compiler's coercion, which reads only the field's type.
  const def = { type } as FieldDef;
  if (op === 'in' || op === 'notin') {
    if (!Array.isArray(raw)) bad(`Invalid value for ${field}.${op}: expected an array`);
    if (raw.length > MAX_IN_VALUES) bad(`Invalid value for ${field}.${op}: at most ${MAX_IN_VALUES} values`);
    return { field, op, value: raw.map((v) => coerce(field, def, v)) };
  }
  if (Array.isArray(raw)) bad(`Invalid value for ${field}.${op}: an array needs in or notin`);
  return { field, op, value: coerce(field, def, raw) };
}

/** A search body, validated into a plan; a 400 naming the culprit otherwise. */
export function compileVolumeSearch(body: unknown): VolumePlan {
  const obj = searchObject(body);
  const conditions: VolumeCondition[] = [];
  for (const [key, raw] of Object.entries(obj)) {
    if (RESERVED.has(key)) continue;
    if (key === 'score') bad('score orders volume offers; it is not a filter');
    const type = fieldType('search', key);
    if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
      const ops = Object.entries(raw as Record<string, unknown>);
      if (ops.length === 0) bad(`Empty filter for ${key}: give {op: value}`);
      for (const [op, v] of ops) conditions.push(condition(key, type, op, v));
    } else {
      conditions.push(condition(key, type, 'eq', raw));
    }
  }
  if (obj.type !== undefined && obj.type !== null && obj.type !== 'on-demand' && obj.type !== 'ondemand')
    bad(`Invalid type ${quoteValue(obj.type)}: volume offers are on-demand only`);
  return {
    conditions,
    order: parseOrder(obj.order, (field) => fieldType('order', field)),
    limit: parseLimit(obj.limit),
    storage: parseStorage(obj.allocated_storage, DEFAULT_STORAGE_GB),
  };
}

function cmp(a: VolumeOfferValue, b: Scalar): number | null {
  if (a === null) return null;
  if (typeof a === 'boolean' || typeof b === 'boolean') return Boolean(a) === Boolean(b) ? 0 : a ? 1 : -1;
  if (typeof a === 'number' && typeof b === 'number') return a === b ? 0 : a < b ? -1 : 1;
  const x = String(a);
  const y = String(b);
  return x === y ? 0 : x < y ? -1 : 1;
}

/** Whether a row meets one condition (a NULL meets none, negations included). */
export function holds(row: VolumeOfferRow, c: VolumeCondition): boolean {
  const v = row[c.field] ?? null;
  if (v === null) return false;
  const one = (x: Scalar) => cmp(v, x);
  switch (c.op) {
    case 'eq':
      return one(c.value as Scalar) === 0;
    case 'neq':
      return one(c.value as Scalar) !== 0;
    case 'gt':
      return one(c.value as Scalar)! > 0;
    case 'gte':
      return one(c.value as Scalar)! >= 0;
    case 'lt':
      return one(c.value as Scalar)! < 0;
    case 'lte':
      return one(c.value as Scalar)! <= 0;
    case 'in':
      return (c.value as Scalar[]).some((x) => one(x) === 0);
    case 'notin':
      return (c.value as Scalar[]).every((x) => one(x) !== 0);
  }
}

/** The rows a plan selects, ordered (ties by id) and cut to its limit. */
export function selectVolumeOffers(rows: VolumeOfferRow[], plan: VolumePlan): VolumeOfferRow[] {
  const kept = rows.filter((r) => plan.conditions.every((c) => holds(r, c)));
  kept.sort((a, b) => {
    for (const o of plan.order) {
      const x = a[o.field] ?? null;
      const y = b[o.field] ?? null;
      if (x === y) continue;
      // NULL first ascending, last descending (SQLite's order, which offer search keeps).
      const d = x === null ? -1 : y === null ? 1 : (cmp(x, y) ?? 0);
      if (d !== 0) return o.dir === 'asc' ? d : -d;
    }
    return Number(a.id) - Number(b.id);
  });
  return kept.slice(0, plan.limit);
}
