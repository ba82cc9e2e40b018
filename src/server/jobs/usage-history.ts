// Usage history upkeep: once an hour, by one `serve` process of all those sharing the database
// (its turn claimed through job_turns, jobs/turns.ts), the minute samples older than a day are
// rolled into hourly ones and hourly ones past their retention deleted
// (usage-history.service.ts). Every process checks every CHECK_EVERY_MS whether the turn is due.
import type { Deps } from '../deps.types.js';
import { every, type Job } from './every.js';
import { claimTurn } from './turns.js';
import { rollUpUsage, type RollUpResult } from '../modules/usage-history/usage-history.service.js';

export const USAGE_HISTORY_JOB = 'usage-history';
export const USAGE_HISTORY_PERIOD_MS = 3_600_000;
const CHECK_EVERY_MS = 300_000;

/** One check: rolls up and prunes when this process wins the turn; null when another has it. */
export async function usageHistoryPass(
  deps: Pick<Deps, 'store' | 'db' | 'clock'>,
): Promise<RollUpResult | null> {
  const now = deps.clock.now();
  if (!(await claimTurn(deps.db, USAGE_HISTORY_JOB, now, USAGE_HISTORY_PERIOD_MS))) return null;
  return rollUpUsage(deps, now);
}

export function startUsageHistory(deps: Deps, onError: (err: unknown) => void): Job {
  return every(
    USAGE_HISTORY_JOB,
    CHECK_EVERY_MS,
    async () => {
      const r = await usageHistoryPass(deps);
      if (r && r.rolled + r.pruned > 0)
        deps.log.info({ rolled: r.rolled, pruned: r.pruned }, 'usage history: minutes rolled into hours');
    },
    onError,
  );
}
