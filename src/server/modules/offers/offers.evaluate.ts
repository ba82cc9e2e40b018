// Evaluates a validated SearchPlan (offers.filter.ts) over in-memory machine rows, giving exactly
// what searchSql gives over the database (issue 9; offers.index.int.test.ts checks it against
// searchSql on both dialects). Pure.
// - The implicit filters of searchSql: deleted machines are not in the index at all; then disk_space
//   >= allocated_storage, `listed` unless the filter names listed/rentable, `rented = 0` unless it
//   names rented/rentable, bid ⇒ min_bid_dph > 0, and free disk >= allocated_storage.
// - SQL NULL semantics: a WHERE conjunct holds only when it is TRUE, so a comparison with a NULL
//   value fails, also under NOT / neq / notin. (No field is NULL today; the semantics are kept so a
//   nullable field added later behaves as in SQL.)
// - Order: the plan's order, then id ASC. NULLs and strings order as SQLite orders them: NULL
//   smallest (first ascending, last descending), strings by code point (SQLite's BINARY collation
//   compares UTF-8 bytes, which is code-point order). PostgreSQL's SQL differs there (NULLS LAST
//   ascending, strings by the database collation) and the index does not follow it: one order for
//   both dialects.
import { OFFER_FIELDS, freeDiskJs, type FieldValue, type JsContext, type OfferRow } from './offers.fields.js';
import type { Condition, Scalar, SearchPlan } from './offers.filter.js';

export type Predicate = (r: OfferRow) => boolean;

export function jsContext(plan: SearchPlan, now: number): JsContext {
  return { bid: plan.type === 'bid', storage: plan.storage, now: Math.trunc(now) };
}

/** One condition as a predicate; `true`/`false` when it does not depend on the row. */
function conditionPredicate(c: Condition, ctx: JsContext): Predicate | boolean {
  const def = OFFER_FIELDS[c.field]!;
  const js = def.js;
  if (def.type === 'bool') {
    // As searchSql: by truth. Both truths asked: constant; none: constant; else e or NOT e.
    const vs = Array.isArray(c.value) ? c.value : [c.value];
    const positive = c.op === 'eq' || c.op === 'in';
    const wantTrue = vs.includes(true);
    const wantFalse = vs.includes(false);
    if (wantTrue && wantFalse) return positive;
    if (!wantTrue && !wantFalse) return !positive;
    const want = wantTrue === positive;
    return (r) => js(r, ctx) === want;
  }
  if (c.op === 'in' || c.op === 'notin') {
    const vs = c.value as Scalar[];
    if (vs.length === 0) return c.op !== 'in';
    const set = new Set<FieldValue>(vs);
    return c.op === 'in'
      ? (r) => {
          const v = js(r, ctx);
          return v !== null && set.has(v);
        }
      : (r) => {
          const v = js(r, ctx);
          return v !== null && !set.has(v);
        };
  }
  const want = c.value as Scalar;
  switch (c.op) {
    case 'eq':
      return (r) => {
        const v = js(r, ctx);
        return v !== null && v === want;
      };
    case 'neq':
      return (r) => {
        const v = js(r, ctx);
        return v !== null && v !== want;
      };
    // gt/gte/lt/lte apply to numeric fields only (compileSearch refuses them on others).
    case 'gt':
      return (r) => {
        const v = js(r, ctx);
        return v !== null && (v as number) > (want as number);
      };
    case 'gte':
      return (r) => {
        const v = js(r, ctx);
        return v !== null && (v as number) >= (want as number);
      };
    case 'lt':
      return (r) => {
        const v = js(r, ctx);
        return v !== null && (v as number) < (want as number);
      };
    case 'lte':
      return (r) => {
        const v = js(r, ctx);
        return v !== null && (v as number) <= (want as number);
      };
  }
}

/**
 * searchSql's WHERE clause as predicates (all must hold); null when it can hold for no row. The
 * predicates are pure, so their order is free: the filter's own eq/in conditions first (usually
 * the most selective), then its others, then the implicit filters. `settled`: conditions every
 * row given already meets (the index chose the rows by them).
 */
