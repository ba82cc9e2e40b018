// Every SQL statement of the benchmarks module: benchmark rows, the machine's measured figures
// and its verification (changed by conditional UPDATEs, so two changes at once cannot both
// apply from the same state), and the verification history.
import type { Insertable, Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { MachineBenchmarksTable } from '../../db/tables/benchmarks.js';
import type { MachinesTable } from '../../db/tables/market.js';
import { whereFilters, type SelectFilter } from '../../db/filters.js';

const MACHINE_COLS = [
  'id',
  'host_id',
  'agent_uid',
  'gpu_name',
  'num_gpus',
  'gpu_ram',
  'driver_version',
  'cpu_name',
  'dlperf',
  'verified',
  'verification',
  'verification_changed_at',
  'online_state',
  'created_at',
  'hostname',
  'claimed_num_gpus',
  'claimed_gpu_ram',
  'claimed_dlperf',
] as const;

export type VerifiableMachine = NonNullable<Awaited<ReturnType<typeof machineById>>>;

/** A machine's verification state: `verified` decides verified, `verification` deverified. */
export function stateOf(m: {
  verified: number;
  verification: string;
}): 'verified' | 'unverified' | 'deverified' {
  if (m.verified === 1) return 'verified';
  return m.verification === 'deverified' ? 'deverified' : 'unverified';
}

/** A live (not deleted) machine, as verification reads it. */
export function machineById(db: Kysely<DB>, id: number) {
  return db
    .selectFrom('machines')
    .select(MACHINE_COLS)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/** The live machine an agent serves in a slot (before a registration rewrites it). */
export function machineBySlot(db: Kysely<DB>, hostId: number, agentUid: string, slot: number) {
  return db
    .selectFrom('machines')
    .select(MACHINE_COLS)
    .where('host_id', '=', hostId)
    .where('agent_uid', '=', agentUid)
    .where('agent_slot', '=', slot)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

export async function insertBenchmarkRows(
  db: Kysely<DB>,
  rows: Insertable<MachineBenchmarksTable>[],
): Promise<void> {
  if (rows.length > 0) await db.insertInto('machine_benchmarks').values(rows).execute();
}

export type MeasuredFields = Partial<
  Pick<
    MachinesTable,
    | 'cpu_ghz'
    | 'disk_bw'
    | 'inet_up'
    | 'inet_down'
    | 'pcie_bw'
    | 'dlperf'
    | 'gpu_ram'
    | 'num_gpus'
    | 'cpu_cores'
    | 'cpu_name'
    | 'driver_version'
  >
> & {
  gpu_mem_bw?: number;
  total_flops?: number;
  pci_gen?: number;
  compute_cap?: number;
  cpu_arch?: string;
  has_avx?: number;
  ubuntu_version?: string;
  gpu_arch?: string;
  gpu_max_power?: number;
  gpu_max_temp?: number;
  gpu_display_active?: number;
  bw_nvlink?: number;
  mobo_name?: string;
  benchmarked_at?: number;
  claimed_num_gpus?: number;
  claimed_gpu_ram?: number;
  claimed_dlperf?: number;
};

export async function updateMeasured(db: Kysely<DB>, id: number, f: MeasuredFields): Promise<void> {
  if (Object.keys(f).length === 0) return;
  await db.updateTable('machines').set(f).where('id', '=', id).execute();
}

/**
 * Moves a machine's verification from `from` to `to` (verified = 1 exactly when `to` is
 * verified). Conditional on the current state: of two changes from the same state one applies;
 * the other finds no row and records nothing.
 */
export async function moveVerification(
  db: Kysely<DB>,
  id: number,
  from: string,
  to: string,
  now: number,
): Promise<boolean> {
  let q = db
    .updateTable('machines')
    .set({ verification: to, verified: to === 'verified' ? 1 : 0, verification_changed_at: now })
    .where('id', '=', id)
    .where('deleted_at', 'is', null);
  // The state as stateOf reads it: `verified` decides verified (rows written before migration 039
  // or by `admin create-machines` set only it), `verification` tells deverified from unverified.
  if (from === 'verified') q = q.where('verified', '=', 1);
  else if (from === 'deverified') q = q.where('verified', '=', 0).where('verification', '=', 'deverified');
  else q = q.where('verified', '=', 0).where('verification', '<>', 'deverified');
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function insertVerificationEvent(
  db: Kysely<DB>,
  e: {
    machine_id: number;
    from_state: string;
    to_state: string;
    reason: string;
    actor: 'operator' | 'rule';
    created_at: number;
  },
): Promise<void> {
  await db.insertInto('machine_verifications').values(e).execute();
}

export function verificationHistory(db: Kysely<DB>, machineId: number, limit: number) {
  return db
    .selectFrom('machine_verifications')
    .selectAll()
    .where('machine_id', '=', machineId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** The last verification change made by a rule or an operator (to tell who deverified it). */
export function lastVerificationEvent(db: Kysely<DB>, machineId: number) {
  return db
    .selectFrom('machine_verifications')
    .selectAll()
    .where('machine_id', '=', machineId)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/**
 * The rows of a machine's newest benchmark run (none: never benchmarked); with `having`, of its
 * newest run that has a row of that name (the newest that saw a GPU: `gpu_ram`).
 */
export async function lastRun(db: Kysely<DB>, machineId: number, having?: string) {
  let q = db.selectFrom('machine_benchmarks').select('run_at').where('machine_id', '=', machineId);
  if (having !== undefined) q = q.where('name', '=', having);
  const newest = await q.orderBy('run_at', 'desc').limit(1).executeTakeFirst();
  if (!newest) return [];
  return db
    .selectFrom('machine_benchmarks')
    .selectAll()
    .where('machine_id', '=', machineId)
    .where('run_at', '=', newest.run_at)
    .orderBy('id')
    .execute();
}

/** A machine's benchmark rows, newest first. */
export function machineBenchmarks(db: Kysely<DB>, machineId: number, limit: number) {
  return db
    .selectFrom('machine_benchmarks')
    .selectAll()
    .where('machine_id', '=', machineId)
    .orderBy('run_at', 'desc')
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** Benchmark rows of live machines passing the filters (columns of `b`), newest first. */
export function searchBenchmarkRows(db: Kysely<DB>, filters: SelectFilter[], limit: number) {
  const q = db
    .selectFrom('machine_benchmarks as b')
    .innerJoin('machines as m', 'm.id', 'b.machine_id')
    .selectAll('b')
    .where('m.deleted_at', 'is', null);
  return whereFilters(q, filters).orderBy('b.id', 'desc').limit(limit).execute();
}

/**
 * The machine's last `limit` starts created since `since` (ms), newest first: instances that ran,
 * or exited before ever running (`failed`), as reliability counts them. An instance still
 * starting is not a start yet.
 */
export async function recentStarts(db: Kysely<DB>, machineId: number, since: number, limit: number) {
  const rows = await db
    .selectFrom('instances')
    .select(['id', 'user_id', 'running_since', 'actual_status'])
    .where('machine_id', '=', machineId)
    .where('created_at', '>=', since)
    .where((eb) =>
      eb.or([
        eb('running_since', 'is not', null),
        eb.and([eb('running_since', 'is', null), eb('actual_status', '=', 'exited')]),
      ]),
    )
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ id: Number(r.id), renter: Number(r.user_id), failed: r.running_since === null }));
}

/**
 * When the machine last went offline (ms; its host's `machine.offline` event, which the heartbeat
 * sweep and the agent's shutdown record), or null when it never did. Read once per benchmark run
 * of an unverified machine, through the host's events.
 */
export async function lastWentOffline(db: Kysely<DB>, hostId: number, machineId: number) {
  const r = await db
    .selectFrom('events')
    .select('created_at')
    .where('user_id', '=', hostId)
    .where('type', '=', 'machine.offline')
    .where('subject', '=', `machine:${machineId}`)
    .orderBy('seq', 'desc')
    .limit(1)
    .executeTakeFirst();
  return r ? Number(r.created_at) : null;
}

/** The host's address and name, for the verification e-mail. */
export function hostContact(db: Kysely<DB>, hostId: number) {
  return db.selectFrom('users').select(['email', 'full_name']).where('id', '=', hostId).executeTakeFirst();
}
