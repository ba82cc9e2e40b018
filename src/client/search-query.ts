// The search query of `openrig search offers`: `field op value` terms, e.g.
// `gpu_name=RTX_4090 num_gpus>=2 reliability>0.98 gpu_ram>=24`, compiled into the flat filter
// body of POST /api/v0/bundles/ (docs/api.md, "Search filters"). Pure; errors are SearchQueryError (a usage error).
//
// Units: on the wire `cpu_ram`/`gpu_ram` are MB and
// `duration` is seconds. People think in GB and days, so, as the established CLI does, a bare
// number for those fields is GB (×1000) or days (×86400); an explicit unit (`24GB`, `512MB`, `12h`,
// `3d`, `1w`) says what it means. `disk_space` is GB (a `TB` suffix is accepted). Other numbers are
// sent as the strings the user typed (the server coerces them to the field's type); `_` in a
// string value stands for a space (`RTX_4090` is "RTX 4090"); `true`/`false`/`null` are literals;
// `[a,b]` is a list for `in`/`notin`; `field=any` drops that field's filter (also a default one).
import type { FilterOp, FilterValue, SearchBody } from '../contract/api-types.js';

export class SearchQueryError extends Error {
  constructor(msg: string) {
    super(msg);
    this.name = 'SearchQueryError';
  }
}

/** The filters the established CLI sends unless told otherwise. */
export const DEFAULT_FILTERS: Record<string, Partial<Record<FilterOp, FilterValue>>> = {
  verified: { eq: true },
  external: { eq: false },
  rentable: { eq: true },
  rented: { eq: false },
};
export const DEFAULT_ORDER: [string, 'asc' | 'desc'][] = [['score', 'desc']];

/** Short names people type, as the established CLI accepts them. */
export const FIELD_ALIASES: Record<string, string> = {
  dph: 'dph_total',
  cuda_vers: 'cuda_max_good',
  dlperf_usd: 'dlperf_per_dphtotal',
  reliability2: 'reliability',
};

type UnitTable = { default: number; units: Record<string, number> };
const RAM: UnitTable = { default: 1000, units: { mb: 1, gb: 1000, tb: 1_000_000 } };
const DISK: UnitTable = { default: 1, units: { gb: 1, tb: 1000 } };
const DURATION: UnitTable = {
  default: 86_400,
  units: { s: 1, m: 60, min: 60, h: 3600, d: 86_400, w: 604_800 },
};
/** Fields whose wire unit differs from what a person types (value → wire multiplier). */
export const UNIT_FIELDS: Record<string, UnitTable> = {
  gpu_ram: RAM,
  gpu_total_ram: RAM,
  cpu_ram: RAM,
  disk_space: DISK,
  duration: DURATION,
};

const SYMBOL_OPS: Record<string, FilterOp> = {
  '>=': 'gte',
  '<=': 'lte',
  '!=': 'neq',
  '==': 'eq',
  '=': 'eq',
  '>': 'gt',
  '<': 'lt',
};
const WORD_OPS: Record<string, FilterOp> = {
  eq: 'eq',
  neq: 'neq',
  noteq: 'neq',
  'not eq': 'neq',
  gt: 'gt',
  gte: 'gte',
  lt: 'lt',
  lte: 'lte',
  in: 'in',
  notin: 'notin',
  nin: 'notin',
  'not in': 'notin',
};

export interface QueryTerm {
  field: string;
  op: FilterOp;
  /** The text `any` removes the field's filter. */
  value: FilterValue;
}

/** Splits a query into terms; throws SearchQueryError naming the offending part. */
export function parseQuery(query: string): QueryTerm[] {
  const terms: QueryTerm[] = [];
  const s = query;
  let i = 0;
  const skipSpace = () => {
    while (i < s.length && /\s/.test(s[i]!)) i++;
  };
  skipSpace();
  while (i < s.length) {
    const start = i;
    const fm = /^[A-Za-z_][A-Za-z0-9_]*/.exec(s.slice(i));
    if (!fm) throw new SearchQueryError(`expected a field name at "${s.slice(i, i + 20)}"`);
    const rawField = fm[0];
    const field = FIELD_ALIASES[rawField] ?? rawField;
    i += rawField.length;
    skipSpace();
    const rest = s.slice(i);
    let op: FilterOp | undefined;
    const sm = /^(>=|<=|!=|==|=|>|<)/.exec(rest);
    if (sm) {
      op = SYMBOL_OPS[sm[1]!];
      i += sm[1]!.length;
    } else {
      const wm = /^(not\s+eq|not\s+in|noteq|notin|nin|neq|gte|lte|eq|gt|lt|in)(?=\s)/i.exec(rest);
      if (wm) {
        op = WORD_OPS[wm[1]!.toLowerCase().replace(/\s+/, ' ')];
        i += wm[1]!.length;
      }
    }
    if (!op)
      throw new SearchQueryError(
        `${rawField}: expected an operator (= != > >= < <= in notin) after the field`,
      );
    skipSpace();
    // A second operator (`num_gpus>>2`, `gpu_ram=>24`) is a typo, not part of the value.
    const doubled = /^[<>=!]+/.exec(s.slice(i));
    if (doubled)
      throw new SearchQueryError(
        `"${s.slice(start, i + doubled[0].length).trim()}…": one operator per term (= != > >= < <=), not "${s.slice(start + rawField.length, i + doubled[0].length).trim()}"`,
      );
    const raw = readValue();
    if (raw === null) throw new SearchQueryError(`${rawField}: missing value after the operator`);
    terms.push({ field, op, value: convert(field, op, raw) });
    skipSpace();
  }
  return terms;

  function readValue(): { text: string; quoted: boolean; list: boolean } | null {
    if (i >= s.length) return null;
    const c = s[i]!;
    if (c === '[') {
      const end = s.indexOf(']', i);
      if (end < 0) throw new SearchQueryError(`unterminated list at "${s.slice(i, i + 20)}"`);
      const text = s.slice(i + 1, end);
      i = end + 1;
      return { text, quoted: false, list: true };
    }
    if (c === '"' || c === "'") {
      const end = s.indexOf(c, i + 1);
      if (end < 0) throw new SearchQueryError(`unterminated quote at "${s.slice(i, i + 20)}"`);
      const text = s.slice(i + 1, end);
      i = end + 1;
      return { text, quoted: true, list: false };
    }
    const m = /^[^\s]+/.exec(s.slice(i))!;
    i += m[0].length;
    return { text: m[0], quoted: false, list: false };
  }
}

