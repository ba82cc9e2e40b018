// Evaluates a validated SearchPlan (offers.filter.ts) over in-memory machine rows, giving exactly
// what searchSql gives over the database (offers.index.int.test.ts checks it against
// searchSql on both dialects). Pure.
// - The implicit filters of searchSql: deleted machines are not in the index at all; then disk_space
//   >= allocated_storage, `listed` unless the filter names listed/rentable, `rented = 0` unless it
//   names rented/rentable, bid ⇒ min_bid_dph > 0, and free disk >= allocated_storage.
// - SQL NULL semantics: a WHERE conjunct holds only when it is TRUE, so a comparison with a NULL
//   value fails, also under NOT / neq / notin. (No field's value is NULL today; a compareAs number
//   is, for a value that makes none: driver_version's for a text that is no version.)
// - Conditions and orders compare a field's compareAs number where it has one (compareJs), as
//   searchSql does.
// - Order: the plan's order, then id ASC. NULLs and strings order as SQLite orders them: NULL
//   smallest (first ascending, last descending), strings by code point (SQLite's BINARY collation
//   compares UTF-8 bytes, which is code-point order). PostgreSQL differs there (NULLS LAST
//   ascending, strings by the database collation) and the index does not follow it: one order for
//   both dialects (searchSql states SQLite's NULL order for a compareAs number on both).
import { OFFER_FIELDS, compareJs, type FieldValue, type JsContext, type OfferRow } from './offers.fields.js';
import type { Condition, SearchPlan } from './offers.filter.js';
import { compileKey, compileTester } from './offers.tester.js';

export function jsContext(plan: SearchPlan, now: number): JsContext {
  return { bid: plan.type === 'bid', storage: plan.storage, now: Math.trunc(now) };
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

/**
 * Rows a search can draw from: an index bucket, or a list made for one search. A bucket has a
 * `version` its owner moves on every change of its rows and `views` to keep sorted copies in.
 */
export interface RowSource {
  readonly rows: readonly OfferRow[];
  readonly version?: number;
  readonly views?: Map<string, OrderView>;
}

/**
 * A bucket's rows sorted by one plan order in one context, kept while the bucket is unchanged. A
 * search walks it from the top and stops at the limit's count of matching rows, instead of keying
 * and heaping every row of the bucket (about 0.3 ms over 2,000 rows). Built on a bucket's second
 * search by the same order at the same version, so a bucket that changes between every search
 * never pays for sorting.
 */
export interface OrderView {
  version: number;
  entries: Entry[] | null;
}

/** Views per bucket at most (order × type × allocated_storage in use); more clears them. */
const MAX_VIEWS = 8;

/**
 * Whether a plan's order may be served from a kept view: its keys must not depend on the time of
 * the search (duration, listed, rentable do), since a view outlives the request that built it.
 */
function viewKey(plan: SearchPlan, ctx: JsContext): string | null {
  if (plan.order.some((o) => OFFER_FIELDS[o.field]!.usesNow)) return null;
  return `${plan.order.map((o) => `${o.field} ${o.dir}`).join(',')}|${ctx.bid ? 'bid' : ''}|${ctx.storage}`;
}

/** Rows from `sources` matching the plan, in the plan's order then id, at most plan.limit. */
export function selectPage(
  sources: readonly RowSource[],
  plan: SearchPlan,
  ctx: JsContext,
  settled?: ReadonlySet<Condition>,
): OfferRow[] {
  const test = compileTester(plan, ctx, settled);
  if (!test) return [];
  const [first, ...rest] = plan.order.map((o) => ({
    js: compareJs(OFFER_FIELDS[o.field]!),
    sign: o.dir === 'desc' ? -1 : 1,
  }));
  const firstKey = first ? compileKey(plan.order[0]!.field, ctx) : null;
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
  const entry = (row: OfferRow): Entry => {
    let more: FieldValue[] | null = null;
    if (rest.length) {
      more = [];
      for (const o of rest) more.push(o.js(row, ctx));
    }
    return { row, k: firstKey ? firstKey(row) : null, more };
  };
  const limit = plan.limit;
  const key = viewKey(plan, ctx);
  // Each source's best `limit` matching entries, in order; the page is the best of their union.
  const pages: Entry[][] = [];
  for (const src of sources) {
    const sorted = key === null ? null : viewOf(src, key, entry, cmp);
    if (sorted) {
      const page: Entry[] = [];
      for (let j = 0; j < sorted.length && page.length < limit; j++)
        if (test(sorted[j]!.row)) page.push(sorted[j]!);
      pages.push(page);
      continue;
    }
    // The best `limit` entries: a heap whose root is the worst kept, so most rows are refused after
    // one comparison with it. Then the kept ones are sorted.
    const heap: Entry[] = [];
    const rows = src.rows;
    for (let j = 0; j < rows.length; j++) {
      const row = rows[j]!;
      if (!test(row)) continue;
      const e = entry(row);
      if (heap.length < limit) heapPush(heap, e, cmp);
      else if (cmp(e, heap[0]!) < 0) heapReplaceRoot(heap, e, cmp);
    }
    pages.push(heap.sort(cmp));
  }
  const all = pages.length === 1 ? pages[0]! : pages.flat().sort(cmp).slice(0, limit);
  return all.map((e) => e.row);
}

/** The source's rows sorted for `key`, when kept or worth keeping now; null: scan it. */
function viewOf(
  src: RowSource,
  key: string,
  entry: (row: OfferRow) => Entry,
  cmp: (a: Entry, b: Entry) => number,
): Entry[] | null {
  const views = src.views;
  const version = src.version;
  if (!views || version === undefined) return null;
  const v = views.get(key);
  if (v && v.version === version) {
    if (!v.entries) v.entries = src.rows.map(entry).sort(cmp);
    return v.entries;
  }
  if (!v && views.size >= MAX_VIEWS) views.clear();
  views.set(key, { version, entries: null });
  return null;
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
