// Prepaid (reserved) instances: the discount schedule and how a charge is split between the
// deposit, its discount and the balance (docs/market.md, Reservations). Pure.
// - A prepay's discount comes from the months its deposit covers at the instance's list price
//   (compute and disk, $/h, a month being the meter's 720 hours): the rate of the highest
//   threshold of the schedule (OPENRIG_PREPAY_DISCOUNTS) that many months reach.
// - A charge draws on the deposit first, at the discounted rate; what the deposit cannot cover is
//   charged to the balance at the list rate. Every amount is whole micro-dollars and each part of
//   a charge adds up exactly: list = from deposit + discount + from balance.
import type { PrepayDiscount } from '../../config.js';
import { HOURS_PER_MONTH, MICROS_PER_USD } from './billing.meter.js';

/** Months of list-price charges `micros` covers at `dph` $/hour (0 when the instance costs nothing). */
export function monthsCovered(micros: number, dph: number): number {
  if (dph <= 0) return 0;
  return micros / (dph * HOURS_PER_MONTH * MICROS_PER_USD);
}

/** The discount rate (a fraction) of a deposit covering `months`: the highest threshold reached. */
export function discountRate(schedule: readonly PrepayDiscount[], months: number): number {
  let rate = 0;
  for (const s of schedule) if (months >= s.months) rate = s.rate;
  return rate;
}

/** One kind's charge (compute or disk) split: fromDeposit + discount + fromBalance = its list amount. */
export interface ChargePart {
  fromDeposit: number;
  discount: number;
  fromBalance: number;
}

/** A charge's parts and what the deposit has left after it. */
export interface SplitCharge {
  compute: ChargePart;
  disk: ChargePart;
  /** fromDeposit of both kinds. */
  drawn: number;
  /** discount of both kinds. */
  discount: number;
  /** fromBalance of both kinds. */
  fromBalance: number;
}

/**
 * `list` micro-dollars paid from a deposit holding `avail` at discount `rate`, as far as it goes:
 * covered in full it costs list less its rounded discount; otherwise the deposit is used up and
 * covers the list amount it buys at that rate (rounded, never more than `list`), and the balance
 * pays the rest at the list rate.
 */
export function coverPart(list: number, avail: number, rate: number): ChargePart {
  if (list <= 0) return { fromDeposit: 0, discount: 0, fromBalance: 0 };
  const full = list - Math.round(list * rate);
  if (avail >= full) return { fromDeposit: full, discount: list - full, fromBalance: 0 };
  if (avail <= 0) return { fromDeposit: 0, discount: 0, fromBalance: list };
  // avail < full <= list, and a rate below 1 makes covered >= avail: every part is >= 0.
  const covered = Math.min(list, Math.round(avail / (1 - rate)));
  return { fromDeposit: avail, discount: covered - avail, fromBalance: list - covered };
}

/**
 * A period's compute and disk charges (list micro-dollars) paid from a deposit holding `avail`
 * at discount `rate`: compute first, then disk from what is left.
 */
export function splitCharge(
  computeMicros: number,
  diskMicros: number,
  avail: number,
  rate: number,
): SplitCharge {
  const compute = coverPart(computeMicros, avail, rate);
  const disk = coverPart(diskMicros, avail - compute.fromDeposit, rate);
  return {
    compute,
    disk,
    drawn: compute.fromDeposit + disk.fromDeposit,
    discount: compute.discount + disk.discount,
    fromBalance: compute.fromBalance + disk.fromBalance,
  };
}
