// Background loops of a `serve` process. Each is safe with several `serve` processes on one
// PostgreSQL: work is claimed by conditional updates, never by in-process state.
import type { Deps } from '../deps.types.js';
import { startOutboxRelay } from '../modules/notifications/notifications.relay.js';
import { startHeartbeatSweep } from './heartbeat-sweep.js';
import { startBillingMeter } from './billing-meter.js';
import { startBillingPayouts } from './billing-payouts.js';
import { startWebhookDispatcher } from '../modules/webhooks/webhooks.dispatcher.js';
import { startAuditRetention } from './audit-retention.js';
import { startUsageHistory } from './usage-history.js';
import { startMarket } from './market.js';
import { startBudgetCheck } from '../modules/quotas/quotas.budget.js';
import { startTrust } from './trust.js';
import type { Job } from './every.js';

export type { Job };

/** Starts every background loop; main.ts stops them on SIGTERM (after the HTTP server drains). */
export function startJobs(deps: Deps): Job[] {
  const jobs: Job[] = [];
  const onError = (name: string) => (err: unknown) =>
    deps.log.error({ err, job: name }, 'background job failed');
  void onError;
  // The e-mail relay: woken by deps.kickOutbox after a commit that enqueued mail; its
  // stop() flushes what is due, so SIGTERM loses no mail.
  const relay = startOutboxRelay(deps);
  deps.kickOutbox = () => relay.kick();
  jobs.push(relay);
  jobs.push(startHeartbeatSweep(deps, onError('heartbeat-sweep')));
  jobs.push(startBillingMeter(deps, onError('billing-meter')));
  // Host payouts at the end of each payout period: once an hour across every process (a turn).
  jobs.push(startBillingPayouts(deps, onError('billing-payouts')));
  // Webhook deliveries: one lane per endpoint, so a dead endpoint delays no one else.
  jobs.push(startWebhookDispatcher(deps));
  // Audit rows past their retention: once an hour across every process (a turn in the database).
  jobs.push(startAuditRetention(deps, onError('audit-retention')));
  // Usage samples: minutes older than a day rolled into hours, once an hour across every process.
  jobs.push(startUsageHistory(deps, onError('usage-history')));
  // Waiting bids on machines that are free: resumed by themselves (the market's backstop).
  jobs.push(startMarket(deps, onError('market')));
  // Month budgets: warnings at 80 % and 100 %, and the stop at 100 % (docs/quotas.md).
  jobs.push(startBudgetCheck(deps, onError('quota-budgets')));
  // Uptime samples every minute; machines' reliability recomputed every ten (docs/trust.md).
  jobs.push(startTrust(deps, onError('trust')));
  // Once per process that runs them: in a cluster, the primary only (cluster.ts).
  deps.log.info({ jobs: jobs.map((j) => j.name) }, 'background jobs started');
  return jobs;
}