function convert(
  field: string,
  op: FilterOp,
  v: { text: string; quoted: boolean; list: boolean },
): FilterValue {
  if (v.list) {
    if (op !== 'in' && op !== 'notin')
      throw new SearchQueryError(`${field}: a [list] needs the in or notin operator`);
    const items = v.text
      .split(',')
      .map((x) => x.trim().replace(/^["']|["']$/g, ''))
      .filter((x) => x.length > 0);
    if (items.length === 0) throw new SearchQueryError(`${field}: empty list`);
    return items.map((x) => scalar(field, x, false) as string | number | boolean | null);
  }
  if (!v.quoted && v.text.toLowerCase() === 'any') return 'any';
  const value = scalar(field, v.text, v.quoted);
  return op === 'in' || op === 'notin' ? [value as string | number | boolean | null] : value;
}

function scalar(field: string, text: string, quoted: boolean): FilterValue {
  const unit = UNIT_FIELDS[field];
  if (unit) return withUnit(field, text, unit);
  if (!quoted) {
    const lower = text.toLowerCase();
    if (lower === 'true') return true;
    if (lower === 'false') return false;
    if (lower === 'null' || lower === 'none') return null;
  }
  // Numbers stay strings, as the established CLI sends them; the server coerces.
  return quoted ? text : text.replace(/_/g, ' ');
}

function withUnit(field: string, text: string, unit: UnitTable): number {
  const m = /^(-?\d+(?:\.\d+)?|-?\.\d+)\s*([A-Za-z]*)$/.exec(text.trim());
  if (!m) throw new SearchQueryError(`${field}: "${text}" is not a number`);
  const n = Number(m[1]);
  const suffix = m[2]!.toLowerCase();
  let mult = unit.default;
  if (suffix) {
    const u = unit.units[suffix];
    if (u === undefined)
      throw new SearchQueryError(
        `${field}: unknown unit "${m[2]}" (use ${Object.keys(unit.units).join(', ')})`,
      );
    mult = u;
  }
  // Round away float noise (0.1 × 86400); MB, GB and seconds are whole on the wire.
  return Math.round(n * mult * 1000) / 1000;
}

/** `-o 'dph_total'`, `-o 'score-'`, `-o 'num_gpus-,dph+'`: a trailing `-` is descending. */
export function parseOrder(spec: string): [string, 'asc' | 'desc'][] {
  const out: [string, 'asc' | 'desc'][] = [];
  for (const part of spec
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)([+-]?)$/.exec(part);
    if (!m) throw new SearchQueryError(`order: "${part}" is not a field name (append - for descending)`);
    out.push([FIELD_ALIASES[m[1]!] ?? m[1]!, m[2] === '-' ? 'desc' : 'asc']);
  }
  if (out.length === 0) throw new SearchQueryError('order: no field given');
  return out;
}

export interface SearchOptions {
  order?: string;
  type?: string;
  limit?: number;
  /** GB of disk to price into dph_total (`allocated_storage`). */
  storage?: number;
  /** Leave out the default filters (verified, external, rentable, rented). */
  noDefault?: boolean;
}

const TYPES: Record<string, 'on-demand' | 'bid' | 'reserved'> = {
  'on-demand': 'on-demand',
  ondemand: 'on-demand',
  bid: 'bid',
  interruptible: 'bid',
  reserved: 'reserved',
};

/** The whole search body from a query string and the command's options. */
export function buildSearchBody(query: string, o: SearchOptions = {}): SearchBody {
  const filters: Record<string, Partial<Record<FilterOp, FilterValue>>> = o.noDefault
    ? {}
    : structuredClone(DEFAULT_FILTERS);
  const touched = new Set<string>();
  for (const t of parseQuery(query)) {
    if (t.value === 'any') {
      delete filters[t.field];
      continue;
    }
    // The user's first term on a field replaces a default filter; further terms on it combine
    // (`num_gpus>=2 num_gpus<=4`).
    const prev = touched.has(t.field) ? (filters[t.field] ?? {}) : {};
    touched.add(t.field);
    filters[t.field] = { ...prev, [t.op]: t.value };
  }
  const body: SearchBody = {
    ...filters,
    order: o.order ? parseOrder(o.order) : DEFAULT_ORDER.map((x) => [...x] as [string, 'asc' | 'desc']),
  };
  const type = TYPES[(o.type ?? 'on-demand').toLowerCase()];
  if (!type) throw new SearchQueryError(`--type must be on-demand, bid (interruptible) or reserved`);
  body.type = type;
  if (o.limit !== undefined) {
    if (!Number.isInteger(o.limit) || o.limit < 1)
      throw new SearchQueryError('--limit must be a positive whole number');
    body.limit = o.limit;
  }
  if (o.storage !== undefined) {
    if (!Number.isFinite(o.storage) || o.storage < 0)
      throw new SearchQueryError('--storage must be a number of GB');
    body.allocated_storage = o.storage;
  }
  return body;
}
