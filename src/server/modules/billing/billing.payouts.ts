// Host payouts (docs/payouts.md). Every charge a renter pays for a host's machine is that host's
// earning (the ledger's compute and disk rows; a prepaid instance's rows are what the renter
// paid). A payout run, at the end of each period (OPENRIG_PAYOUT_PERIOD_DAYS, weekly by
// default, periods ending at UTC midnight counted from Monday 1970-01-05), gives each host whose
// earnings since its last payout reach OPENRIG_PAYOUT_MIN_USD a `pending` payout of them, less
// the platform fee (OPENRIG_PLATFORM_FEE_PERCENT, kept as cut_percent and cut_micros);
// smaller earnings roll over into the next period. An operator pays it by hand and marks it
// `paid` or `failed`; a failed payout's earnings go into the host's next payout. So the sum of
// what renters paid equals the payouts' net plus their cuts plus what has not been paid out yet,
// to the micro-dollar: each charge falls in exactly one payout's (period_start, period_end].
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { Store } from '../../db/connection.js';
import { isUniqueViolation, tx } from '../../db/connection.js';
import { CommonErrors, quoteValue } from '../../errors.js';
import { hasControlChars } from '../../http/plain-text.js';
import { MICROS_PER_USD } from './billing.meter.js';
import * as repo from './billing.payouts.repo.js';
import { recordEvent } from '../webhooks/webhooks.events.js';

const DAY_MS = 86_400_000;
/** Periods are counted from Monday 1970-01-05 (day 4 since the epoch), so a week ends on Monday 00:00 UTC. */
const FIRST_MONDAY_MS = 4 * DAY_MS;
/**
 * A run closes only periods that ended at least this long ago: a charge is written by a
 * transaction that read its time before it committed, so one that settled up to a period's end
 * may still be committing just after it; waiting this long lets it land before the run sums the
 * period (each charge then falls in exactly one payout).
 */
export const PAYOUT_SETTLE_MS = 5_000;

export interface PayoutConfig {
  platformFeePercent: number;
  payoutMinUsd: number;
  payoutPeriodDays: number;
}

/**
 * The end (epoch ms) of the last whole payout period at `now`: payouts cover charges up to it.
 * Periods are `periodDays` long (a fraction allowed, rounded to the millisecond), counted from
 * Monday 1970-01-05 00:00 UTC, so whole days end at UTC midnight and weeks on Mondays.
 */
export function payoutCutoff(now: number, periodDays: number): number {
  const periodMs = Math.max(1, Math.round(periodDays * DAY_MS));
  return FIRST_MONDAY_MS + Math.floor((now - FIRST_MONDAY_MS) / periodMs) * periodMs;
}

/** The fee on `grossMicros` at `percent`, in whole micro-dollars (rounded half up). */
export function platformCut(grossMicros: number, percent: number): number {
  return Math.round((grossMicros * percent) / 100);
}

const usd = (micros: number) => micros / MICROS_PER_USD;

/** A payout as the API, the CLI and the CSV show it. */
export function payoutView(p: repo.PayoutRow) {
  return {
    id: Number(p.id),
    host_id: Number(p.host_id),
    status: p.status,
    method: p.method,
    destination: p.destination,
    period_start: Number(p.period_start) / 1000,
    period_end: Number(p.period_end) / 1000,
    gross: usd(Number(p.gross_micros)),
    cut_percent: p.cut_percent,
    cut_amount: usd(Number(p.cut_micros)),
    amount: usd(Number(p.net_micros)),
    note: p.note,
    created_at: Number(p.created_at) / 1000,
    settled_at: p.settled_at === null ? null : Number(p.settled_at) / 1000,
  };
}

/** payout.created / payout.paid, to the host, with the payout as the API shows it. */
function payoutEvent(p: repo.PayoutRow, type: 'payout.created' | 'payout.paid') {
  return { userId: Number(p.host_id), type, subject: `payout:${p.id}`, data: payoutView(p) };
}

