// Billing: settling instances into the ledger and the user's balance, the meter run, balances.
// Race safety with several `serve` processes (and the agent gateway, and client requests): an
// instance is charged by a conditional UPDATE … WHERE billed_until = <the value read>, so a period
// is charged exactly once; whoever loses that update re-reads and retries (LostRace).
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import { MICROS_PER_USD, meter } from './billing.meter.js';
import * as repo from './billing.repo.js';
import type { InstanceRow } from './billing.repo.js';
import * as deposits from './billing.deposits.repo.js';
import { splitCharge, type SplitCharge } from './billing.prepay.js';
import type { Store } from '../../db/connection.js';
import { LostRace, txRetry } from '../../db/tx.js';
import { releaseMachine } from '../machines/machines.service.js';
import {
  isActualStatus,
  isIntendedStatus,
  type ActualStatus,
  type IntendedStatus,
} from '../../../contract/instance-states.js';
import { CommonErrors, quoteValue } from '../../errors.js';
import { instanceEvent, recordBalanceLow, recordEvent } from '../webhooks/webhooks.events.js';
import { chunksWithTurns } from '../../db/chunks.js';

export type { InstanceRow } from './billing.repo.js';

// A credit written by another module's transaction (a new account's starting credit).
export { insertCredit } from './billing.repo.js';
// Charges other modules write into the ledger and balances in their own transactions (volumes).
export { insertLedger, debitUsers } from './billing.repo.js';

export function statusOf(row: Pick<InstanceRow, 'actual_status' | 'intended_status'>): {
  actual: ActualStatus;
  intended: IntendedStatus;
} {
  const actual = isActualStatus(row.actual_status) ? row.actual_status : null;
  const intended = isIntendedStatus(row.intended_status) ? row.intended_status : 'running';
  return { actual, intended };
}

/**
 * Charges `row` up to `now` at the rates of its current state, in the caller's transaction:
 * ledger rows, the user's balance and the instance's accrued cost move together. Returns the row
 * as it is afterwards. Throws LostRace when another writer settled it first.
 */
export async function settleInstance(trx: Kysely<DB>, row: InstanceRow, now: number): Promise<InstanceRow> {
  if (row.destroyed_at !== null) return row;
  const [after] = await settleMany(trx, [row], now);
  if (!after) throw new LostRace(`billing of instance ${row.id}`);
  return after;
}

/**
 * settleInstance for many live rows at once, in a fixed number of statements whatever their
 * count: one read of their prepaid deposits, one conditional UPDATE of the instances (RETURNING
 * the ids it charged), one INSERT of their ledger rows, one UPDATE of their users' balances, and
 * one conditional UPDATE per deposit drawn on. Returns the rows as they are afterwards; a row
 * another writer settled first (its billed_until moved) is left out, and nothing was written for
 * it. Rows with no time to charge come back unchanged.
 *
 * A prepaid instance's charge is paid from its deposit first, at the deposit's discount
 * (billing.prepay splitCharge), the rest from the balance. Its ledger rows, accrued cost and its
 * host's earnings are what the renter paid (the discount is the host's); the balance loses only
 * the part the deposit did not cover. A deposit that changed since it was read (a prepay or a
 * refund committed meanwhile) throws LostRace: the caller's transaction runs again.
 */
