// Reading instances: v0 list, v1 list with keyset pagination, one instance. Only the caller's
// live (not destroyed) instances are ever shown.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import { instanceView, type InstanceView, type JoinedRow } from './instances.view.js';
import {
  instanceFilterValues as filterValueRows,
  instanceLabelCounts,
  instancePageRows,
  liveInstancesWithWindows,
  liveInstanceWithWindows,
  PAGE_ORDER_KEYS,
  type InstanceWithWindows,
  type PageKeyKind,
} from './instances.repo.js';
import { InstanceErrors } from './instances.errors.js';
import { quoteValue } from '../../errors.js';
import { maintenanceWindowsFor, windowsFromJson } from '../maintenance/maintenance.service.js';
import type { Store } from '../../db/connection.js';
import type { SqlDialect } from '../../db/dialect.js';
import { parseJsonParam, selectFilters, type FilterSpec } from '../../http/select-filters.js';
import { textOf } from '../../../contract/text.js';
import { isActualStatus, type ActualStatus } from '../../../contract/instance-states.js';
import { verificationOf } from '../offers/offers.fields.js';
import { volumeInfoFromJson, type InstanceVolume } from '../volumes/volumes.service.js';

/**
 * Rows as views, each with its machine's maintenance windows (one query for all), or with none
 * when `withWindows` is false (the caller does not show them).
 */
async function views(
  db: Kysely<DB>,
  rows: JoinedRow[],
  now: number,
  withWindows: boolean,
): Promise<InstanceView[]> {
  if (rows.length === 0) return [];
  if (!withWindows) return rows.map((r) => instanceView(r, [], now));
  const windows = await maintenanceWindowsFor(
    db,
    rows.map((r) => r.machine_id),
    now,
  );
  return rows.map((r) => instanceView(r, windows.get(r.machine_id) ?? [], now));
}

/** The v0 list: the caller's live instances by id, each with its machine's maintenance windows. */
export async function listInstances(store: Store, userId: number, now: number): Promise<InstanceView[]> {
  const rows = await liveInstancesWithWindows(store, userId, now);
  return rows.map((r) => withVolumes(r, now));
}

/**
 * A read row as its view, with its machine's windows and the volumes it mounts (the official
 * CLI's show instances prints them from volume_info), both read in the row's own statement.
 * volume_info is added to the view made, not spread into a copy: a copy of a view's 65 fields
 * got a shape of its own, which made both the copy and the reply's serialiser three times
 * slower (together a sixth of a poll's CPU).
 */
export function withVolumes(
  r: InstanceWithWindows,
  now: number,
): InstanceView & { volume_info: InstanceVolume[] } {
  const view = instanceView(r, windowsFromJson(r.windows_json), now) as InstanceView & {
    volume_info: InstanceVolume[];
  };
  view.volume_info = volumeInfoFromJson(r.volumes_json);
  return view;
}

/**
 * One of the caller's instances, or null when missing, destroyed or someone else's. The polling
 * path (clients poll every few seconds): one prepared read with the machine's maintenance windows
 * in a subquery, no query building; or none, given the row that read already returned (`read`:
 * made with the API key lookup, http/auth.ts).
 */
export async function getInstance(
  store: Store,
  userId: number,
  id: number,
  now: number,
  read?: InstanceWithWindows | null,
): Promise<InstanceView | null> {
  const row = read === undefined ? await liveInstanceWithWindows(store, userId, id, now) : read;
  if (!row) return null;
  return withVolumes(row, now);
}

// ---- v1: select_filters, order_by, limit, after_token ---------------------------------------

