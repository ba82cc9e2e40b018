// Every SQL statement of the machines module.
//
// The `machines.rented` flag is 1 exactly while the machine holds an ACTIVE instance (not
// destroyed, intended_status not 'stopped'). It is kept in step by conditional updates in the
// transaction that makes an instance active (create, start) or inactive (stop, destroy of the
// active one, balance exhausted); the partial unique index instances_one_live_per_machine backs it
// (migration 002).
import { sql, type Insertable, type Kysely, type Selectable, type UpdateObject } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { MachinesTable } from '../../db/tables/market.js';
import { chunks, IDS_PER_STATEMENT } from '../../db/chunks.js';

export type MachineRow = Selectable<MachinesTable>;

/**
 * Claims machine `id` for an instance becoming active (rented 0 → 1); returns the machine, or
 * undefined when the claim failed. The conditional UPDATE decides a race (never read-then-write):
 * of concurrent claims exactly one changes the row; the others (on PostgreSQL after waiting for
 * the winner's commit) see rented = 1 and fail. With `offeredAt` (a new rental) the machine must
 * also be an offer at that time: listed, the listing not ended, and its host not known offline.
 */
export async function claimMachine(
  trx: Kysely<DB>,
  id: number,
  offeredAt: number | null = null,
): Promise<MachineRow | undefined> {
  // A machine held only by a bid (bid_to_win_dph set) is claimable too: an on-demand or owner
  // rental outranks every bid, and the caller preempts the bid holder in this transaction
  // (instances.market.ts) before its own instance becomes active (the unique index backs it).
  let q = trx
    .updateTable('machines')
    .set({ rented: 1, bid_to_win_dph: null })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('rented', '=', 0), eb('bid_to_win_dph', 'is not', null)]))
    .where('deleted_at', 'is', null);
  if (offeredAt !== null)
    q = q
      .where('listed', '=', 1)
      .where((eb) => eb.or([eb('listed_until', 'is', null), eb('listed_until', '>', offeredAt)]))
      .where(sql<boolean>`not (online_state = 'offline' and last_heartbeat_at is not null)`);
  return q.returningAll().executeTakeFirst();
}

/** Why a machine could not be claimed: its row's flags, undefined when there is none. */
export function claimState(trx: Kysely<DB>, id: number) {
  return trx
    .selectFrom('machines')
    .select(['id', 'rented', 'listed', 'deleted_at'])
    .where('id', '=', id)
    .executeTakeFirst();
}

/**
 * Frees machine `id`. Call it only in the transaction whose conditional UPDATE just made the
 * machine's active instance inactive: that instance held the flag, so no one else's is cleared.
 */
export async function releaseMachine(trx: Kysely<DB>, id: number): Promise<void> {
  await trx
    .updateTable('machines')
    .set({ rented: 0, bid_to_win_dph: null })
    .where('id', '=', id)
    .where('rented', '=', 1)
    .execute();
}

/**
 * Locks machine `id`'s row for the rest of the transaction (a write that changes nothing, so no
 * version moves) and returns it: every claim and release of the machine writes this row, so the
 * market's decisions on it (instances.market.ts) are serialised by the database. Undefined when
 * there is no such machine.
 */
