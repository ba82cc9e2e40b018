// The market: interruptible (bid) instances, preempted by a higher priority and resumed by
// themselves (docs/market.md, "Interruptible instances"; the rule is instances.market-rules.ts).
//
// Every decision is taken by the database, in the caller's transaction:
// - The machine row is the lock. Each claim and release writes it (machines.repo claimMachine,
//   releaseMachine, lockMachine, setMachineHolder), so two decisions about one machine never
//   interleave: on PostgreSQL the second waits for the first's commit, on SQLite writers are
//   serialised anyway.
// - At most one instance of a machine is active (not destroyed, intended_status not 'stopped'):
//   the partial unique index of migration 002. A bid that lacks priority waits with
//   intended_status 'stopped' and bid_waiting = 1, so it holds no claim.
// - A preemption moves the holder to stopped/waiting in the same transaction that makes the winner
//   active. The holder's agent sends SIGTERM and stops it within the grace period; the agent starts
//   the winner only once nothing else runs on the machine (agent/reconcile.ts planReconcile), so no
//   GPU runs two instances.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { MachineRow } from '../machines/machines.service.js';
import { lockMachine, setMachineHolder } from '../machines/machines.service.js';
import { balanceOf, settleInstance, statusOf, type InstanceRow } from '../billing/billing.service.js';
import { LostRace, txRetry } from '../../db/tx.js';
import type { Store } from '../../db/connection.js';
import { instanceEvent, recordEvent } from '../webhooks/webhooks.events.js';
import { enqueueEmail } from '../notifications/notifications.outbox.js';
import * as repo from './instances.repo.js';
import {
  bidToWin,
  contenderOf,
  preempts,
  preemptedMsg,
  RESUMED_MSG,
  tierOf,
  waitingMsg,
  type Tier,
} from './instances.market-rules.js';
import { preemptedEmail, resumedEmail } from './instances.mail.js';

/** What the market reads of the configuration. */
export interface MarketConfig {
  market: { preemptGraceS: number };
}

/** How many waiting bids of one machine are looked at per decision (those out of credit skipped). */
const CANDIDATES = 16;

/**
 * Preempts `holder`, the machine's active bid, for a rental of tier `by`: settled first (its
 * compute stops being charged now), then moved to stopped and waiting in one conditional write on
 * the state read. Records instance.preempted and e-mails its renter.
 */
export async function preempt(
  db: Kysely<DB>,
  config: MarketConfig,
  holder: InstanceRow,
  by: Tier,
  now: number,
): Promise<void> {
  const graceS = config.market.preemptGraceS;
  await settleInstance(db, holder, now);
  const actual = statusOf(holder).actual;
  // What runs or is on its way is halted by its agent (SIGTERM, then the stop at the grace's end).
  const next = actual === null || actual === 'loading' || actual === 'running' ? 'stopped' : actual;
  const msg = preemptedMsg(by, graceS);
  const moved = await repo.moveInstance(
    db,
    holder.id,
    { intended: holder.intended_status, actual },
    {
      intended_status: 'stopped',
      actual_status: next,
      bid_waiting: 1,
      preempt_until: now + Math.round(graceS * 1000),
      preempted_by: by,
      status_msg: msg,
    },
  );
  if (!moved) throw new LostRace(`preemption of instance ${holder.id}`);
  const ev = instanceEvent(holder, actual, next, { intended_status: 'stopped', status_msg: msg });
  await recordEvent(db, now, {
    ...ev,
    type: 'instance.preempted',
    data: { ...ev.data, tier: 'bid', preempted_by: by, bid: holder.dph_compute, grace_s: graceS },
  });
  const who = await repo.userContact(db, holder.user_id);
  if (who) {
    const mail = preemptedEmail({
      name: who.full_name,
      instanceId: holder.id,
      machineId: holder.machine_id,
      bid: holder.dph_compute,
      by,
      at: now,
      graceS,
    });
    await enqueueEmail(db, now, {
      key: `market:preempted:${holder.id}:${now}`,
      to: who.email,
      ...mail,
      category: 'market',
    });
  }
}

/**
 * Makes a waiting bid active (its agent starts it); records instance.resumed and e-mails its
 * renter, unless it is `fresh` (created in this transaction: its creation is the news).
 */
async function resume(db: Kysely<DB>, row: InstanceRow, now: number, fresh: boolean): Promise<void> {
  await settleInstance(db, row, now);
  if (!(await repo.resumeWaitingBid(db, row.id, fresh ? '' : RESUMED_MSG)))
    throw new LostRace(`resume of instance ${row.id}`);
  if (fresh) return;
  const actual = statusOf(row).actual;
  const ev = instanceEvent(row, actual, actual, { intended_status: 'running', status_msg: RESUMED_MSG });
  await recordEvent(db, now, {
    ...ev,
    type: 'instance.resumed',
    data: { ...ev.data, tier: 'bid', bid: row.dph_compute },
  });
  const who = await repo.userContact(db, row.user_id);
  if (who) {
    const mail = resumedEmail({
      name: who.full_name,
      instanceId: row.id,
      machineId: row.machine_id,
      bid: row.dph_compute,
      at: now,
    });
    await enqueueEmail(db, now, {
      key: `market:resumed:${row.id}:${now}`,
      to: who.email,
      ...mail,
      category: 'market',
    });
  }
}

