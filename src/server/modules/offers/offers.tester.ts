// searchSql's WHERE clause as one generated JavaScript function per plan shape.
// Semantics (see offers.evaluate.ts): every conjunct must be TRUE; a comparison with a NULL value
// is not (also under NOT / neq / notin); bool conditions compare by truth; empty in/notin lists
// are constants; the implicit filters are as in searchSql.
//
// Why generated: a scan calls the conditions for thousands of rows per search. As closures, each
// condition called its field's function from one shared call site that saw every field, so no
// call was inlined (~40 ns a condition a row). Here each condition is its own call site of its
// own field's `js` function, so V8 inlines it to a property read (and a field's alsoMatches key,
// K, likewise). The source holds only indexes
// into fixed tables, operators from a fixed list and `true`/`false`; every value of the request
// is passed in (V, S), never written into the source. One compiled factory per shape, cached.
import {
  OFFER_FIELDS,
  compareJs,
  freeDiskJs,
  type FieldValue,
  type JsContext,
  type OfferRow,
} from './offers.fields.js';
import { alsoMatchKeys, type Condition, type Scalar, type SearchPlan } from './offers.filter.js';

export type Predicate = (r: OfferRow) => boolean;

const FIELD_NAMES = Object.keys(OFFER_FIELDS);
/** What each field's conditions compare (compareJs: its compareAs number, else its value). */
const FIELD_FNS = FIELD_NAMES.map((f) => compareJs(OFFER_FIELDS[f]!));
/** Each field's alsoMatches key (null: none), by the same index. */
const KEY_FNS = FIELD_NAMES.map((f) => OFFER_FIELDS[f]!.alsoMatches?.js ?? null);
const FIELD_INDEX = new Map(FIELD_NAMES.map((f, i) => [f, i]));
const CMP = { eq: '===', neq: '!==', gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

type Factory = (V: readonly Scalar[], S: readonly Set<unknown>[], c: JsContext) => Predicate;
const factories = new Map<string, Factory>();

function factoryFor(body: string): Factory {
  let f = factories.get(body);
  if (!f) {
    const fields = [
      ...FIELD_NAMES.map((_, i) => `const F${i} = F[${i}];`),
      ...KEY_FNS.flatMap((k, i) => (k ? [`const K${i} = K[${i}];`] : [])),
    ].join(' ');
    const make = new Function(
      'F',
      'K',
      'LISTED',
      'FREE_DISK',
      `${fields} return function (V, S, c) { return function (r) { let x; return ${body}; }; };`,
    ) as (...fns: unknown[]) => Factory;
    f = make(FIELD_FNS, KEY_FNS, OFFER_FIELDS.listed!.js, freeDiskJs);
    // Bounded like the statement cache: shapes are few, but a client could vary them.
    if (factories.size >= 1000) factories.clear();
    factories.set(body, f);
  }
  return f;
}

/**
 * The plan's WHERE as one predicate; null when no row can match. `settled`: conditions every row
 * given already meets (the index chose the rows by them). Order of the conjuncts is free (they
 * are pure): the filter's eq/in conditions first, its others next, the implicit filters last.
 */
export function compileTester(
  plan: SearchPlan,
  ctx: JsContext,
  settled: ReadonlySet<Condition> = new Set(),
): Predicate | null {
  const V: Scalar[] = [];
  const S: Set<unknown>[] = [];
  const terms: string[] = [];
  const isEq = (c: Condition) => Number(c.op === 'eq' || c.op === 'in');
  for (const c of [...plan.conditions].sort((a, b) => isEq(b) - isEq(a))) {
    if (settled.has(c)) continue;
    const def = OFFER_FIELDS[c.field]!;
    const get = `F${FIELD_INDEX.get(c.field)!}(r, c)`;
    if (def.type === 'bool') {
      // As searchSql: both truths asked is a constant, none is a constant, else e or NOT e.
      const vs = Array.isArray(c.value) ? c.value : [c.value];
      const positive = c.op === 'eq' || c.op === 'in';
      const wantTrue = vs.includes(true);
      const wantFalse = vs.includes(false);
      if (wantTrue && wantFalse) {
        if (positive) continue;
        return null;
      }
      if (!wantTrue && !wantFalse) {
        if (!positive) continue;
        return null;
      }
      terms.push(`${get} === ${wantTrue === positive ? 'true' : 'false'}`);
      continue;
    }
    const also = def.alsoMatches;
    if (also) {
      // As searchSql: the value is one of the values, or the row's key one of their keys.
      const vs = Array.isArray(c.value) ? c.value : [c.value];
      const positive = c.op === 'eq' || c.op === 'in';
      if (vs.length === 0) {
        if (!positive) continue;
        return null;
      }
      S.push(new Set(vs));
      let hit = `S[${S.length - 1}].has(x)`;
      const keys = alsoMatchKeys(c, also);
      if (keys.length) {
        S.push(new Set(keys));
        hit = `(${hit} || S[${S.length - 1}].has(K${FIELD_INDEX.get(c.field)!}(r)))`;
      }
      terms.push(`(x = ${get}) !== null && ${positive ? '' : '!'}${hit}`);
      continue;
    }
    if (c.op === 'in' || c.op === 'notin') {
      const vs = c.value as Scalar[];
      if (vs.length === 0) {
        if (c.op === 'notin') continue;
        return null;
      }
      S.push(new Set(vs));
      terms.push(`(x = ${get}) !== null && ${c.op === 'notin' ? '!' : ''}S[${S.length - 1}].has(x)`);
      continue;
    }
    V.push(c.value as Scalar);
    terms.push(`(x = ${get}) !== null && x ${CMP[c.op]} V[${V.length - 1}]`);
  }
  terms.push('r.disk_space >= c.storage');
  if (plan.type === 'bid') terms.push('r.min_bid_dph > 0');
  const named = new Set(plan.conditions.map((c) => c.field));
  if (!named.has('listed') && !named.has('rentable')) terms.push('LISTED(r, c) === true');
  if (!named.has('rented') && !named.has('rentable'))
    terms.push('(r.rented === 0 || r.bid_to_win_dph !== null)');
  if (plan.storage > 0) terms.push('FREE_DISK(r) >= c.storage');
  return factoryFor(terms.map((t) => `(${t})`).join(' && '))(V, S, ctx);
}

const keys = new Map<string, (c: JsContext) => (r: OfferRow) => unknown>();

/**
 * What a field orders by (compareJs), as an order key from a call site of its own (inlined like
 * the conditions).
 */
export function compileKey(field: string, ctx: JsContext): (r: OfferRow) => FieldValue {
  let k = keys.get(field);
  if (!k) {
    const make = new Function('F', 'return function (c) { return function (r) { return F(r, c); }; };') as (
      fn: unknown,
    ) => (c: JsContext) => (r: OfferRow) => unknown;
    k = make(compareJs(OFFER_FIELDS[field]!));
    keys.set(field, k);
  }
  return k(ctx) as (r: OfferRow) => FieldValue;
}