export async function settleMany(
  trx: Kysely<DB>,
  rows: readonly InstanceRow[],
  now: number,
): Promise<InstanceRow[]> {
  const due: {
    row: InstanceRow;
    m: ReturnType<typeof meter>;
    /** What the renter pays for the period: the list charges less the deposit's discount. */
    total: number;
    split?: { deposit: deposits.DepositRow; parts: SplitCharge };
  }[] = [];
  const out: InstanceRow[] = [];
  for (const row of rows) {
    const s = statusOf(row);
    const m = meter(
      {
        actual_status: s.actual,
        intended_status: s.intended,
        dph_compute: row.dph_compute,
        dph_disk: row.dph_disk,
        billed_until: row.billed_until,
      },
      now,
    );
    if (m.ms === 0) out.push(row);
    else due.push({ row, m, total: m.computeMicros + m.diskMicros });
  }
  if (due.length === 0) return out;
  const held = await deposits.drawableDeposits(
    trx,
    due.map((d) => d.row.id),
  );
  for (const dep of held) {
    const d = due.find((x) => x.row.id === Number(dep.instance_id));
    if (!d) continue;
    const parts = splitCharge(d.m.computeMicros, d.m.diskMicros, dep.remaining_micros, dep.discount_rate);
    d.split = { deposit: dep, parts };
    d.total -= parts.discount;
  }
  // The conditional update decides who charges each period (never read-then-write).
  const won = await repo.chargeInstances(
    trx,
    due.map((d) => ({ id: d.row.id, from: d.row.billed_until, until: d.m.until, micros: d.total })),
  );
  const ledger = [];
  const byUser = new Map<number, number>();
  for (const d of due) {
    if (!won.has(d.row.id)) continue;
    out.push({ ...d.row, billed_until: d.m.until, accrued_micros: d.row.accrued_micros + d.total });
    const at = {
      user_id: d.row.user_id,
      instance_id: d.row.id,
      period_start: d.row.billed_until,
      period_end: d.m.until,
      created_at: now,
    };
    const p = d.split?.parts;
    if (d.m.computeMicros > 0)
      ledger.push({ ...at, kind: 'compute', amount_micros: d.m.computeMicros - (p?.compute.discount ?? 0) });
    if (d.m.diskMicros > 0)
      ledger.push({ ...at, kind: 'disk', amount_micros: d.m.diskMicros - (p?.disk.discount ?? 0) });
    const fromBalance = p ? p.fromBalance : d.total;
    if (fromBalance > 0) byUser.set(d.row.user_id, (byUser.get(d.row.user_id) ?? 0) + fromBalance);
    if (p && (p.drawn > 0 || p.discount > 0)) {
      const drew = await deposits.drawDeposit(trx, d.split!.deposit, {
        drawn: p.drawn,
        discount: p.discount,
        now,
      });
      if (!drew) throw new LostRace(`the deposit of instance ${d.row.id}`);
    }
  }
  await repo.insertLedger(trx, ledger);
  await repo.debitUsers(trx, byUser);
  if (byUser.size > 0) await recordBalanceLow(trx, now, [...byUser.keys()]);
  return out;
}

export const BALANCE_EXHAUSTED_MSG = 'Stopped: account balance exhausted; add credit and start it again';

/**
 * Stops (never destroys) every instance of a user whose balance has run out, settling each first
 * so the compute time up to the stop is charged. Disk keeps accruing until destroy; the
 * machines are released for other clients.
 */
export async function stopForExhaustedBalance(
  trx: Kysely<DB>,
  userId: number,
  now: number,
): Promise<number[]> {
  const rows = await repo.runningInstancesOf(trx, userId);
  const stopped: number[] = [];
  for (const r of rows) {
    await settleInstance(trx, r, now);
    const actual = statusOf(r).actual;
    // Only a container that exists or is on its way is halted; others just lose the start wish.
    const next = actual === null || actual === 'loading' || actual === 'running' ? 'stopped' : actual;
    if (await repo.stopRunning(trx, r.id, next, BALANCE_EXHAUSTED_MSG)) {
      stopped.push(r.id);
      // It was its machine's active instance: the machine is free for others (same transaction).
      await releaseMachine(trx, r.machine_id);
      if (next !== actual)
        await recordEvent(
          trx,
          now,
          instanceEvent(r, actual, next, { intended_status: 'stopped', status_msg: BALANCE_EXHAUSTED_MSG }),
        );
    }
  }
  return stopped;
}

export const balanceOf = repo.balanceOf;

