// Background loops of a `serve` process. Each is safe with several `serve` processes on one
// PostgreSQL: work is claimed by conditional updates, never by in-process state.
import type { Deps } from '../deps.types.js';
import { startOutboxRelay } from './outbox-relay.js';
import { startHeartbeatSweep } from './heartbeat-sweep.js';
import { startBillingMeter } from './billing-meter.js';
import { startWebhookDispatcher } from './webhook-dispatcher.js';
import { startAuditRetention } from './audit-retention.js';

export interface Job {
  name: string;
  stop(): Promise<void>;
}

/** Runs `fn` every `ms` (never overlapping itself) until stopped. */
export function every(
  name: string,
  ms: number,
  fn: () => Promise<unknown>,
  onError: (err: unknown) => void,
): Job & { kick(): void } {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<unknown> | null = null;
  let stopped = false;
  let again = false;
  const run = () => {
    timer = null;
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = fn()
      .catch(onError)
      .finally(() => {
        running = null;
        if (stopped) return;
        if (again) {
          again = false;
          setImmediate(run);
        } else schedule();
      });
  };
  const schedule = () => {
    if (!stopped && !timer) timer = setTimeout(run, ms);
  };
  schedule();
  return {
    name,
    kick() {
      if (stopped) return;
      if (timer) {
        clearTimeout(timer);
        timer = null;
      }
      run();
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}

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
  // Webhook deliveries: one lane per endpoint, so a dead endpoint delays no one else.
  jobs.push(startWebhookDispatcher(deps));
  // Audit rows past their retention: once an hour across every process (a turn in the database).
  jobs.push(startAuditRetention(deps, onError('audit-retention')));
  // Once per process that runs them: in a cluster, the primary only (cluster.ts).
  deps.log.info({ jobs: jobs.map((j) => j.name) }, 'background jobs started');
  return jobs;
}
