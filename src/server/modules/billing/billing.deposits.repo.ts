// The statements of prepaid deposits (instance_deposits): a prepay, the meter's draws, the
// destroy's refund, the reads. Every write that a race could decide is one conditional statement.
import { sql, type Kysely, type Selectable } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { InstanceDepositsTable } from '../../db/tables/billing.js';
import type { InstanceRow } from './billing.repo.js';

export type DepositRow = Selectable<InstanceDepositsTable>;

/**
 * The caller's live instance `id`, locked for the rest of the transaction by a no-op conditional
 * UPDATE: a destroy of it either committed before (no row: it is gone) or waits until this
 * transaction ends, and then refunds what this transaction put in the deposit.
 */
export async function lockLiveInstance(
  trx: Kysely<DB>,
  userId: number,
  id: number,
): Promise<InstanceRow | undefined> {
  return trx
    .updateTable('instances')
    .set({ billed_until: sql`billed_until` })
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('destroyed_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** Whether the user has an instance `id`, destroyed or not, and whether it is destroyed. */
export function ownInstance(db: Kysely<DB>, userId: number, id: number) {
  return db
    .selectFrom('instances')
    .select(['id', 'destroyed_at', 'is_bid'])
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

/**
 * Takes `micros` off the user's balance only if the balance holds them, in one UPDATE (so
 * concurrent prepays never take it below zero); the balance afterwards, or null when it did not.
 */
export async function debitIfCovered(
  trx: Kysely<DB>,
  userId: number,
  micros: number,
): Promise<number | null> {
  const row = await trx
    .updateTable('users')
    .set({ balance_micros: sql`balance_micros - ${micros}` })
    .where('id', '=', userId)
    .where('balance_micros', '>=', micros)
    .returning('balance_micros')
    .executeTakeFirst();
  return row ? Number(row.balance_micros) : null;
}

/**
 * Adds `micros` to the instance's deposit (creating it), unless it was refunded already; the
 * deposit afterwards, or undefined when it was refunded.
 */
export async function addToDeposit(
  trx: Kysely<DB>,
  p: { instanceId: number; userId: number; micros: number; now: number },
): Promise<DepositRow | undefined> {
  return trx
    .insertInto('instance_deposits')
    .values({
      instance_id: p.instanceId,
      user_id: p.userId,
      remaining_micros: p.micros,
      prepaid_micros: p.micros,
      created_at: p.now,
      updated_at: p.now,
    })
    .onConflict((oc) =>
      oc
        .column('instance_id')
        .doUpdateSet({
          remaining_micros: sql`instance_deposits.remaining_micros + ${p.micros}`,
          prepaid_micros: sql`instance_deposits.prepaid_micros + ${p.micros}`,
          updated_at: p.now,
        })
        .where('instance_deposits.refunded_at', 'is', null),
    )
    .returningAll()
    .executeTakeFirst();
}

/** Sets the deposit's discount (the caller holds its row: it wrote it in this transaction). */
export async function setDiscount(
  trx: Kysely<DB>,
  instanceId: number,
  rate: number,
  months: number,
): Promise<void> {
  await trx
    .updateTable('instance_deposits')
    .set({ discount_rate: rate, discount_months: months })
    .where('instance_id', '=', instanceId)
    .execute();
}

/** The deposits of these instances that still hold something to draw on. */
export function drawableDeposits(trx: Kysely<DB>, instanceIds: number[]): Promise<DepositRow[]> {
  if (instanceIds.length === 0) return Promise.resolve([]);
  return trx
    .selectFrom('instance_deposits')
    .selectAll()
    .where('instance_id', 'in', instanceIds)
    .where('remaining_micros', '>', 0)
    .where('refunded_at', 'is', null)
    .execute();
}

/**
 * Draws a charge from a deposit as read: only while its remaining and prepaid amounts are still
 * those read and it is not refunded (a prepay or a refund meanwhile makes it false: the caller
 * loses the race and decides again). True when it drew.
 */
export async function drawDeposit(
  trx: Kysely<DB>,
  read: DepositRow,
  p: { drawn: number; discount: number; now: number },
): Promise<boolean> {
  const res = await trx
    .updateTable('instance_deposits')
    .set({
      remaining_micros: sql`remaining_micros - ${p.drawn}`,
      drawn_micros: sql`drawn_micros + ${p.drawn}`,
      discount_micros: sql`discount_micros + ${p.discount}`,
      updated_at: p.now,
    })
    .where('instance_id', '=', read.instance_id)
    .where('remaining_micros', '=', read.remaining_micros)
    .where('prepaid_micros', '=', read.prepaid_micros)
    .where('refunded_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/**
 * Refunds the deposit once: what remains moves to refunded_micros (SET reads the row as it was)
 * and refunded_at is set, only if it was not already. The refund and its owner, or undefined when
 * there is no deposit or it was refunded before.
 */
export async function takeRefund(
  trx: Kysely<DB>,
  instanceId: number,
  now: number,
): Promise<{ user_id: number; refunded_micros: number } | undefined> {
  const row = await trx
    .updateTable('instance_deposits')
    .set({
      refunded_micros: sql`remaining_micros`,
      remaining_micros: 0,
      refunded_at: now,
      updated_at: now,
    })
    .where('instance_id', '=', instanceId)
    .where('refunded_at', 'is', null)
    .returning(['user_id', 'refunded_micros'])
    .executeTakeFirst();
  return row ? { user_id: Number(row.user_id), refunded_micros: Number(row.refunded_micros) } : undefined;
}

export function depositOf(db: Kysely<DB>, instanceId: number): Promise<DepositRow | undefined> {
  return db
    .selectFrom('instance_deposits')
    .selectAll()
    .where('instance_id', '=', instanceId)
    .executeTakeFirst();
}

/**
 * A prepay or a refund as a ledger row (`prepay`: money from the balance into the deposit,
 * positive; `deposit_refund`: back, negative), dated `now`.
 */
export async function insertDepositLedger(
  trx: Kysely<DB>,
  p: { userId: number; instanceId: number; kind: 'prepay' | 'deposit_refund'; micros: number; now: number },
): Promise<number> {
  const row = await trx
    .insertInto('billing_ledger')
    .values({
      user_id: p.userId,
      instance_id: p.instanceId,
      kind: p.kind,
      amount_micros: p.kind === 'prepay' ? p.micros : -p.micros,
      period_start: p.now,
      period_end: p.now,
      created_at: p.now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}