// `label`: null means unlabeled (the column holds ''); `verification`: the machine's, as offers
// show it ("deverified" is a value of the published API that no openrig machine has).
type Kind = 'int' | 'string' | 'nstring' | 'label' | 'verification';
const VERIFICATION: Record<string, number> = { verified: 1, unverified: 0, deverified: -1 };
const FILTER_COLS: Record<string, { col: string; kind: Kind }> = {
  id: { col: 'i.id', kind: 'int' },
  machine_id: { col: 'i.machine_id', kind: 'int' },
  actual_status: { col: 'i.actual_status', kind: 'nstring' },
  intended_status: { col: 'i.intended_status', kind: 'string' },
  label: { col: 'i.label', kind: 'label' },
  image_uuid: { col: 'i.image', kind: 'string' },
  gpu_name: { col: 'm.gpu_name', kind: 'string' },
  verification: { col: 'm.verified', kind: 'verification' },
  num_gpus: { col: 'm.num_gpus', kind: 'int' },
};
export const V1_DEFAULT_LIMIT = 25;
export const V1_MAX_LIMIT = 1000;
/** The columns order_by takes. */
export const V1_ORDER_COLUMNS: readonly string[] = Object.keys(PAGE_ORDER_KEYS);
/** At most this many names in select_cols (a row has fewer fields than that). */
export const V1_MAX_SELECT_COLS = 200;

const bad = (msg: string) => InstanceErrors.badRequest(msg);

const parseJson = (name: string, raw: unknown): unknown => parseJsonParam(name, raw, bad);

/** The v1 list's select_filters: its fields, each value coerced to its column's kind. */
const FILTERS: FilterSpec<Kind> = {
  fields: FILTER_COLS,
  coerce,
  ordered: (kind) => kind === 'int',
  bad,
};

function coerce(field: string, kind: Kind, v: unknown): string | number | null {
  if (v === null && kind === 'nstring') return null;
  if (v === null && kind === 'label') return '';
  if (kind === 'verification') {
    if (typeof v !== 'string' || !Object.hasOwn(VERIFICATION, v))
      throw bad(
        `select_filters: verification takes verified, unverified or deverified, not ${quoteValue(v)}`,
      );
    return VERIFICATION[v]!;
  }
  if (kind === 'int') {
    const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
    if (!Number.isSafeInteger(n)) throw bad(`select_filters: ${field} takes integers, not ${quoteValue(v)}`);
    return n;
  }
  if (typeof v === 'number') return String(v);
  if (typeof v !== 'string') throw bad(`select_filters: ${field} takes strings, not ${quoteValue(v)}`);
  return v;
}

export interface V1Query {
  select_filters?: unknown;
  order_by?: unknown;
  limit?: unknown;
  after_token?: unknown;
  select_cols?: unknown;
}

/**
 * The fields select_cols asks for, or null for all of them (no select_cols, or one naming "*").
 * Names a row does not have are ignored: clients ask for fields of the published API that
 * openrig does not serve.
 */
function parseSelectCols(raw: unknown): Set<string> | null {
  const cols = parseJson('select_cols', raw);
  if (cols === undefined) return null;
  if (Array.isArray(cols) && cols.length > V1_MAX_SELECT_COLS)
    throw bad(`select_cols names at most ${V1_MAX_SELECT_COLS} fields`);
  if (!Array.isArray(cols) || cols.some((c) => typeof c !== 'string'))
    throw bad('select_cols must be a JSON array of field names (strings), or ["*"] for all');
  const names = cols as string[];
  return names.includes('*') ? null : new Set(names);
}

/** The row with only the fields in `cols` that it has, and `id` always. */
export function projectInstance(row: InstanceView, cols: ReadonlySet<string> | null): Partial<InstanceView> {
  if (cols === null) return row;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) if (k === 'id' || cols.has(k)) out[k] = v;
  return out;
}

interface Token {
  o: string;
  v: (string | number)[];
}

