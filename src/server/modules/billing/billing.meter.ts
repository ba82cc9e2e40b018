// The billing meter (docs/market.md). Pure.
// - Compute is charged per whole second, only while the instance runs and the client wants it
//   running (isComputeBilled); stopping halts it at once.
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
  /** The new billed_until: advanced by whole seconds only, the remainder waits for the next run. */
  until: number;
  seconds: number;
  computeMicros: number;
  diskMicros: number;
}

/** $/hour for `seconds`, in micro-dollars (rounded to the nearest micro-dollar). */
export function chargeMicros(dph: number, seconds: number): number {
  if (seconds <= 0 || dph <= 0) return 0;
  return Math.round((dph * MICROS_PER_USD * seconds) / 3600);
}

/** $/hour of a disk of `gb` at `perGbMonth` $/GB-month. */
export function diskDph(perGbMonth: number, gb: number): number {
  return (perGbMonth * gb) / HOURS_PER_MONTH;
}

export function meter(i: MeterInput, now: number): MeterResult {
  const seconds = Math.max(0, Math.floor((now - i.billed_until) / 1000));
  const computing = isComputeBilled({ actual: i.actual_status, intended: i.intended_status });
  return {
    until: i.billed_until + seconds * 1000,
    seconds,
    computeMicros: computing ? chargeMicros(i.dph_compute, seconds) : 0,
    diskMicros: chargeMicros(i.dph_disk, seconds),
  };
}
