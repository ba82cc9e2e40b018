// Offer search and GPU names. An offer is a listed machine; its id is the machine id.
import type { Deps } from '../../deps.types.js';
import { OFFER_FIELDS, type FieldValue, type JsContext, type OfferRow } from './offers.fields.js';
import { compileSearch, type SearchPlan } from './offers.filter.js';
import { listedGpuNames, searchRows } from './offers.repo.js';
import { jsContext } from './offers.evaluate.js';
import { readMaintenanceWindows, type WindowView } from '../maintenance/maintenance.service.js';
import { textOf } from '../../../contract/text.js';
import { sharedRead } from '../../db/shared-read.js';
import type { Store } from '../../db/connection.js';

export type Offer = Record<string, number | string | boolean | null | WindowView[]>;

const FIELD_ENTRIES = Object.entries(OFFER_FIELDS);

/** Normalises a result row: booleans from 0/1 (SQLite) or true/false (PostgreSQL), numbers. */
export function offerView(row: Record<string, unknown>, plan: SearchPlan): Offer {
  const out: Offer = {};
  for (const [name, def] of FIELD_ENTRIES) {
    const v = row[name];
    if (def.type === 'bool') out[name] = v === true || v === 1 || v === '1';
    else if (def.type === 'string') out[name] = textOf(v);
    else out[name] = v === null || v === undefined ? null : Number(v);
  }
  out.ask_contract_id = out.id!;
  out.is_bid = plan.type === 'bid';
  out.search_type = plan.type;
  out.allocated_storage = plan.storage;
  return out;
}

/**
 * A builder of an offer's fields `names` (the extras: ask_contract_id, is_bid, search_type,
 * allocated_storage), as offerView would give them for the row searchSql would select for `r`.
 * Generated once per field list as a single object literal with one call site per field: built
 * field by field with computed names, each row took ~8 µs (a property-adding store per field that
 * sees every name), a third of a search. The source holds only field names (checked identifiers)
 * and indexes; every value comes from the fields' own `js` functions.
 */
export function offerBuilder(
  names: readonly string[],
  extras: boolean,
): (r: OfferRow, ctx: JsContext, plan: SearchPlan) => Offer {
  const defs = names.map((n) => {
    const def = OFFER_FIELDS[n];
    if (!def || !/^[a-z_][a-z0-9_]*$/.test(n))
      throw new Error(`offer field name ${n} is not a plain identifier of OFFER_FIELDS`);
    return def;
  });
  const props = names.map((name, i) => {
    const def = defs[i]!;
    const v = `F[${i}](r, c)`;
    const conv = def.type === 'bool' ? `${v} === true` : def.type === 'string' ? `S(${v})` : `N(${v})`;
    return `${name}: ${conv}`;
  });
  const more = extras
    ? ", ask_contract_id: 0, is_bid: plan.type === 'bid', search_type: plan.type, allocated_storage: plan.storage"
    : '';
  const src = `return function offerOf(r, c, plan) {
    const o = { ${props.join(', ')}${more} };
    ${extras ? 'o.ask_contract_id = o.id;' : ''}
    return o;
  };`;
  const S = (v: FieldValue): string => (v === null ? '' : String(v));
  const N = (v: FieldValue): number | null => (v === null ? null : Number(v));
  const make = new Function('F', 'S', 'N', src) as (
    ...args: unknown[]
  ) => (r: OfferRow, ctx: JsContext, plan: SearchPlan) => Offer;
  return make(
    defs.map((d) => d.js),
    S,
    N,
  );
}

/** offerView of the row searchSql would select for `r`: every field and the extras. */
export const offerOf = offerBuilder(Object.keys(OFFER_FIELDS), true);

/**
 * Whether SQL answers a plan faster than the index: ordered by `score` alone (the default order,
 * and the CLI's) and not narrowed to some GPU models or ids, the database walks its score index and
 * stops at the limit, where the index would evaluate every row (timings in bench/RESULTS.md).
 * SQL is as fresh as the database by definition, and with one key and ties by id its order is the
 * index's.
 */
