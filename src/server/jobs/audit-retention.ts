// Audit retention: audit rows older than OPENRIG_AUDIT_RETENTION_DAYS and addresses not seen for
// that long are deleted once an hour, by one `serve` process of all those sharing the database
// (its turn claimed through job_turns, jobs/turns.ts). Every process checks every
// CHECK_EVERY_MS whether the turn is due, so the hour is kept whichever nodes are up.
import type { Deps } from '../deps.types.js';
import { every, type Job } from './every.js';
import { claimTurn } from './turns.js';
import { pruneAudit, type PruneResult } from '../modules/audit/audit.service.js';

export const AUDIT_RETENTION_JOB = 'audit-retention';
export const AUDIT_RETENTION_PERIOD_MS = 3_600_000;
const CHECK_EVERY_MS = 300_000;

/** One check: prunes when this process wins the turn; null when another has it. */
export async function auditRetentionPass(
  deps: Pick<Deps, 'db' | 'clock' | 'config'>,
): Promise<PruneResult | null> {
  if (!(await claimTurn(deps.db, AUDIT_RETENTION_JOB, deps.clock.now(), AUDIT_RETENTION_PERIOD_MS)))
    return null;
  return pruneAudit(deps);
}

export function startAuditRetention(deps: Deps, onError: (err: unknown) => void): Job {
  return every(
    AUDIT_RETENTION_JOB,
    CHECK_EVERY_MS,
    async () => {
      const r = await auditRetentionPass(deps);
      if (r && r.auditRows + r.addresses > 0)
        deps.log.info(
          { audit_rows: r.auditRows, addresses: r.addresses },
          'audit retention: old rows deleted',
        );
    },
    onError,
  );
}
