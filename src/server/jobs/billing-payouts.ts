// Host payouts: once an hour, by one `serve` process of all those sharing the database (its turn
// claimed through job_turns, jobs/turns.ts), each host's earnings up to the end of the last
// payout period become a pending payout when they reach the minimum (billing.payouts runPayouts).
// A run that finds the period's payouts made already makes none (and the unique index on a
// host's payout start would refuse a second one anyway).
import type { Deps } from '../deps.types.js';
import { every, type Job } from './every.js';
import { claimTurn } from './turns.js';
import { runPayouts } from '../modules/billing/billing.payouts.js';

export const PAYOUTS_JOB = 'billing-payouts';
export const PAYOUTS_PERIOD_MS = 3_600_000;
const CHECK_EVERY_MS = 300_000;

export function startBillingPayouts(deps: Deps, onError: (err: unknown) => void): Job {
  return every(
    PAYOUTS_JOB,
    CHECK_EVERY_MS,
    async () => {
      if (!(await claimTurn(deps.db, PAYOUTS_JOB, deps.clock.now(), PAYOUTS_PERIOD_MS))) return;
      const made = await runPayouts(deps);
      if (made.length > 0)
        deps.log.info(
          { payouts: made.map((p) => Number(p.id)) },
          'payouts made: pending until an operator pays them',
        );
    },
    onError,
  );
}
