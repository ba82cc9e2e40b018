// The statements of host payouts: each host's earnings since its last payout, the payouts
// themselves, and where each host is paid.
import { sql, type Insertable, type Kysely, type Selectable } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { PayoutsTable } from '../../db/tables/billing.js';

export type PayoutRow = Selectable<PayoutsTable>;

/**
 * Every host (an owner of a machine, deleted machines included: their charges are earnings too)
 * with the end of its last payout that did not fail (0 when none): where its next payout starts.
 */
export async function hostCursors(db: Kysely<DB>): Promise<{ host_id: number; cursor: number }[]> {
  const rows = await db
    .selectFrom('machines as m')
    .select([
      'm.host_id',
      sql<
        number | null
      >`(select max(p.period_end) from payouts p where p.host_id = m.host_id and p.status <> 'failed')`.as(
        'cursor',
      ),
    ])
    .groupBy('m.host_id')
    .orderBy('m.host_id')
    .execute();
  return rows.map((r) => ({ host_id: Number(r.host_id), cursor: Number(r.cursor ?? 0) }));
}

/**
 * What renters paid for a host's machines: its charges (compute and disk ledger rows of instances
 * on its machines, and volume rows of volumes on them) whose billed period ended in (from, to]
 * (ms), in micro-dollars.
 */
export async function hostGross(db: Kysely<DB>, hostId: number, from: number, to: number): Promise<number> {
  const vol = await db
    .selectFrom('billing_ledger as l')
    .innerJoin('volumes as v', 'v.id', 'l.volume_id')
    .select(sql<number | null>`sum(l.amount_micros)`.as('micros'))
    .where('v.host_id', '=', hostId)
    .where('l.kind', '=', 'volume')
    .where('l.period_end', '>', from)
    .where('l.period_end', '<=', to)
    .executeTakeFirst();
  return (await instancesGross(db, hostId, from, to)) + Number(vol?.micros ?? 0);
}

async function instancesGross(db: Kysely<DB>, hostId: number, from: number, to: number): Promise<number> {
  const row = await db
    .selectFrom('billing_ledger as l')
    .innerJoin('instances as i', 'i.id', 'l.instance_id')
    .innerJoin('machines as m', 'm.id', 'i.machine_id')
    .select(sql<number | null>`sum(l.amount_micros)`.as('micros'))
    .where('m.host_id', '=', hostId)
    .where('l.kind', 'in', ['compute', 'disk'])
    .where('l.period_end', '>', from)
    .where('l.period_end', '<=', to)
    .executeTakeFirst();
  return Number(row?.micros ?? 0);
}

/** The end of the host's last payout that did not fail (0 when none): where its unpaid earnings start. */
export async function hostCursor(db: Kysely<DB>, hostId: number): Promise<number> {
  const r = await db
    .selectFrom('payouts')
    .select(sql<number | null>`max(period_end)`.as('cursor'))
    .where('host_id', '=', hostId)
    .where('status', '<>', 'failed')
    .executeTakeFirst();
  return Number(r?.cursor ?? 0);
}

/** What the host's pending payouts pay, in micro-dollars. */
export async function pendingNet(db: Kysely<DB>, hostId: number): Promise<number> {
  const r = await db
    .selectFrom('payouts')
    .select(sql<number | null>`sum(net_micros)`.as('n'))
    .where('host_id', '=', hostId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(r?.n ?? 0);
}

export async function insertPayout(trx: Kysely<DB>, row: Insertable<PayoutsTable>): Promise<PayoutRow> {
  return trx.insertInto('payouts').values(row).returningAll().executeTakeFirstOrThrow();
}

export function destinationOf(db: Kysely<DB>, hostId: number) {
  return db.selectFrom('payout_destinations').selectAll().where('host_id', '=', hostId).executeTakeFirst();
}

export async function setDestination(
  db: Kysely<DB>,
  p: { hostId: number; method: string; destination: string; now: number },
): Promise<void> {
  await db
    .insertInto('payout_destinations')
    .values({ host_id: p.hostId, method: p.method, destination: p.destination, updated_at: p.now })
    .onConflict((oc) =>
      oc.column('host_id').doUpdateSet({ method: p.method, destination: p.destination, updated_at: p.now }),
    )
    .execute();
}

export async function clearDestination(db: Kysely<DB>, hostId: number): Promise<void> {
  await db.deleteFrom('payout_destinations').where('host_id', '=', hostId).execute();
}

/** Payouts, oldest first, of one status and/or one host when given. */
export function listPayouts(db: Kysely<DB>, p: { status?: string; hostId?: number } = {}) {
  let qb = db.selectFrom('payouts').selectAll();
  if (p.status) qb = qb.where('status', '=', p.status);
  if (p.hostId !== undefined) qb = qb.where('host_id', '=', p.hostId);
  return qb.orderBy('id').execute();
}

export function payoutById(db: Kysely<DB>, id: number) {
  return db.selectFrom('payouts').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Moves a pending payout to `to`, only while it is pending; the payout afterwards, or undefined. */
export function settlePayout(
  trx: Kysely<DB>,
  p: { id: number; to: 'paid' | 'failed'; note: string; now: number },
): Promise<PayoutRow | undefined> {
  return trx
    .updateTable('payouts')
    .set({ status: p.to, note: p.note, settled_at: p.now })
    .where('id', '=', p.id)
    .where('status', '=', 'pending')
    .returningAll()
    .executeTakeFirst();
}

/** Whether the host has a payout that did not fail starting at or after `from` (a later one). */
export async function laterPayout(trx: Kysely<DB>, hostId: number, from: number): Promise<boolean> {
  const row = await trx
    .selectFrom('payouts')
    .select('id')
    .where('host_id', '=', hostId)
    .where('status', '<>', 'failed')
    .where('period_start', '>=', from)
    .executeTakeFirst();
  return row !== undefined;
}