function sqlIsFaster(plan: SearchPlan): boolean {
  if (plan.order.length !== 1 || plan.order[0]!.field !== 'score') return false;
  return !plan.conditions.some(
    (c) =>
      (c.field === 'gpu_name' || c.field === 'id' || c.field === 'machine_id') &&
      (c.op === 'eq' || c.op === 'in'),
  );
}

/**
 * Search: the plan is evaluated over this process's offer index, synced first so the
 * answer is exactly as fresh as the database (offers.index.ts); it gives what searchSql gives.
 */
export async function searchOffers(
  deps: Pick<Deps, 'store' | 'db' | 'dialect' | 'clock' | 'offerIndex'>,
  body: unknown,
): Promise<{ offers: Offer[] }> {
  const page = await searchPage(deps, body, offerOf, (o) => o);
  page.items.forEach((o, i) => (o.maintenances = page.windows.get(page.ids[i]!) ?? []));
  return { offers: page.items };
}

export interface SearchPage<T> {
  /** One per offer of the page, in order: fromRow's or fromSql's value. */
  items: T[];
  /** The offers' ids, in order. */
  ids: number[];
  /** The current and upcoming maintenance windows of the page's machines (absent: none). */
  windows: Map<number, WindowView[]>;
}

/**
 * A search page, each offer made by `fromRow` from its index row, or by `fromSql` from its offer
 * when SQL answered (the reply's JSON keeps per-row pieces: offers.routes.ts). fromRow runs at
 * once, before anything is awaited: a row's numbers belong to the index, which reuses them once
 * the row leaves it, and another request's sync may run at the next await.
 */
export async function searchPage<T>(
  deps: Pick<Deps, 'store' | 'db' | 'dialect' | 'clock' | 'offerIndex'>,
  body: unknown,
  fromRow: (r: OfferRow, ctx: JsContext, plan: SearchPlan) => T,
  fromSql: (o: Offer) => T,
): Promise<SearchPage<T>> {
  const plan = compileSearch(body);
  const now = deps.clock.now();
  let items: T[];
  let ids: number[];
  // The machines of the page that may have live maintenance windows.
  let withWindows: number[];
  if (sqlIsFaster(plan)) {
    const rows = await searchRows(deps.db, deps.dialect, plan, now);
    const offers = rows.map((r) => offerView(r, plan));
    items = offers.map(fromSql);
    ids = offers.map((o) => o.id as number);
    withWindows = ids;
  } else {
    const index = deps.offerIndex;
    await index.sync();
    const ctx = jsContext(plan, now);
    const rows = index.search(plan, now);
    items = rows.map((r) => fromRow(r, ctx, plan));
    ids = rows.map((r) => r.id);
    // From the rows as synced: maint_until moves in the transaction that schedules or cancels a
    // window, so a window committed before this search began is never missed.
    withWindows = index.mayHaveWindows(ids, now);
  }
  // Renters see the machine's current and upcoming maintenance windows on each offer: one query
  // for the machines of the page that may have one (never one per row), none when no machine
  // has, so search stays fast.
  const windows = withWindows.length
    ? await readMaintenanceWindows(deps.store, withWindows, now)
    : new Map<number, WindowView[]>();
  return { items, ids, windows };
}

/**
 * The read of the distinct GPU names currently offered, made once per process (Deps.gpuNameRead,
 * built by makeDeps). Concurrent calls share one read of the store (db/shared-read.ts): each
 * answer is as fresh as a read of its own, and however many callers arrive at once, one
 * statement runs and one waits.
 */
export function gpuNameRead(store: Store): () => Promise<string[]> {
  return sharedRead(() => listedGpuNames(store));
}

/** The distinct GPU names currently offered (the CLI calls it on load, without a key). */
export function gpuNames(deps: Pick<Deps, 'gpuNameRead'>): Promise<string[]> {
  return deps.gpuNameRead();
}
