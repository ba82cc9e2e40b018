// Queries of maintenance scheduling. Reads of machines and instances only.
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { SqlDialect, Store } from '../../db/connection.js';
import type { MaintenanceWindowsTable } from '../../db/tables/maintenance.js';
import type { MachineInfo } from './maintenance.mail.js';
import { chunks, IDS_PER_STATEMENT } from '../../db/chunks.js';

/** Advisory-lock namespace of maintenance scheduling ('main' as a 32-bit integer). */
const LOCK_NS = 0x6d61696e;

/**
 * Serialises maintenance scheduling on these machines for the rest of the transaction
 * (SqlDialect.lockKeys): it never holds up other modules' writes to `machines` (agent
 * heartbeats, sweeps). A machine's deletion takes it too, before it marks the machine deleted.
 */
export function lockMaintenance(db: Kysely<DB>, dialect: SqlDialect, ids: number[]): Promise<void> {
  return dialect.lockKeys(db, LOCK_NS, ids);
}

/**
 * The caller's live machines among `ids`, with scheduling on them serialised for the rest of the
 * transaction, so the overlap check that follows can't be raced by a concurrent schedule. The
 * lock is taken before the machines are read: a deletion holding it has committed by then, and
 * its machine reads deleted.
 */
export async function lockOwnedMachines(
  db: Kysely<DB>,
  dialect: SqlDialect,
  hostId: number,
  ids: number[],
): Promise<MachineInfo[]> {
  if (ids.length === 0) return [];
  await lockMaintenance(db, dialect, [...new Set(ids)]);
  return db
    .selectFrom('machines')
    .select(['id', 'gpu_name', 'num_gpus', 'hostname'])
    .where('id', 'in', ids)
    .where('host_id', '=', hostId)
    .where('deleted_at', 'is', null)
    .orderBy('id')
    .execute();
}

/** Live (not cancelled, not ended) windows on these machines that overlap [start, end). */
export async function findOverlaps(
  db: Kysely<DB>,
  machineIds: number[],
  startMs: number,
  endMs: number,
  now: number,
) {
  if (machineIds.length === 0) return [];
  return db
    .selectFrom('maintenance_windows')
    .select(['id', 'machine_id', 'start_time', 'end_time'])
    .where('machine_id', 'in', machineIds)
    .where('canceled_at', 'is', null)
    .where('end_time', '>', now)
    .where('start_time', '<', endMs)
    .where('end_time', '>', startMs)
    .orderBy('start_time')
    .execute();
}

export interface AffectedInstance {
  instance_id: number;
  machine_id: number;
  user_id: number;
  email: string;
  full_name: string;
}

/**
 * Instances whose clients are notified: live (destroyed_at null) and meant to be running or
 * stopped (intended_status 'running' | 'stopped'), whatever their actual_status.
 */
export async function affectedInstances(db: Kysely<DB>, machineIds: number[]): Promise<AffectedInstance[]> {
  if (machineIds.length === 0) return [];
  return db
    .selectFrom('instances as i')
    .innerJoin('users as u', 'u.id', 'i.user_id')
    .select(['i.id as instance_id', 'i.machine_id', 'i.user_id', 'u.email', 'u.full_name'])
    .where('i.machine_id', 'in', machineIds)
    .where('i.destroyed_at', 'is', null)
    .where('i.intended_status', 'in', ['running', 'stopped'])
    .orderBy('i.machine_id')
    .orderBy('i.user_id')
    .orderBy('i.id')
    .execute();
}

/** A window to insert: every column but the generated id and the cancellation. */
export type NewWindow = Omit<Selectable<MaintenanceWindowsTable>, 'id' | 'canceled_at'>;

/** Inserts the windows and raises their machines' maint_until with them (same transaction). */
export async function insertWindows(db: Kysely<DB>, rows: NewWindow[]): Promise<Map<number, number>> {
  const ids = new Map<number, number>();
  for (const part of chunks(rows, 100)) {
    const res = await db
      .insertInto('maintenance_windows')
      .values(part)
      .returning(['id', 'machine_id'])
      .execute();
    for (const r of res) ids.set(r.machine_id, r.id);
  }
  const byEnd = new Map<number, number[]>();
  for (const r of rows) {
    const list = byEnd.get(r.end_time);
    if (list) list.push(r.machine_id);
    else byEnd.set(r.end_time, [r.machine_id]);
  }
  for (const [end, machineIds] of byEnd) await raiseMaintUntil(db, machineIds, end);
  return ids;
}

/**
 * A window ending at `end` was scheduled on these machines: their maint_until (the latest end of
 * their windows not cancelled) rises to it where it is lower. Rows already there are not written.
 */
async function raiseMaintUntil(db: Kysely<DB>, machineIds: number[], end: number): Promise<void> {
  for (const part of chunks(machineIds, IDS_PER_STATEMENT)) {
    await db
      .updateTable('machines')
      .set({ maint_until: end })
      .where('id', 'in', part)
      .where((eb) => eb.or([eb('maint_until', 'is', null), eb('maint_until', '<', end)]))
      .execute();
  }
}

/** Windows of these machines were cancelled: their maint_until is taken again from the rest. */
async function recomputeMaintUntil(db: Kysely<DB>, machineIds: number[]): Promise<void> {
  for (const part of chunks(machineIds, IDS_PER_STATEMENT)) {
    await db
      .updateTable('machines')
      .set((eb) => ({
        maint_until: eb
          .selectFrom('maintenance_windows as w')
          .select((w) => w.fn.max('w.end_time').as('until'))
          .whereRef('w.machine_id', '=', 'machines.id')
          .where('w.canceled_at', 'is', null),
      }))
      .where('id', 'in', part)
      .execute();
  }
}