/**
 * One payout run at `now`: for each host, its earnings from the end of its last payout that did
 * not fail up to the last period's end; a `pending` payout of them when they reach the minimum.
 * Safe with several processes running it at once: of two runs making the same host's payout from
 * the same start, the unique index keeps one. Returns the payouts it made.
 */
export async function runPayouts(deps: {
  store: Store;
  clock: { now(): number };
  config: { billing: PayoutConfig };
}): Promise<repo.PayoutRow[]> {
  const cfg = deps.config.billing;
  const now = deps.clock.now();
  const cutoff = payoutCutoff(now - PAYOUT_SETTLE_MS, cfg.payoutPeriodDays);
  const minMicros = Math.round(cfg.payoutMinUsd * MICROS_PER_USD);
  const made: repo.PayoutRow[] = [];
  for (const h of await repo.hostCursors(deps.store.db)) {
    if (h.cursor >= cutoff) continue;
    const gross = await repo.hostGross(deps.store.db, h.host_id, h.cursor, cutoff);
    // Below the minimum (or nothing): it rolls over, the next run counts from the same start.
    if (gross <= 0 || gross < minMicros) continue;
    const cut = platformCut(gross, cfg.platformFeePercent);
    try {
      const p = await tx(deps.store, async (trx) => {
        const dest = await repo.destinationOf(trx, h.host_id);
        const row = await repo.insertPayout(trx, {
          host_id: h.host_id,
          period_start: h.cursor,
          period_end: cutoff,
          gross_micros: gross,
          cut_percent: cfg.platformFeePercent,
          cut_micros: cut,
          net_micros: gross - cut,
          method: dest?.method ?? 'none',
          destination: dest?.destination ?? '',
          created_at: now,
        });
        await recordEvent(trx, now, payoutEvent(row, 'payout.created'));
        return row;
      });
      made.push(p);
    } catch (err) {
      // Another process made this host's payout from this start first.
      if (!isUniqueViolation(err)) throw err;
    }
  }
  return made;
}

/**
 * Marks a pending payout paid or failed (the operator's `admin payouts mark`), with a note (the
 * transfer's reference, or why it failed). Only a pending payout moves (a conditional UPDATE: of
 * two operators marking it, one wins, the other is a 409). A payout may fail only while no later
 * payout of its host exists: its earnings then go into the host's next payout.
 */
export async function markPayout(
  deps: { store: Store; clock: { now(): number } },
  id: number,
  to: 'paid' | 'failed',
  note = '',
) {
  if (to !== 'paid' && to !== 'failed')
    throw CommonErrors.badRequest(`a payout is marked paid or failed, not ${quoteValue(to)}`);
  const now = deps.clock.now();
  return tx(deps.store, async (trx) => {
    const p = await repo.payoutById(trx, id);
    if (!p) throw CommonErrors.notFound(`No payout ${id}`);
    if (to === 'failed' && (await repo.laterPayout(trx, Number(p.host_id), Number(p.period_end))))
      throw CommonErrors.conflict(
        `payout ${id} has a later payout of the same host: mark that one failed first, or this one paid`,
      );
    const after = await repo.settlePayout(trx, { id, to, note, now });
    if (!after) throw CommonErrors.conflict(`payout ${id} is ${p.status}, not pending`);
    if (to === 'paid') await recordEvent(trx, now, payoutEvent(after, 'payout.paid'));
    return payoutView(after);
  });
}

/**
 * `show earnings`' `current`: what the host is owed now. `total` is its earnings since its last
 * payout that did not fail (not yet in a payout), `service_fee` the platform fee on them at
 * today's rate, `balance` what openrig owes it (its pending payouts' amounts plus total −
 * service_fee), and `credit` its account's own balance (what it can spend as a renter). USD.
 */
export async function currentEarnings(
  db: Kysely<DB>,
  hostId: number,
  now: number,
  feePercent: number,
  creditMicros: number,
) {
  const cursor = await repo.hostCursor(db, hostId);
  const gross = await repo.hostGross(db, hostId, cursor, now);
  const fee = platformCut(gross, feePercent);
  const pending = await repo.pendingNet(db, hostId);
  return {
    balance: usd(pending + gross - fee),
    service_fee: usd(fee),
    total: usd(gross),
    credit: usd(creditMicros),
  };
}

