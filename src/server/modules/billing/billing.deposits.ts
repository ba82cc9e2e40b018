// Prepaid (reserved) instances: a renter moves credit from the balance into a deposit on one of
// their on-demand instances (PUT /instances/prepay/{id}/, the official CLI's `prepay instance`),
// the meter draws the instance's charges from it first at a discount (billing.service settleMany),
// `show deposit` reads it (GET /instances/balance/{id}/), and destroying the instance refunds what
// is left (billing.service refundDeposit, in the destroy's transaction). Races are decided by the database: the
// balance is debited only if it holds the amount (one conditional UPDATE), the instance row is
// locked while a prepay writes its deposit, and the refund happens once (refunded_at).
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { Store } from '../../db/connection.js';
import type { PrepayDiscount } from '../../config.js';
import type { AuthContext } from '../../identity.js';
import { txRetry } from '../../db/tx.js';
import { AppError, CommonErrors, defineErrors, quoteValue } from '../../errors.js';
import { recordBalanceLow } from '../webhooks/webhooks.events.js';
import { MICROS_PER_USD } from './billing.meter.js';
import { discountRate, monthsCovered } from './billing.prepay.js';
import * as repo from './billing.deposits.repo.js';
import { settleInstance } from './billing.service.js';

/** The most one prepay may move: as much as one credit may add. */
export const MAX_PREPAY_USD = 1_000_000_000;

const E = defineErrors({
  badRequest: [400, 'bad_request', 'Bad request'],
  insufficientBalance: [402, 'insufficient_balance', 'The amount is more than your balance'],
  notFound: [404, 'not_found', 'No such instance'],
  invalidState: [409, 'invalid_state', 'That instance cannot be prepaid'],
});

// The official CLI prints `msg` when `success` is false: every refusal carries both.
const refuse = (f: (typeof E)[keyof typeof E], msg: string): AppError => f(msg, { success: false });

const usd = (micros: number) => micros / MICROS_PER_USD;

export interface PrepayReply {
  success: true;
  msg: string;
  /** Months of list-price charges the whole deposit covers now. */
  timescale: number;
  /** The discount (a fraction) of the charges paid from the deposit. */
  discount_rate: number;
  refundable_deposit: number;
  balance: number;
}

/**
 * PUT /instances/prepay/{id}/ {amount}: moves `amount` USD from the caller's balance into the
 * deposit of their live on-demand instance `id`. The instance is settled first (charges up to
 * now are paid on the terms they ran under); the discount is then set from the months the whole
 * deposit covers at the instance's list price. Refused, changing nothing: an amount that is not
 * a positive number (400) or is more than the balance (402), an instance that is not the caller's
 * (404), destroyed or interruptible, or free (409).
 */
export async function prepayInstance(
  deps: {
    store: Store;
    clock: { now(): number };
    config: { billing: { prepayDiscounts: PrepayDiscount[] } };
  },
  auth: AuthContext,
  id: number,
  amount: unknown,
): Promise<PrepayReply> {
  const a = typeof amount === 'string' && amount.trim() !== '' ? Number(amount) : amount;
  if (typeof a !== 'number' || !Number.isFinite(a) || a <= 0 || a > MAX_PREPAY_USD)
    throw refuse(
      E.badRequest,
      `amount must be a positive number of USD, at most ${MAX_PREPAY_USD}, not ${quoteValue(amount)}`,
    );
  const micros = Math.round(a * MICROS_PER_USD);
  if (micros < 1) throw refuse(E.badRequest, 'amount must be at least $0.000001');
  const userId = auth.user.id;
  const now = deps.clock.now();
  return txRetry(deps.store, async (trx) => {
    const row = await repo.lockLiveInstance(trx, userId, id);
    if (!row) {
      const own = await repo.ownInstance(trx, userId, id);
      if (!own) throw refuse(E.notFound, `No such instance: ${id}`);
      throw refuse(E.invalidState, `Instance ${id} is destroyed: there is nothing left to prepay`);
    }
    if (row.is_bid)
      throw refuse(
        E.invalidState,
        `Instance ${id} is interruptible: only on-demand instances can be prepaid (reserved)`,
      );
    const dph = row.dph_compute + row.dph_disk;
    if (dph <= 0) throw refuse(E.invalidState, `Instance ${id} costs nothing: there is nothing to prepay`);
    await settleInstance(trx, row, now);
    const balance = await repo.debitIfCovered(trx, userId, micros);
    if (balance === null)
      throw refuse(
        E.insufficientBalance,
        `$${a} is more than your balance: prepay at most what the balance holds`,
      );
    const dep = await repo.addToDeposit(trx, { instanceId: id, userId, micros, now });
    // The instance is live and locked, so its deposit cannot have been refunded.
    if (!dep) throw CommonErrors.internal(`the deposit of instance ${id} was refunded while it lives`);
    const months = monthsCovered(dep.remaining_micros, dph);
    const rate = discountRate(deps.config.billing.prepayDiscounts, months);
    await repo.setDiscount(trx, id, rate, months);
    await repo.insertDepositLedger(trx, { userId, instanceId: id, kind: 'prepay', micros, now });
    await recordBalanceLow(trx, now, [userId]);
    return {
      success: true,
      msg: `Prepaid $${usd(micros)} on instance ${id}: the deposit covers ${months.toFixed(3)} months at a ${Math.round(rate * 1000) / 10} % discount`,
      timescale: months,
      discount_rate: rate,
      refundable_deposit: usd(dep.remaining_micros),
      balance: usd(balance),
    };
  });
}

/**
 * GET /instances/balance/{id}/ (`show deposit`): the deposit of the caller's instance `id`
 * (destroyed ones too: their deposit was refunded, so it shows 0 left). Zeros when it has none.
 */
export async function showDeposit(db: Kysely<DB>, auth: AuthContext, id: number) {
  const own = await repo.ownInstance(db, auth.user.id, id);
  if (!own) throw refuse(E.notFound, `No such instance: ${id}`);
  const d = await repo.depositOf(db, id);
  return {
    success: true,
    refundable_deposit: usd(d?.remaining_micros ?? 0),
    total_discount: usd(d?.discount_micros ?? 0),
    discount_months: d?.discount_months ?? 0,
    discount_rate: d?.discount_rate ?? 0,
    prepaid: usd(d?.prepaid_micros ?? 0),
    drawn: usd(d?.drawn_micros ?? 0),
    refunded: usd(d?.refunded_micros ?? 0),
  };
}
