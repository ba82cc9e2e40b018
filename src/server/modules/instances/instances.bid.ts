// A renter's moves of an interruptible (bid) instance: changing its bid (PUT
// /instances/bid_price/{id}/, the official CLI's `change bid`), and starting or stopping one that
// is stopped or waits. Each locks the machine row and lets the market decide (instances.market.ts).
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import type { IntendedStatus } from '../../../contract/instance-states.js';
import { roundPrice } from '../../../contract/money.js';
import { txRetry, LostRace } from '../../db/tx.js';
import { balanceOf, settleInstance, type InstanceRow } from '../billing/billing.service.js';
import { lockMachine, setMachineHolder, type MachineRow } from '../machines/machines.service.js';
import { InstanceErrors } from './instances.errors.js';
import { arbitrate, waitingReason } from './instances.market.js';
import { bidToWin } from './instances.market-rules.js';
import * as repo from './instances.repo.js';

/** The machine of an instance, its row locked (a claim or lockMachine wrote it already). */
export async function machineOf(db: Kysely<DB>, machineId: number): Promise<MachineRow> {
  const m = await lockMachine(db, machineId);
  if (!m) throw new Error(`machine ${machineId} of a live instance is missing`);
  return m;
}

/**
 * A client's start or stop of a bid whose intended status is 'stopped' (stopped, or waiting):
 * - stop of a waiting bid: it stops waiting (stays stopped, its disk kept);
 * - start: it waits for the machine and the market decides at once (it may win now); a start of
 *   one already waiting changes nothing.
 * Returns null where the ordinary state machine decides (a stop of a stopped one, a start from a
 * state that cannot start).
 */
export async function bidStateChange(
  deps: Deps,
  db: Kysely<DB>,
  row: InstanceRow,
  want: IntendedStatus,
  now: number,
): Promise<{ changed: boolean } | null> {
  if (want === 'stopped') {
    if (row.bid_waiting !== 1) return null;
    if (!(await repo.stopWaiting(db, row.id, 'Stopped on request: it no longer waits for the machine')))
      throw new LostRace(`stop of waiting instance ${row.id}`);
    return { changed: true };
  }
  if (row.bid_waiting === 1) return { changed: false };
  const a = row.actual_status;
  if (!(a === null || a === 'stopped' || a === 'exited')) return null;
  if ((await balanceOf(db, row.user_id)) <= 0) throw InstanceErrors.insufficientBalance();
  await lockMachine(db, row.machine_id);
  // An exited one starts over as a new start (null), as a start of an exited instance does.
  const moved = await repo.moveInstance(
    db,
    row.id,
    { intended: 'stopped', actual: a },
    { bid_waiting: 1, bid_at: now, actual_status: a === 'exited' ? null : a, status_msg: 'Start requested' },
  );
  if (!moved) throw new LostRace(`start of instance ${row.id}`);
  const r = await arbitrate(db, deps.config, row.machine_id, now);
  if (r.resumed !== row.id)
    await repo.moveInstance(db, row.id, {}, { status_msg: await waitingReason(db, row.machine_id) });
  return { changed: true };
}

/** The lowest price at which instance `row` wins its machine against the other bids there now. */
async function lowestWinning(db: Kysely<DB>, row: InstanceRow, m: MachineRow): Promise<number> {
  const others = (await repo.waitingBidsOn(db, m.id, 2)).filter((r) => r.id !== row.id);
  const holder = await repo.activeInstanceOn(db, m.id);
  let top = others[0]?.dph_compute ?? null;
  if (holder && holder.id !== row.id && holder.is_bid === 1 && (top === null || holder.dph_compute > top))
    top = holder.dph_compute;
  return top === null ? m.min_bid_dph : Math.max(m.min_bid_dph, bidToWin(top));
}

/**
 * Changes the bid of the caller's interruptible instance to `price` $/h for the machine, or with
 * null to the lowest price that wins the machine now (the host's floor, or just above the best
 * other bid). The instance is settled at its old bid first, so every period is charged at the bid
 * it ran at. A raised bid may preempt the running one; a lowered one may yield to a waiting bid.
 */
export async function changeBid(
  deps: Deps,
  auth: AuthContext,
  id: number,
  rawPrice: unknown,
): Promise<{ success: true; msg: string; price: number; bid_waiting: boolean }> {
  if (
    rawPrice !== null &&
    rawPrice !== undefined &&
    (typeof rawPrice !== 'number' || !Number.isFinite(rawPrice) || rawPrice <= 0 || rawPrice > 100000)
  )
    throw InstanceErrors.badRequest(
      'price (a bid, $/hour for the machine) must be a positive number, or null for the lowest winning bid',
    );
  const now = deps.clock.now();
  let machineId: number | null = null;
  const reply = await txRetry(deps.store, async (db) => {
    const first = await repo.ownInstanceRow(db, auth.user.id, id);
    if (!first) throw InstanceErrors.notFound(`No such instance: ${id}`);
    // The machine's row is the market's lock: taken before the instance is read again, so what
    // follows sees the last decision about the machine (a preemption or a resume committed while
    // this change waited for the lock), never the state read before it.
    const m = await machineOf(db, first.machine_id);
    const row = await repo.ownInstanceRow(db, auth.user.id, id);
    if (!row) throw InstanceErrors.notFound(`No such instance: ${id}`);
    if (row.destroyed_at !== null) throw InstanceErrors.invalidState(`Instance ${id} is destroyed`);
    if (row.is_bid !== 1)
      throw InstanceErrors.badRequest(
        `Instance ${id} is an on-demand rental: it has no bid to change (rent with a price to bid)`,
      );
    machineId = m.id;
    const price =
      rawPrice === null || rawPrice === undefined ? await lowestWinning(db, row, m) : roundPrice(rawPrice);
    if (m.min_bid_dph > 0 && price < m.min_bid_dph)
      throw InstanceErrors.badRequest(
        `price ${price} is below this machine's minimum bid of ${m.min_bid_dph} $/hour (the host's floor)`,
      );
    if (price > row.dph_compute && (await balanceOf(db, row.user_id)) <= 0)
      throw InstanceErrors.insufficientBalance('Your balance is exhausted: add credit before raising a bid');
    // Every period up to now at the old bid; from now on the new one.
    await settleInstance(db, row, now);
    if (!(await repo.setBid(db, id, price, now))) throw new LostRace(`bid of instance ${id}`);
    const active = row.intended_status !== 'stopped';
    if (active) await setMachineHolder(db, m.id, true, bidToWin(price));
    const r = await arbitrate(db, deps.config, m.id, now);
    const waiting = (row.bid_waiting === 1 && r.resumed !== id) || r.preempted === id;
    // (A preempted one keeps the preemption's message.)
    if (waiting && r.preempted !== id)
      await repo.moveInstance(db, id, {}, { status_msg: await waitingReason(db, m.id) });
    return {
      success: true as const,
      msg: waiting
        ? `Bid of instance ${id} set to ${price} $/hour; it waits: ${await waitingReason(db, m.id)}`
        : `Bid of instance ${id} set to ${price} $/hour`,
      price,
      bid_waiting: waiting,
    };
  });
  // A bid change may preempt or resume: the machine's agent carries it out now.
  if (machineId !== null) deps.agentWake.notify([machineId]);
  return reply;
}