/**
 * Refunds what is left of instance `id`'s prepaid deposit to its renter's balance, once, in the
 * caller's transaction: the instance's destroy calls it after settling the instance (so the
 * charges up to the destroy were drawn first) and after winning the destroy. A ledger row of kind
 * `deposit_refund` records it. The micro-dollars refunded (0 when there was no deposit, or it
 * was refunded before: refunded_at, set by one conditional UPDATE, decides).
 */
export async function refundDeposit(trx: Kysely<DB>, id: number, now: number): Promise<number> {
  const r = await deposits.takeRefund(trx, id, now);
  if (!r || r.refunded_micros <= 0) return 0;
  await repo.addToBalance(trx, r.user_id, r.refunded_micros);
  await deposits.insertDepositLedger(trx, {
    userId: r.user_id,
    instanceId: id,
    kind: 'deposit_refund',
    micros: r.refunded_micros,
    now,
  });
  await recordBalanceLow(trx, now, [r.user_id]);
  return r.refunded_micros;
}

/** The most one credit may add: far above any real payment, far inside a bigint of micro-dollars. */
export const MAX_CREDIT_USD = 1_000_000_000;

/**
 * Adds credit to a user's account (the operator's `admin add-credit`): the balance and a ledger
 * row of kind `credit` move together in one transaction, and a balance alert that had fired is
 * re-armed once the balance is back above its threshold. Instances stopped for an exhausted
 * balance stay stopped until their owner starts them.
 */
export async function addCredit(
  deps: { store: Store; clock: { now(): number } },
  userId: number,
  amountUsd: number,
): Promise<{ ledger_id: number; user_id: number; amount: number; balance: number }> {
  if (!Number.isFinite(amountUsd) || amountUsd <= 0 || amountUsd > MAX_CREDIT_USD)
    throw CommonErrors.badRequest(
      `the credit must be a positive amount of USD, at most ${MAX_CREDIT_USD}, not ${quoteValue(amountUsd)}`,
    );
  const micros = Math.round(amountUsd * MICROS_PER_USD);
  if (micros < 1) throw CommonErrors.badRequest('the credit must be at least $0.000001');
  const now = deps.clock.now();
  return txRetry(deps.store, async (trx) => {
    const balance = await repo.addToBalance(trx, userId, micros);
    if (balance === null) throw CommonErrors.notFound(`No user ${userId}`);
    const id = await repo.insertCredit(trx, userId, micros, now);
    await recordBalanceLow(trx, now, [userId]);
    return { ledger_id: id, user_id: userId, amount: usd(micros), balance: usd(balance) };
  });
}

/**
 * One meter run: settles every live instance billed more than a second ago, then stops the
 * instances of users whose balance is exhausted. Safe with several processes running it at once.
 */
export async function runMeter(
  deps: { store: Store; clock: { now(): number } },
  opts: { batch?: number; chunk?: number } = {},
): Promise<{ settled: number; stopped: number[] }> {
  const now = deps.clock.now();
  const ids = await repo.dueInstanceIds(deps.store.db, now - 1000, opts.batch ?? 1000);
  let settled = 0;
  const stopped: number[] = [];
  // A chunk of instances per transaction, settled together (settleMany: a fixed handful of
  // statements per chunk, not five per instance; at 10,000 live instances the per-instance
  // statements kept a PostgreSQL serve and its database each about 6 % busy with no client at all).
  // An instance another writer settled first is skipped, not retried: nothing was written for it
  // and it is paid up to date already.
  // Between chunks the event loop serves requests: on SQLite every statement resolves at once, so
  // without the turn a run of 1,000 instances was one long stretch of microtasks that every poll
  // waited behind (the bench's polling p99 during heartbeats).
  const chunk = opts.chunk ?? 100;
  for await (const part of chunksWithTurns(ids, chunk)) {
    const out = await txRetry(deps.store, async (trx) => {
      const rows = await repo.liveInstancesByIds(trx, part);
      const after = await settleMany(trx, rows, now);
      const before = new Map(rows.map((r) => [r.id, r.billed_until]));
      const did = after.filter((r) => r.billed_until !== before.get(r.id)).length;
      // Users whose balance is gone: their running instances stop (settled first, in this transaction).
      const userIds = [...new Set(after.map((r) => r.user_id))];
      const stoppedHere: number[] = [];
      for (const u of await repo.exhaustedUsers(trx, userIds))
        stoppedHere.push(...(await stopForExhaustedBalance(trx, u, now)));
      return { did, stopped: stoppedHere };
    });
    settled += out.did;
    stopped.push(...out.stopped);
  }
  return { settled, stopped };
}

