// Every SQL statement of billing: charging instances, the ledger, balances.
import { sql, type Insertable, type Kysely, type Selectable } from 'kysely';
import type { DB } from '../../db/schema.js';
import { caseById } from '../../db/case-by-id.js';
import type { BillingLedgerTable, InstancesTable } from '../../db/tables/market.js';

export type InstanceRow = Selectable<InstancesTable>;

export interface Charge {
  id: number;
  /** billed_until as read: the charge applies only while it is still this. */
  from: number;
  until: number;
  micros: number;
}

/**
 * Charges live instances in one conditional UPDATE: each row's billed_until moves from `from` to
 * `until` and its accrued cost grows, only while billed_until is still `from`, so a period is
 * charged exactly once whoever else settles the row. Returns the ids charged.
 */
export async function chargeInstances(trx: Kysely<DB>, charges: Charge[]): Promise<Set<number>> {
  const charged = await trx
    .updateTable('instances')
    .set({
      billed_until: caseById(
        charges.map((c) => [c.id, sql`${c.until}`]),
        'billed_until',
      ),
      accrued_micros: caseById(
        charges.map((c) => [c.id, sql`accrued_micros + ${c.micros}`]),
        'accrued_micros',
      ),
    })
    .where('destroyed_at', 'is', null)
    .where((eb) => eb.or(charges.map((c) => eb.and([eb('id', '=', c.id), eb('billed_until', '=', c.from)]))))
    .returning('id')
    .execute();
  return new Set(charged.map((c) => Number(c.id)));
}

export async function insertLedger(trx: Kysely<DB>, rows: Insertable<BillingLedgerTable>[]): Promise<void> {
  if (rows.length > 0) await trx.insertInto('billing_ledger').values(rows).execute();
}

/** Takes each user's total off their balance, in one UPDATE. */
export async function debitUsers(trx: Kysely<DB>, totals: Map<number, number>): Promise<void> {
  if (totals.size === 0) return;
  const users = [...totals];
  await trx
    .updateTable('users')
    .set({
      balance_micros: caseById(
        users.map(([id, total]) => [id, sql`balance_micros - ${total}`]),
        'balance_micros',
      ),
    })
    .where(
      'id',
      'in',
      users.map(([id]) => id),
    )
    .execute();
}

/**
 * A credit to the user's account as a ledger row of kind `credit` (negative: money in), dated
 * `now`; the caller moves the balance in the same transaction. Returns the row's id.
 */
export async function insertCredit(
  trx: Kysely<DB>,
  userId: number,
  micros: number,
  now: number,
): Promise<number> {
  const row = await trx
    .insertInto('billing_ledger')
    .values({
      user_id: userId,
      instance_id: null,
      kind: 'credit',
      amount_micros: -micros,
      period_start: now,
      period_end: now,
      created_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

/** Adds `micros` to the user's balance in one UPDATE; the balance afterwards, or null when no such user. */
export async function addToBalance(trx: Kysely<DB>, userId: number, micros: number): Promise<number | null> {
  const row = await trx
    .updateTable('users')
    .set({ balance_micros: sql`balance_micros + ${micros}` })
    .where('id', '=', userId)
    .returning('balance_micros')
    .executeTakeFirst();
  return row ? Number(row.balance_micros) : null;
}

export async function balanceOf(db: Kysely<DB>, userId: number): Promise<number> {
  const u = await db.selectFrom('users').select('balance_micros').where('id', '=', userId).executeTakeFirst();
  return u?.balance_micros ?? 0;
}

/**
 * The user's live instances meant to run, but those a prepaid deposit still pays for (their
 * charges draw on it, not on the balance).
 */
export function runningInstancesOf(trx: Kysely<DB>, userId: number): Promise<InstanceRow[]> {
  return trx
    .selectFrom('instances')
    .selectAll()
    .where('user_id', '=', userId)
    .where('destroyed_at', 'is', null)
    .where('intended_status', '=', 'running')
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('instance_deposits as d')
            .select('d.instance_id')
            .whereRef('d.instance_id', '=', 'instances.id')
            .where('d.remaining_micros', '>', 0)
            .where('d.refunded_at', 'is', null),
        ),
      ),
    )
    .execute();
}