export function planPredicates(plan: SearchPlan, ctx: JsContext, settled: ReadonlySet<Condition> = new Set()): Predicate[] | null {
  const storage = plan.storage;
  const preds: Predicate[] = [];
  const byEquality = [...plan.conditions].sort((a, b) => Number(b.op === 'eq' || b.op === 'in') - Number(a.op === 'eq' || a.op === 'in'));
  for (const c of byEquality) {
    if (settled.has(c)) continue;
    const p = conditionPredicate(c, ctx);
    if (p === false) return null;
    if (p !== true) preds.push(p);
  }
  preds.push((r) => r.disk_space >= storage);
  if (plan.type === 'bid') preds.push((r) => r.min_bid_dph > 0);
  const named = new Set(plan.conditions.map((c) => c.field));
  const listed = OFFER_FIELDS.listed!.js;
  if (!named.has('listed') && !named.has('rentable')) preds.push((r) => listed(r, ctx) === true);
  if (!named.has('rented') && !named.has('rentable')) preds.push((r) => r.rented === 0);
  if (storage > 0) preds.push((r) => freeDiskJs(r) >= storage);
  return preds;
}

/**
 * Code-point order of two strings (SQLite's BINARY collation on UTF-8). JavaScript's `<` compares
 * UTF-16 code units, which puts U+E000..U+FFFF after the surrogates of U+10000 and above.
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      // Surrogates (0xD800..0xDFFF) stand for code points above every BMP unit 0xE000..0xFFFF.
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** SQLite's order of two values of one field: NULL first; numbers (booleans as 0/1); text by code point. */
export function compareValues(a: FieldValue, b: FieldValue): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  if (typeof a === 'string' && typeof b === 'string') return compareCodePoints(a, b);
  const x = Number(a);
  const y = Number(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

interface Entry {
  row: OfferRow;
  /** The first order key (most plans have one), then the others. */
  k: FieldValue;
  more: FieldValue[] | null;
}

/** Rows from `sources` matching the plan, in the plan's order then id, at most plan.limit. */
export function selectPage(sources: readonly (readonly OfferRow[])[], plan: SearchPlan, ctx: JsContext, settled?: ReadonlySet<Condition>): OfferRow[] {
  const preds = planPredicates(plan, ctx, settled);
  if (!preds) return [];
  const [first, ...rest] = plan.order.map((o) => ({ js: OFFER_FIELDS[o.field]!.js, sign: o.dir === 'desc' ? -1 : 1 }));
  const cmp = (a: Entry, b: Entry): number => {
    if (first) {
      const c = compareValues(a.k, b.k);
      if (c !== 0) return c * first.sign;
    }
    for (let i = 0; i < rest.length; i++) {
      const c = compareValues(a.more![i]!, b.more![i]!);
      if (c !== 0) return c * rest[i]!.sign;
    }
    return a.row.id - b.row.id;
  };
  // The best `limit` entries: a heap whose root is the worst kept, so most rows are refused after
  // one comparison with it. Then the kept ones are sorted.
  const limit = plan.limit;
  const heap: Entry[] = [];
  const np = preds.length;
  for (const rows of sources) {
    next: for (let j = 0; j < rows.length; j++) {
      const row = rows[j]!;
      for (let i = 0; i < np; i++) if (!preds[i]!(row)) continue next;
      let more: FieldValue[] | null = null;
      if (rest.length) {
        more = [];
        for (const o of rest) more.push(o.js(row, ctx));
      }
      const e: Entry = { row, k: first ? first.js(row, ctx) : null, more };
      if (heap.length < limit) heapPush(heap, e, cmp);
      else if (cmp(e, heap[0]!) < 0) heapReplaceRoot(heap, e, cmp);
    }
  }
  return heap.sort(cmp).map((e) => e.row);
}

// A binary heap ordered so the root is the greatest (worst) entry by `cmp`.
function heapPush<T>(h: T[], e: T, cmp: (a: T, b: T) => number): void {
  let i = h.push(e) - 1;
  while (i > 0) {
    const p = (i - 1) >> 1;
    if (cmp(h[p]!, e) >= 0) break;
    h[i] = h[p]!;
    i = p;
  }
  h[i] = e;
}

function heapReplaceRoot<T>(h: T[], e: T, cmp: (a: T, b: T) => number): void {
  const n = h.length;
  let i = 0;
  for (;;) {
    const l = 2 * i + 1;
    if (l >= n) break;
    const r = l + 1;
    const c = r < n && cmp(h[r]!, h[l]!) > 0 ? r : l;
    if (cmp(h[c]!, e) <= 0) break;
    h[i] = h[c]!;
    i = c;
  }
  h[i] = e;
}