const usd = (micros: number) => micros / MICROS_PER_USD;

/** GET /billing/: the balance and each live instance's cost so far and rates. */
export async function billingSummary(db: Kysely<DB>, userId: number) {
  const balance = await repo.balanceOf(db, userId);
  const rows = await repo.instanceCosts(db, userId);
  return {
    success: true,
    balance: usd(balance),
    balance_micros: balance,
    instances: rows.map((r) => ({
      id: r.id,
      actual_status: r.actual_status,
      accrued_cost: usd(r.accrued_micros),
      compute_dph: r.dph_compute,
      disk_dph: r.dph_disk,
      billed_until: r.billed_until / 1000,
    })),
  };
}

/** GET /billing/charges/: a page of the ledger, newest first, and where the next page starts. */
export async function chargesPage(
  db: Kysely<DB>,
  userId: number,
  q: { limit?: number; before_id?: number; instance_id?: number },
) {
  const limit = q.limit ?? 100;
  const rows = await repo.ledgerPage(db, userId, {
    limit: limit + 1,
    beforeId: q.before_id,
    instanceId: q.instance_id,
  });
  const page = rows.slice(0, limit);
  return {
    success: true,
    charges: page.map((r) => ({
      id: r.id,
      instance_id: r.instance_id,
      volume_id: r.volume_id === null ? null : Number(r.volume_id),
      kind: r.kind,
      amount: usd(r.amount_micros),
      amount_micros: r.amount_micros,
      period_start: r.period_start / 1000,
      period_end: r.period_end / 1000,
    })),
    next_before_id: rows.length > limit ? page[page.length - 1]!.id : null,
  };
}

const DAY_MS = 86_400_000;
/** The longest earnings report: a year and a day, so that a whole year fits whatever its start. */
export const MAX_EARNINGS_DAYS = 366;

/**
 * How near "now minus one day" a day count must be to be the official CLI's value for a date it
 * was not given: it sends `time.time() / 86400 - 1` as both ends when a flag is missing (its
 * "yesterday"), the request arriving a moment later.
 */
const CLIENT_DEFAULT_SLACK_DAYS = 600 / 86_400;

/**
 * A day count (days since the epoch, a fraction allowed) from a query string, or a 400; null when
 * it is absent, or is the official CLI's stand-in for an absent date (see above).
 */
function dayOf(name: string, raw: string | undefined, now: number): number | null {
  if (raw === undefined || raw === '' || raw === 'null') return null;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < 0 || v > 1e6)
    throw CommonErrors.badRequest(
      `${name} must be a day count since 1970-01-01 (UTC), e.g. ${Math.floor(now / DAY_MS)}`,
    );
  if (!Number.isInteger(v) && Math.abs(v - (now / DAY_MS - 1)) <= CLIENT_DEFAULT_SLACK_DAYS) return null;
  return Math.floor(v);
}

/** The first UTC day of the calendar month that UTC day `day` falls in. */
function monthStartDay(day: number): number {
  const d = new Date(day * DAY_MS);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / DAY_MS;
}

/**
 * The days an earnings report covers. Without dates, the current period: this UTC month through
 * today, so that a host who started today sees today's earnings, not an empty yesterday. An end
 * alone: its month through that day; a start alone: through today.
 */