/** Stops a live instance meant to run (intended → stopped, actual → `actual`); true when it moved. */
export async function stopRunning(
  trx: Kysely<DB>,
  id: number,
  actual: string | null,
  msg: string,
): Promise<boolean> {
  const res = await trx
    .updateTable('instances')
    .set({ intended_status: 'stopped', actual_status: actual, status_msg: msg })
    .where('id', '=', id)
    .where('intended_status', '=', 'running')
    .where('destroyed_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Live instances billed up to `before` or earlier, oldest first. */
export async function dueInstanceIds(db: Kysely<DB>, before: number, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('instances')
    .select('id')
    .where('destroyed_at', 'is', null)
    .where('billed_until', '<=', before)
    .orderBy('billed_until')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

export function liveInstancesByIds(trx: Kysely<DB>, ids: number[]): Promise<InstanceRow[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return trx
    .selectFrom('instances')
    .selectAll()
    .where('id', 'in', ids)
    .where('destroyed_at', 'is', null)
    .execute();
}

/** Which of these users have no balance left. */
export async function exhaustedUsers(trx: Kysely<DB>, userIds: number[]): Promise<number[]> {
  if (userIds.length === 0) return [];
  const rows = await trx
    .selectFrom('users')
    .select('id')
    .where('id', 'in', userIds)
    .where('balance_micros', '<=', 0)
    .execute();
  return rows.map((r) => r.id);
}

/** The user's live instances with their cost so far and rates. */
export function instanceCosts(db: Kysely<DB>, userId: number) {
  return db
    .selectFrom('instances')
    .select(['id', 'actual_status', 'accrued_micros', 'dph_compute', 'dph_disk', 'billed_until'])
    .where('user_id', '=', userId)
    .where('destroyed_at', 'is', null)
    .orderBy('id')
    .execute();
}

/** Up to `limit` of the user's ledger rows, newest first, optionally before an id or of one instance. */
export function ledgerPage(
  db: Kysely<DB>,
  userId: number,
  p: { limit: number; beforeId?: number; instanceId?: number },
) {
  let qb = db.selectFrom('billing_ledger').selectAll().where('user_id', '=', userId);
  if (p.beforeId) qb = qb.where('id', '<', p.beforeId);
  if (p.instanceId) qb = qb.where('instance_id', '=', p.instanceId);
  return qb.orderBy('id', 'desc').limit(p.limit).execute();
}

/** The UTC day (days since the epoch) a charge is counted on: the day its billed period ended in. */
export const earningDay = sql<number>`(l.period_end - 1) / 86400000`;

/**
 * A host's earnings: the compute and disk charges on instances of its machines (optionally one
 * machine) whose billed period ended in (from, to], summed per machine, UTC day and kind.
 */
export function hostEarnings(
  db: Kysely<DB>,
  hostId: number,
  p: { from: number; to: number; machineId?: number },
) {
  let qb = db
    .selectFrom('billing_ledger as l')
    .innerJoin('instances as i', 'i.id', 'l.instance_id')
    .innerJoin('machines as m', 'm.id', 'i.machine_id')
    .select(['i.machine_id', earningDay.as('day'), 'l.kind', sql<number>`sum(l.amount_micros)`.as('micros')])
    .where('m.host_id', '=', hostId)
    .where('l.kind', 'in', ['compute', 'disk'])
    .where('l.period_end', '>', p.from)
    .where('l.period_end', '<=', p.to);
  if (p.machineId !== undefined) qb = qb.where('m.id', '=', p.machineId);
  return qb.groupBy(['i.machine_id', earningDay, 'l.kind']).execute();
}

/**
 * A host's volume earnings: the `volume` charges of volumes on its machines whose billed period
 * ended in (from, to], per machine and UTC day (kind `volume`, storage).
 */
export function hostVolumeEarnings(
  db: Kysely<DB>,
  hostId: number,
  p: { from: number; to: number; machineId?: number },
) {
  let qb = db
    .selectFrom('billing_ledger as l')
    .innerJoin('volumes as v', 'v.id', 'l.volume_id')
    .select(['v.machine_id', earningDay.as('day'), 'l.kind', sql<number>`sum(l.amount_micros)`.as('micros')])
    .where('v.host_id', '=', hostId)
    .where('l.kind', '=', 'volume')
    .where('l.period_end', '>', p.from)
    .where('l.period_end', '<=', p.to);
  if (p.machineId !== undefined) qb = qb.where('v.machine_id', '=', p.machineId);
  return qb.groupBy(['v.machine_id', earningDay, 'l.kind']).execute();
}

/** The ids of a host's machines (or of its one machine `machineId`), in id order. */
export async function hostMachineIds(db: Kysely<DB>, hostId: number, machineId?: number): Promise<number[]> {
  let qb = db.selectFrom('machines').select('id').where('host_id', '=', hostId);
  if (machineId !== undefined) qb = qb.where('id', '=', machineId);
  return (await qb.orderBy('id').execute()).map((r) => Number(r.id));
}