export function lockMachine(trx: Kysely<DB>, id: number): Promise<MachineRow | undefined> {
  return trx
    .updateTable('machines')
    .set((eb) => ({ rented: eb.ref('rented') }))
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/**
 * Records who holds machine `id`, in the transaction that locked it and moved its instances:
 * `bidToWin` is the lowest bid that takes it while a bid holds it, null for an on-demand or owner
 * holder (or none).
 */
export async function setMachineHolder(
  trx: Kysely<DB>,
  id: number,
  rented: boolean,
  bidToWin: number | null,
): Promise<void> {
  await trx
    .updateTable('machines')
    .set({ rented: rented ? 1 : 0, bid_to_win_dph: rented ? bidToWin : null })
    .where('id', '=', id)
    .execute();
}

/** Adds (or with a negative `mb` gives back) disk held on a machine: an atomic increment. */
export async function holdDisk(trx: Kysely<DB>, id: number, mb: number): Promise<void> {
  await trx
    .updateTable('machines')
    .set((eb) => ({ disk_held_mb: eb('disk_held_mb', '+', mb) }))
    .where('id', '=', id)
    .execute();
}

export async function insertMachineRows(
  db: Kysely<DB>,
  rows: Insertable<MachinesTable>[],
): Promise<number[]> {
  if (rows.length === 0) return [];
  const res = await db.insertInto('machines').values(rows).returning('id').execute();
  return res.map((r) => r.id);
}

export async function userIdByEmail(db: Kysely<DB>, email: string): Promise<number | undefined> {
  const r = await db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();
  return r?.id;
}

/** The host's live machines, by id. */
export function hostMachines(db: Kysely<DB>, hostId: number, machineId?: number): Promise<MachineRow[]> {
  let q = db.selectFrom('machines').selectAll().where('host_id', '=', hostId).where('deleted_at', 'is', null);
  if (machineId !== undefined) q = q.where('id', '=', machineId);
  return q.orderBy('id').execute();
}

/**
 * How many running instances each of these machines has (absent: none). The ids go in chunks: a
 * host may have more machines than a statement may have parameters.
 */
export async function runningCounts(db: Kysely<DB>, machineIds: number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  for (const part of chunks(machineIds, IDS_PER_STATEMENT)) {
    const counts = await db
      .selectFrom('instances')
      .select(['machine_id', (eb) => eb.fn.countAll<number>().as('n')])
      .where('machine_id', 'in', part)
      .where('destroyed_at', 'is', null)
      .where('actual_status', '=', 'running')
      .groupBy('machine_id')
      .execute();
    for (const c of counts) out.set(c.machine_id, Number(c.n));
  }
  return out;
}

/** Updates one of the host's live machines; undefined when it is not theirs (or gone). */
export function updateHostMachine(
  db: Kysely<DB>,
  hostId: number,
  machineId: number,
  set: UpdateObject<DB, 'machines'>,
): Promise<MachineRow | undefined> {
  return db
    .updateTable('machines')
    .set(set)
    .where('id', '=', machineId)
    .where('host_id', '=', hostId)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** Sets a machine's verification (an operator's decision); the row, or undefined when none. */
export function setMachineVerified(db: Kysely<DB>, id: number, verified: boolean) {
  return db
    .updateTable('machines')
    .set({ verified: verified ? 1 : 0 })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returning(['id', 'verified'])
    .executeTakeFirst();
}

/**
 * Marks one of the host's live machines deleted (a soft delete: the row stays for the billing
 * ledger, the host's earnings and past instances) and takes it off the market (unlisted,
 * offline). Conditional on `deleted_at IS NULL`, so of two deletions one wins. Run first in the
 * deletion's transaction: the row lock it takes makes a concurrent rent's claim (which requires
 * `deleted_at IS NULL`) wait and then fail, and a rent that committed before it is seen by the
 * count of live instances that follows. Undefined when the machine is not the host's (or gone).
 */
export function markMachineDeleted(
  trx: Kysely<DB>,
  hostId: number,
  machineId: number,
  now: number,
): Promise<{ id: number } | undefined> {
  return trx
    .updateTable('machines')
    .set({ deleted_at: now, listed: 0, online_state: 'offline' })
    .where('id', '=', machineId)
    .where('host_id', '=', hostId)
    .where('deleted_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
}

/** How many live (not destroyed) instances of users other than the host are on the machine. */
export async function liveClientInstanceCount(
  trx: Kysely<DB>,
  machineId: number,
  hostId: number,
): Promise<number> {
  const r = await trx
    .selectFrom('instances')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('machine_id', '=', machineId)
    .where('destroyed_at', 'is', null)
    .where('user_id', '<>', hostId)
    .executeTakeFirst();
  return Number(r?.n ?? 0);
}