export function earningsRange(sdayRaw: number | null, edayRaw: number | null, now: number) {
  const today = Math.floor(now / DAY_MS);
  const eday = edayRaw ?? Math.max(today, sdayRaw ?? today);
  const sday = sdayRaw ?? Math.min(monthStartDay(eday), eday);
  return { sday, eday };
}

/**
 * GET /users/me/machine-earnings (the official CLI's `show earnings`): what renters paid for the
 * caller's machines, from UTC day `sday` through day `eday` (days since the epoch; fractions
 * name the day they fall in; the current period when absent, earningsRange), per machine and per
 * day. A charge counts on the day its billed period ended; periods are one meter interval long, or
 * end at a state change.
 * openrig has no bandwidth charges, so the bandwidth figures are 0. Volume charges are storage
 * (`sto_earn`), on the machine the volume is on.
 */
export async function machineEarnings(
  db: Kysely<DB>,
  hostId: number,
  q: { sday?: string; eday?: string; machid?: string },
  now: number,
) {
  const { sday, eday } = earningsRange(dayOf('sday', q.sday, now), dayOf('eday', q.eday, now), now);
  if (eday < sday) throw CommonErrors.badRequest(`eday (${eday}) is before sday (${sday})`);
  if (eday - sday + 1 > MAX_EARNINGS_DAYS)
    throw CommonErrors.badRequest(
      `a report covers at most ${MAX_EARNINGS_DAYS} days (sday ${sday}, eday ${eday})`,
    );
  let machineId: number | undefined;
  if (q.machid !== undefined && q.machid !== '' && q.machid !== 'null') {
    machineId = Number(q.machid);
    if (!Number.isSafeInteger(machineId) || machineId < 1)
      throw CommonErrors.badRequest(`machid must be a machine id, not ${quoteValue(q.machid)}`);
  }
  const machines = await repo.hostMachineIds(db, hostId, machineId);
  if (machineId !== undefined && machines.length === 0)
    throw CommonErrors.notFound('No such machine, or it is not yours');
  const range = { from: sday * DAY_MS, to: (eday + 1) * DAY_MS, machineId };
  // Instances' compute and disk, and the volumes on the host's machines (storage).
  const rows = [
    ...(await repo.hostEarnings(db, hostId, range)),
    ...(await repo.hostVolumeEarnings(db, hostId, range)),
  ];
  const zero = () => ({ gpu: 0, stor: 0 });
  const perMachine = new Map(machines.map((id) => [id, zero()]));
  const perDay = new Map(Array.from({ length: eday - sday + 1 }, (_, i) => [sday + i, zero()]));
  const total = zero();
  for (const r of rows) {
    const micros = Number(r.micros);
    const part = r.kind === 'compute' ? 'gpu' : 'stor';
    for (const acc of [perMachine.get(Number(r.machine_id)), perDay.get(Number(r.day)), total])
      if (acc) acc[part] += micros;
  }
  const earnings = (e: { gpu: number; stor: number }) => ({
    gpu_earn: usd(e.gpu),
    sto_earn: usd(e.stor),
    bwu_earn: 0,
    bwd_earn: 0,
    earn: usd(e.gpu + e.stor),
  });
  return {
    success: true,
    sday,
    eday,
    start: (sday * DAY_MS) / 1000,
    end: ((eday + 1) * DAY_MS) / 1000,
    summary: {
      total_gpu: usd(total.gpu),
      total_stor: usd(total.stor),
      total_bwu: 0,
      total_bwd: 0,
      total_earn: usd(total.gpu + total.stor),
    },
    per_machine: [...perMachine].map(([id, e]) => ({ machine_id: id, ...earnings(e) })),
    per_day: [...perDay].map(([day, e]) => ({
      day,
      date: new Date(day * DAY_MS).toISOString().slice(0, 10),
      ...earnings(e),
    })),
  };
}
