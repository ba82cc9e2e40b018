// Billing history in the official CLI's `show invoices` format, read from the ledger: the credits
// (payments into the account), one item each, and the charges summed per instance, UTC day and
// kind (the meter writes a row per instance and meter interval; a day of them is one item), and
// per volume and UTC day (kind `volume`, the item naming the volume).
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import { CommonErrors, quoteValue } from '../../errors.js';
import { roundPrice } from '../../../contract/money.js';
import type { InvoiceItem } from '../../../contract/api-types.js';
import { MICROS_PER_USD } from './billing.meter.js';
import { balanceOf } from './billing.repo.js';
import * as repo from './billing.invoices.repo.js';

const DAY_MS = 86_400_000;
/** The longest history one call returns: a year and a day, as the earnings report. */
export const MAX_INVOICE_DAYS = 366;
/** The history without `sdate`: the 30 days up to `edate`. */
export const DEFAULT_INVOICE_DAYS = 30;
/** Hours in a month of a volume's $ per GB-month (as for instance disks). */
const HOURS_PER_MONTH = 720;
/** The latest time a date parameter may name: 9999-12-31T23:59:59Z. */
const MAX_EPOCH_S = 253_402_300_799;
/** Who adds credit in openrig: the operator (`admin create-user --balance`, `admin add-credit`). */
export const CREDIT_SERVICE = 'operator';
export const CREDIT_DESCRIPTION = 'Credit added to the account';

const bad = (msg: string) => CommonErrors.badRequest(msg);
export const usd = (micros: number) => micros / MICROS_PER_USD;
/** Hours of `ms`, to the micro-hour. */
export const hours = (ms: number) => Math.round(ms / 3.6) / 1e6;
/** A UTC day number as YYYY-MM-DD. */
export const dayDate = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);

const absent = (raw: string | undefined) =>
  raw === undefined || raw === '' || raw === 'null' || raw === 'None';

/** Epoch seconds from a query string (a fraction allowed), undefined when absent, else a 400. */
export function epochParam(name: string, raw: string | undefined): number | undefined {
  if (absent(raw)) return undefined;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < 0 || v > MAX_EPOCH_S)
    throw bad(`${name} must be a time in epoch seconds (UTC), e.g. 1767225600, not ${quoteValue(raw)}`);
  return v;
}

/** A boolean query value as Python's json.dumps writes it (true/false), 1/0 or True/False. */
export function boolParam(name: string, raw: string | undefined, fallback: boolean): boolean {
  if (absent(raw)) return fallback;
  if (raw === 'true' || raw === 'True' || raw === '1') return true;
  if (raw === 'false' || raw === 'False' || raw === '0') return false;
  throw bad(`${name} must be true or false, not ${quoteValue(raw)}`);
}

export interface InvoicesQuery {
  sdate?: string;
  edate?: string;
  inc_charges?: string;
}

/**
 * GET /users/me/invoices (the official CLI's `show invoices`): the caller's items from `sdate`
 * through `edate` (epoch seconds; a charge is in when its billed period ended in (sdate, edate],
 * a credit when it was added then), oldest first. Charges: per instance, UTC day and kind, with
 * quantity in hours, rate in $/h (the instance's locked rate) and amount in $, and per volume and
 * UTC day (kind `volume`, `volume_id`, rate its GB × $/GB-month over 720 hours); only with
 * inc_charges (default true). Credits: type `payment`, one each. `current`: today's (UTC)
 * charges so far and the balance.
 */
