// The market's loop: every OPENRIG_MARKET_INTERVAL_MS (1 s), machines that are free while bids wait
// on them get decided again, so a waiting bid resumes by itself whatever freed the machine (a stop
// for an exhausted balance, a stop or destroy in another process, credit added to a bidder).
// The moves that free a machine in this module decide at once; this loop is the backstop. Safe
// with several `serve` processes: each decision locks the machine row (instances.market.ts).
import type { Deps } from '../deps.types.js';
import { resumeWaitingBids } from '../modules/instances/instances.market.js';
import { every, type Job } from './every.js';

export const MARKET_INTERVAL_MS = 1000;

export function startMarket(deps: Deps, onError: (err: unknown) => void): Job {
  return every(
    'market',
    MARKET_INTERVAL_MS,
    async () => {
      const resumed = await resumeWaitingBids(deps);
      if (resumed.length > 0) {
        // Their machines' agents start them now, not at their next heartbeat.
        deps.agentWake.notify(resumed.map((r) => r.machine));
        deps.log.info({ resumed: resumed.map((r) => r.instance) }, 'waiting bids resumed');
      }
    },
    onError,
  );
}