export async function listInstancesV1(
  on: { db: Kysely<DB>; dialect: SqlDialect },
  userId: number,
  q: V1Query,
  now: number,
): Promise<{
  instances: Partial<InstanceView>[];
  next_token: string | null;
  instances_found: number;
  total_instances: number;
  label_counts: Record<string, number>;
}> {
  const conds = selectFilters(parseJson('select_filters', q.select_filters), FILTERS);
  const orderRaw = parseJson('order_by', q.order_by) ?? [{ col: 'id', dir: 'asc' }];
  if (!Array.isArray(orderRaw) || orderRaw.length > 4)
    throw bad('order_by must be a JSON array of {"col", "dir"} (at most 4)');
  type OrderKey = { name: string; kind: PageKeyKind; dir: 'asc' | 'desc' };
  const order = orderRaw.map((o: unknown): OrderKey => {
    const e = o as { col?: unknown; dir?: unknown };
    if (!e || typeof e.col !== 'string' || !Object.hasOwn(PAGE_ORDER_KEYS, e.col))
      throw bad(`order_by: unknown column ${quoteValue(e?.col)} (use ${V1_ORDER_COLUMNS.join(', ')})`);
    const dir = e.dir === undefined ? 'asc' : textOf(e.dir).toLowerCase();
    if (dir !== 'asc' && dir !== 'desc')
      throw bad(`order_by: dir must be asc or desc, not ${quoteValue(e.dir)}`);
    return { name: e.col, kind: PAGE_ORDER_KEYS[e.col]!.kind, dir: dir };
  });
  // Ties are broken by id, so every instance has one place in the order and pages are stable.
  if (!order.some((o) => o.name === 'id')) order.push({ name: 'id', kind: 'int', dir: 'asc' });
  let limit = V1_DEFAULT_LIMIT;
  if (q.limit !== undefined && q.limit !== '') {
    limit = typeof q.limit === 'number' ? q.limit : /^\d+$/.test(textOf(q.limit)) ? Number(q.limit) : NaN;
    if (!Number.isInteger(limit) || limit < 1 || limit > V1_MAX_LIMIT)
      throw bad(`limit must be an integer from 1 to ${V1_MAX_LIMIT}`);
  }
  const signature = order.map((o) => `${o.name}:${o.dir}`).join(',');
  const cols = parseSelectCols(q.select_cols);

  let after: (string | number)[] | null = null;
  if (q.after_token !== undefined && q.after_token !== '') {
    let tok: Token;
    try {
      tok = JSON.parse(Buffer.from(textOf(q.after_token), 'base64url').toString('utf8')) as Token;
    } catch {
      throw bad('after_token is not a token this API gave out');
    }
    if (!tok || tok.o !== signature || !Array.isArray(tok.v) || tok.v.length !== order.length)
      throw bad('after_token does not belong to this order_by');
    // A token is the client's to tamper with: every value must have its column's type.
    order.forEach((o, i) => {
      const v = tok.v[i];
      const ok =
        o.kind === 'int'
          ? Number.isSafeInteger(v)
          : o.kind === 'real'
            ? Number.isFinite(v)
            : typeof v === 'string';
      if (!ok) throw bad('after_token is not a token this API gave out');
    });
    after = tok.v;
  }
  const [rows, labels] = await Promise.all([
    instancePageRows(on, userId, { filters: conds, order, after, limit: limit + 1 }),
    instanceLabelCounts(on.db, userId, conds),
  ]);
  const page = rows.slice(0, limit);
  let next: string | null = null;
  if (rows.length > limit) {
    // The last row's values of the keys as the database computed them, so the next page's
    // comparison meets the same values (a double survives JSON exactly).
    const vals = page[page.length - 1]!.key;
    next = Buffer.from(JSON.stringify({ o: signature, v: vals } satisfies Token)).toString('base64url');
  }
  const out = (
    await views(
      on.db,
      page.map((p) => p.row),
      now,
      cols === null || cols.has('maintenances'),
    )
  ).map((v) => projectInstance(v, cols));
  return {
    instances: out,
    next_token: next,
    instances_found: out.length,
    // Every page counts all the instances the filters select, unlabeled ones under "".
    total_instances: labels.reduce((t, l) => t + l.n, 0),
    // fromEntries makes every label an own property, "__proto__" included.
    label_counts: Object.fromEntries(labels.map((l) => [l.label, l.n])),
  };
}

/**
 * The values the v1 filters can usefully take: each distinct combination of status, machine
 * verification and GPU among the caller's live instances.
 */
export async function instanceFilterValues(
  db: Kysely<DB>,
  userId: number,
): Promise<{ actual_status: ActualStatus; verification: string; gpu_name: string }[]> {
  const rows = (await filterValueRows(db, userId)).map((r) => ({
    actual_status: isActualStatus(r.actual_status) ? r.actual_status : null,
    verification: verificationOf(r.verified),
    gpu_name: r.gpu_name,
  }));
  // Sorted here, the same on both databases (they place NULL differently): no status first.
  const key = (r: (typeof rows)[number]) => [r.actual_status ?? '', r.verification, r.gpu_name];
  return rows.sort((a, b) => {
    const [x, y] = [key(a), key(b)];
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
    return 0;
  });
}