export async function showInvoices(db: Kysely<DB>, userId: number, q: InvoicesQuery, now: number) {
  const edate = epochParam('edate', q.edate) ?? now / 1000;
  const sdate = epochParam('sdate', q.sdate) ?? Math.max(0, edate - DEFAULT_INVOICE_DAYS * 86_400);
  if (sdate > edate) throw bad(`sdate (${sdate}) is after edate (${edate})`);
  if (edate - sdate > MAX_INVOICE_DAYS * 86_400)
    throw bad(`a history covers at most ${MAX_INVOICE_DAYS} days (sdate ${sdate}, edate ${edate})`);
  const incCharges = boolParam('inc_charges', q.inc_charges, true);
  const range = { from: Math.floor(sdate * 1000), to: Math.floor(edate * 1000) };
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const [charges, volumeCharges, credits, todayMicros, balance] = await Promise.all([
    incCharges ? repo.dailyCharges(db, userId, range) : Promise.resolve([]),
    incCharges ? repo.dailyVolumeCharges(db, userId, range) : Promise.resolve([]),
    repo.creditsBetween(db, userId, range),
    repo.chargedSince(db, userId, today),
    balanceOf(db, userId),
  ]);
  let chargedMicros = 0;
  let creditedMicros = 0;
  const items: InvoiceItem[] = [];
  for (const c of charges) {
    const micros = Number(c.micros);
    chargedMicros += micros;
    const id = Number(c.instance_id);
    const date = dayDate(Number(c.day));
    const compute = c.kind === 'compute';
    items.push({
      type: 'charge',
      kind: compute ? 'compute' : 'disk',
      instance_id: id,
      description: compute
        ? `Instance ${id} compute${Number(c.is_bid) === 1 ? ' (interruptible, at its bid)' : ''}, ${date} (UTC)`
        : `Instance ${id} disk (${c.disk} GB), ${date} (UTC)`,
      quantity: hours(Number(c.ms)),
      rate: roundPrice(compute ? c.dph_compute : c.dph_disk),
      amount: usd(micros),
      timestamp: Number(c.end) / 1000,
      start: Number(c.start) / 1000,
      end: Number(c.end) / 1000,
    });
  }
  for (const c of volumeCharges) {
    const micros = Number(c.micros);
    chargedMicros += micros;
    const id = Number(c.volume_id);
    const gb = Number(c.size_gb);
    items.push({
      type: 'charge',
      kind: 'volume',
      instance_id: null,
      volume_id: id,
      description: `Volume ${id}${c.label ? ` (${c.label})` : ''} storage (${gb} GB at $${roundPrice(c.storage_cost)}/GB/month), ${dayDate(Number(c.day))} (UTC)`,
      quantity: hours(Number(c.ms)),
      rate: roundPrice((gb * c.storage_cost) / HOURS_PER_MONTH),
      amount: usd(micros),
      timestamp: Number(c.end) / 1000,
      start: Number(c.start) / 1000,
      end: Number(c.end) / 1000,
    });
  }
  for (const c of credits) {
    creditedMicros -= c.amount_micros;
    items.push({
      id: c.id,
      type: 'payment',
      service: CREDIT_SERVICE,
      description: CREDIT_DESCRIPTION,
      amount: usd(-c.amount_micros),
      timestamp: c.created_at / 1000,
      instance_id: null,
    });
  }
  // Oldest first; within one moment, by instance, volume and kind (the same on both databases).
  items.sort(
    (a, b) =>
      a.timestamp - b.timestamp ||
      (a.instance_id ?? 0) - (b.instance_id ?? 0) ||
      (a.volume_id ?? 0) - (b.volume_id ?? 0) ||
      (a.kind ?? '').localeCompare(b.kind ?? ''),
  );
  return {
    success: true,
    sdate,
    edate,
    invoices: items,
    totals: { charges: usd(chargedMicros), credits: usd(creditedMicros) },
    current: {
      charges: usd(todayMicros),
      service_fee: 0,
      total: usd(todayMicros),
      credit: usd(balance),
    },
  };
}

/** The most instance ids one label look-up takes. */
export const MAX_CONTRACT_IDS = 10_000;

/**
 * POST /contracts/fetch/ (`show invoices --instance_label`): those of `contract_ids` that are the
 * caller's instances (destroyed ones included: their charges are history too) labelled exactly
 * `label`.
 */
export async function contractsLabelled(
  db: Kysely<DB>,
  userId: number,
  body: { label: string; contract_ids: number[] },
) {
  const ids = [...new Set(body.contract_ids)];
  const rows = await repo.instancesLabelled(db, userId, ids, body.label);
  return { success: true, contracts: rows.map((r) => ({ id: Number(r.id), label: r.label })) };
}
