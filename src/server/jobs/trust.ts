// Earned reliability (docs/trust.md): every minute the uptime sampler counts the time since its
// last sample for every machine expected online (the sampler row's conditional update makes one
// process count each interval), and every ten minutes one process (its turn claimed through
// job_turns) recomputes every judged machine's reliability onto its row, where offer search reads it.
import type { Deps } from '../deps.types.js';
import { every, type Job } from './every.js';
import { claimTurn } from './turns.js';
import { computeReliability, sampleUptime, UPTIME_SAMPLE_MS } from '../modules/trust/trust.service.js';

export const RELIABILITY_JOB = 'trust-reliability';
export const RELIABILITY_PERIOD_MS = 600_000;

export function startTrust(deps: Deps, onError: (err: unknown) => void): Job {
  return every(
    'trust',
    UPTIME_SAMPLE_MS,
    async () => {
      await sampleUptime(deps);
      if (await claimTurn(deps.db, RELIABILITY_JOB, deps.clock.now(), RELIABILITY_PERIOD_MS))
        await computeReliability(deps);
    },
    onError,
  );
}