/**
 * Cancels the live windows (not ended, not cancelled) of the caller's machines among `ids` with
 * one conditional UPDATE … RETURNING: two concurrent cancels can't both claim one window. Their
 * machines' maint_until is taken again from the windows left (same transaction).
 */
export async function cancelWindows(db: Kysely<DB>, hostId: number, ids: number[], now: number) {
  if (ids.length === 0) return [];
  const cancelled = await db
    .updateTable('maintenance_windows')
    .set({ canceled_at: now })
    .where('machine_id', 'in', (eb) =>
      eb
        .selectFrom('machines')
        .select('id')
        .where('id', 'in', ids)
        .where('host_id', '=', hostId)
        .where('deleted_at', 'is', null),
    )
    .where('canceled_at', 'is', null)
    .where('end_time', '>', now)
    .returning(['id', 'machine_id', 'start_time', 'end_time', 'duration_hours', 'category'])
    .execute();
  await recomputeMaintUntil(db, [...new Set(cancelled.map((c) => c.machine_id))]);
  return cancelled;
}

/**
 * Cancels the live windows (not ended, not cancelled) of one machine the caller has just deleted
 * (its ownership checked by that deletion, in the same transaction); conditional like
 * cancelWindows. Its maint_until is taken again from the windows left.
 */
export async function cancelWindowsOfMachine(db: Kysely<DB>, machineId: number, now: number) {
  const cancelled = await db
    .updateTable('maintenance_windows')
    .set({ canceled_at: now })
    .where('machine_id', '=', machineId)
    .where('canceled_at', 'is', null)
    .where('end_time', '>', now)
    .returning(['id', 'machine_id', 'start_time', 'end_time', 'duration_hours', 'category'])
    .execute();
  if (cancelled.length > 0) await recomputeMaintUntil(db, [machineId]);
  return cancelled;
}

/** The machines' details for e-mails (no lock: read for text only). */
export async function machineInfos(db: Kysely<DB>, ids: number[]): Promise<MachineInfo[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('machines')
    .select(['id', 'gpu_name', 'num_gpus', 'hostname'])
    .where('id', 'in', ids)
    .execute();
}

export async function ownedMachineIds(db: Kysely<DB>, hostId: number, ids: number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  const rows = await db
    .selectFrom('machines')
    .select('id')
    .where('id', 'in', ids)
    .where('host_id', '=', hostId)
    .where('deleted_at', 'is', null)
    .execute();
  return new Set(rows.map((r) => r.id));
}

const viewColumns = [
  'w.id',
  'w.machine_id',
  'w.start_time',
  'w.end_time',
  'w.duration_hours',
  'w.category',
] as const;

/** The live windows of the caller's machines (optionally only `machineIds`), by start time. */
export async function listHostWindows(
  db: Kysely<DB>,
  hostId: number,
  machineIds: number[] | null,
  now: number,
) {
  let q = db
    .selectFrom('maintenance_windows as w')
    .innerJoin('machines as m', 'm.id', 'w.machine_id')
    .select(viewColumns)
    .where('m.host_id', '=', hostId)
    .where('m.deleted_at', 'is', null)
    .where('w.canceled_at', 'is', null)
    .where('w.end_time', '>', now);
  if (machineIds) q = q.where('w.machine_id', 'in', machineIds.length ? machineIds : [0]);
  return q.orderBy('w.start_time').orderBy('w.id').execute();
}

/** The live windows of any machines (renters' views of instances and offers). */
export async function listMachineWindows(db: Kysely<DB>, machineIds: number[], now: number) {
  if (machineIds.length === 0) return [];
  const out = [];
  for (const part of chunks(machineIds, IDS_PER_STATEMENT)) {
    out.push(
      ...(await db
        .selectFrom('maintenance_windows as w')
        .select(viewColumns)
        .where('w.machine_id', 'in', part)
        .where('w.canceled_at', 'is', null)
        .where('w.end_time', '>', now)
        .orderBy('w.start_time')
        .orderBy('w.id')
        .execute()),
    );
  }
  return out;
}

/**
 * listMachineWindows on Store.read: one statement text whatever the number of ids (a JSON array
 * on SQLite, an array parameter on PostgreSQL), so it is prepared once.
 */
export async function readMachineWindows(
  store: Store,
  machineIds: number[],
  now: number,
): Promise<WindowRow[]> {
  if (machineIds.length === 0) return [];
  const d = store.dialect;
  // One machine (an instance poll): a plain equality, the cheapest plan.
  const one = machineIds.length === 1;
  const match = one ? `w.machine_id = ${d.param(1)}` : d.inIds('w.machine_id', 1);
  const text = `SELECT ${viewColumns.join(', ')} FROM maintenance_windows w WHERE ${match} AND w.canceled_at IS NULL AND w.end_time > ${d.param(2)} ORDER BY w.start_time, w.id`;
  return store.read<WindowRow>(text, [one ? machineIds[0] : d.idsParam(machineIds), now]);
}

/**
 * One machine's live windows as a JSON array, for a correlated subquery (the instance poll reads
 * its row and its windows in one statement: one round trip fewer on PostgreSQL).
 */
export function windowsJson(
  dialect: SqlDialect,
  machineId: RawBuilder<unknown>,
  now: number,
): RawBuilder<unknown> {
  return dialect.jsonRows(
    'w',
    ['id', 'machine_id', 'start_time', 'end_time', 'duration_hours', 'category'],
    sql`maintenance_windows w WHERE w.machine_id = ${machineId} AND w.canceled_at IS NULL AND w.end_time > ${now}`,
    'w.start_time, w.id',
  );
}

export interface WindowRow {
  id: number;
  machine_id: number;
  start_time: number;
  end_time: number;
  duration_hours: number;
  category: string;
}