/**
 * After a claim by an on-demand or owner rental (claimMachine, which also takes a machine a bid
 * holds): preempts the bid that held it, if any, so the caller's instance can become active.
 * Call it right after the claim, in its transaction (the claim's write holds the machine's row).
 */
export async function preemptForClaim(
  db: Kysely<DB>,
  config: MarketConfig,
  machine: MachineRow,
  by: Tier,
  now: number,
): Promise<void> {
  const holder = await repo.activeInstanceOn(db, machine.id);
  if (holder && holder.is_bid === 1) await preempt(db, config, holder, by, now);
}

export interface Arbitration {
  resumed: number | null;
  preempted: number | null;
}

/**
 * Decides machine `machineId` again: its best waiting bid (higher, then earlier) becomes active
 * when the machine is free, or preempts the active bid it outranks. Locks the machine row first.
 * Waiting bids of renters without credit are passed over (they stay waiting). Call it in the
 * transaction of any change that may give a waiting bid priority: a release, a new or changed bid.
 */
export async function arbitrate(
  db: Kysely<DB>,
  config: MarketConfig,
  machineId: number,
  now: number,
  fresh: number | null = null,
): Promise<Arbitration> {
  const none = { resumed: null, preempted: null };
  const m = await lockMachine(db, machineId);
  if (!m || m.deleted_at !== null) return none;
  const waiting = await repo.waitingBidsOn(db, machineId, CANDIDATES);
  if (waiting.length === 0) return none;
  const holder = await repo.activeInstanceOn(db, machineId);
  const held = holder ? contenderOf(holder, m.host_id) : null;
  for (const cand of waiting) {
    if (held && !preempts(contenderOf(cand, m.host_id), held)) break;
    if ((await balanceOf(db, cand.user_id)) <= 0) continue;
    if (holder) await preempt(db, config, holder, 'bid', now);
    await resume(db, cand, now, cand.id === fresh);
    await setMachineHolder(db, machineId, true, bidToWin(cand.dph_compute));
    return { resumed: cand.id, preempted: holder?.id ?? null };
  }
  return none;
}

/**
 * Locks machine `id` for a new bid and returns it when it is an offer now (not deleted, listed,
 * the listing not ended, its host not known offline), as claimMachine's `offeredAt` requires of
 * an on-demand rental; undefined otherwise. A bid needs no free machine: it wins or waits.
 */
export async function lockOffer(db: Kysely<DB>, id: number, now: number): Promise<MachineRow | undefined> {
  const m = await lockMachine(db, id);
  if (!m || m.deleted_at !== null || m.listed !== 1) return undefined;
  if (m.listed_until !== null && m.listed_until <= now) return undefined;
  if (m.online_state === 'offline' && m.last_heartbeat_at !== null) return undefined;
  return m;
}

/**
 * A bid just inserted waiting (instance `id` on machine `machineId`): the market decides at once
 * whether it wins the machine (preempting a lower bid) or waits, and its status_msg says why.
 */
export async function placeBid(
  db: Kysely<DB>,
  config: MarketConfig,
  machineId: number,
  id: number,
  now: number,
): Promise<{ waiting: boolean; msg: string }> {
  const r = await arbitrate(db, config, machineId, now, id);
  if (r.resumed === id)
    return {
      waiting: false,
      msg: `Instance ${id} created: its bid wins the machine${r.preempted !== null ? ` (instance ${r.preempted}, a lower bid, was preempted)` : ''}`,
    };
  const why = await waitingReason(db, machineId);
  await repo.moveInstance(db, id, {}, { status_msg: why });
  return { waiting: true, msg: `Instance ${id} created; its bid waits. ${why}` };
}

/** Why a bid on machine `machineId` waits now (its status_msg), read in the deciding transaction. */
export async function waitingReason(db: Kysely<DB>, machineId: number): Promise<string> {
  const m = await lockMachine(db, machineId);
  const holder = await repo.activeInstanceOn(db, machineId);
  return waitingMsg(holder && m ? tierOf(holder, m.host_id) : null, m?.bid_to_win_dph ?? null);
}

/**
 * Decides again every machine that is free while bids wait on it (at most 500 per call), each in
 * a transaction of its own; returns the instances that resumed.
 */
export async function resumeWaitingBids(deps: {
  store: Store;
  clock: { now(): number };
  config: MarketConfig;
}): Promise<{ instance: number; machine: number }[]> {
  const machines = await repo.machinesWithWaitingBids(deps.store.db, 500);
  const resumed: { instance: number; machine: number }[] = [];
  for (const id of machines) {
    const r = await txRetry(deps.store, (db) => arbitrate(db, deps.config, id, deps.clock.now()));
    if (r.resumed !== null) resumed.push({ instance: r.resumed, machine: id });
  }
  return resumed;
}
