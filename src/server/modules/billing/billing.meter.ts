// The billing meter (docs/market.md). Pure.
// - Compute is charged only while the instance runs and the client wants it running
//   (isComputeBilled); stopping halts it at once.
// - Time is charged to the millisecond, and amounts are whole micro-dollars without losing the
//   fractions: a period [from, until] at a rate costs the rate's running total at `until`, rounded,
//   less its running total at `from`, rounded (both from the epoch). Consecutive periods share
//   their bounds, so their amounts add up to the running total over their whole span, whatever
//   the meter's interval: a 10 GB disk metered every second costs what it costs metered hourly,
//   instead of nothing (each second's 0.39 micro-dollars rounded away).
// - Disk is charged from creation until destroy, in every state (stopped, exited, unknown,
//   offline included): "disk charges continue until then".
// - Prices are locked at creation: dph_compute ($/h) and dph_disk ($/h for the whole disk, from
//   the host's $/GB-month with a month of 30 days = 720 h).
// Every state change settles the instance first (billing.service settleInstance), so between two
// settlements the state is constant and one rate applies to the whole period.
import {
  isComputeBilled,
  type ActualStatus,
  type IntendedStatus,
} from '../../../contract/instance-states.js';

/** Hours in the billing month that turns $/GB-month into $/GB-hour. */
export const HOURS_PER_MONTH = 720;
export const MICROS_PER_USD = 1_000_000;

export interface MeterInput {
  actual_status: ActualStatus;
  intended_status: IntendedStatus;
  dph_compute: number;
  dph_disk: number;
  /** Epoch ms up to which the instance is charged. */
  billed_until: number;
}

export interface MeterResult {
  /** The new billed_until: `now`, or billed_until when that is later. */
  until: number;
  /** Milliseconds charged: until - billed_until. */
  ms: number;
  computeMicros: number;
  diskMicros: number;
}

/** The running total of $/hour `dph` from the epoch to `t` (epoch ms), in whole micro-dollars. */
function runningMicros(dph: number, t: number): number {
  // dph * 1e6 micro-dollars an hour, an hour being 3.6e6 ms.
  return Math.round((dph * t) / 3.6);
}

/**
 * $/hour for the period from `from` to `until` (epoch ms), in micro-dollars: the difference of
 * the running totals, so that periods sharing a bound add up exactly.
 */
export function chargeMicros(dph: number, from: number, until: number): number {
  if (until <= from || dph <= 0) return 0;
  return runningMicros(dph, until) - runningMicros(dph, from);
}

/** $/hour of a disk of `gb` at `perGbMonth` $/GB-month. */
export function diskDph(perGbMonth: number, gb: number): number {
  return (perGbMonth * gb) / HOURS_PER_MONTH;
}

export function meter(i: MeterInput, now: number): MeterResult {
  const until = Math.max(i.billed_until, now);
  const computing = isComputeBilled({ actual: i.actual_status, intended: i.intended_status });
  return {
    until,
    ms: until - i.billed_until,
    computeMicros: computing ? chargeMicros(i.dph_compute, i.billed_until, until) : 0,
    diskMicros: chargeMicros(i.dph_disk, i.billed_until, until),
  };
}