export async function listPayouts(db: Kysely<DB>, p: { status?: string; hostId?: number } = {}) {
  return (await repo.listPayouts(db, p)).map(payoutView);
}

const CSV_COLUMNS = [
  'id',
  'host_id',
  'status',
  'method',
  'destination',
  'period_start',
  'period_end',
  'gross',
  'cut_percent',
  'cut_amount',
  'amount',
  'note',
] as const;

/** A CSV field: quoted when it holds a comma, a quote or a line break; a formula-like start defused. */
function csvField(v: string | number | null): string {
  let s = v === null ? '' : String(v);
  if (/^[=+\-@\t\r]/.test(s) && typeof v === 'string') s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** Payouts as CSV (a header line, then one line each), for a bank's or a payment service's batch upload. */
export async function payoutsCsv(db: Kysely<DB>, p: { status?: string } = {}): Promise<string> {
  const rows = await listPayouts(db, p);
  const lines = [CSV_COLUMNS.join(',')];
  for (const r of rows) lines.push(CSV_COLUMNS.map((c) => csvField(r[c])).join(','));
  return lines.join('\n') + '\n';
}

/** Payout methods a host may choose, as the official CLI's invoice types name them. */
export const PAYOUT_METHODS = ['paypal_manual', 'wise_manual', 'internal'] as const;
export type PayoutMethod = (typeof PAYOUT_METHODS)[number];

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The field each method is given in (PUT /users/ for the official CLI's two, the payouts route for all). */
export const PAYOUT_FIELD: Record<PayoutMethod, string> = {
  paypal_manual: 'paypal_email',
  wise_manual: 'wise_email',
  internal: 'internal_account',
};

/**
 * What is wrong with a payout destination (null when nothing): a PayPal or Wise e-mail, or a
 * free-text internal account, 1 to 200 characters of plain text.
 */
export function payoutDestinationProblem(method: string, destination: string): string | null {
  if (!(PAYOUT_METHODS as readonly string[]).includes(method))
    return `a payout method is one of ${PAYOUT_METHODS.join(', ')}, not ${quoteValue(method)}`;
  const d = destination.trim();
  if (d.length === 0 || d.length > 200 || hasControlChars(d))
    return `${PAYOUT_FIELD[method as PayoutMethod]} is 1 to 200 characters of plain text`;
  if (method !== 'internal' && !EMAIL.test(d))
    return `${PAYOUT_FIELD[method as PayoutMethod]} must be an e-mail address`;
  return null;
}

/**
 * Writes (or, with null, forgets) where a host is paid, in the caller's transaction. Later payouts
 * carry it; pending ones keep the destination they were made with. Checked by the caller.
 */
export async function writePayoutDestination(
  db: Kysely<DB>,
  hostId: number,
  dest: { method: PayoutMethod; destination: string } | null,
  now: number,
): Promise<void> {
  if (dest === null) await repo.clearDestination(db, hostId);
  else
    await repo.setDestination(db, {
      hostId,
      method: dest.method,
      destination: dest.destination.trim(),
      now,
    });
}

/** Where a host is paid, or null when it set nothing. */
export async function payoutDestination(db: Kysely<DB>, hostId: number) {
  const d = await repo.destinationOf(db, hostId);
  return d ? { method: d.method, destination: d.destination, updated_at: Number(d.updated_at) / 1000 } : null;
}

/**
 * Sets where a host is paid: a PayPal or Wise e-mail, or a free-text internal account (at most
 * 200 characters). Later payouts carry it; pending ones keep the destination they were made with.
 */
export async function setPayoutDestination(
  deps: { store: Store; clock: { now(): number } },
  hostId: number,
  method: PayoutMethod,
  destination: string,
): Promise<void> {
  const problem = payoutDestinationProblem(method, destination);
  if (problem) throw CommonErrors.badRequest(problem);
  await writePayoutDestination(deps.store.db, hostId, { method, destination }, deps.clock.now());
}
