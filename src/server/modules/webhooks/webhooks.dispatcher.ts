// The webhook dispatcher: sends what the delivery outbox (webhook_deliveries) holds.
// - Each endpoint is a lane, leased to one process at a time by a conditional UPDATE of its
//   webhook row (several `serve` processes never send to one endpoint at once) and served by its
//   own async loop: a slow or dead endpoint holds only its own lane, never another endpoint's
//   deliveries nor the e-mail relay. A process runs at most MAX_LANES lanes at once.
// - Within a lane deliveries go out one at a time in the order recorded; a delivery waits while
//   an older one of the same subject (the same instance, say) is still pending, so the events of
//   one subject arrive in order.
// - A 2xx within 10 s is success. Otherwise the delivery is tried again after RETRY_SCHEDULE_MS
//   (about 28 hours in all), always with the same webhook-id, then given up. A crash after a send
//   and before its result is written sends it again (same webhook-id) once the lease runs out:
//   at least once, never lost.
// - An endpoint whose attempts have failed for five days without a success is disabled and its
//   owner e-mailed (a webhook.disabled event too).
import type { Deps } from '../../deps.types.js';
import { every, type Job } from '../../jobs/every.js';
import { newWorkerId } from '../notifications/notifications.relay.js';
import { tx } from '../../db/connection.js';
import * as repo from './webhooks.repo.js';
import { signingSecrets } from './webhooks.service.js';
import { signedHeaders } from './webhooks.signing.js';
import { allowList, type Resolved } from './webhooks.address.js';
import { laneAgents, sendOnce, type SendResult } from './webhooks.send.js';
import { recordEvent } from './webhooks.events.js';
import { enqueueEmail } from '../notifications/notifications.outbox.js';
import { disabledMail } from './webhooks.mail.js';

export const LANE_LEASE_MS = 60_000;
/** A lane writes its results at least this often (well inside its lease). */
const LANE_WRITE_EVERY_MS = 15_000;
export const MAX_LANES = 64;
const WINDOW = 200;
const BATCH = 50;
/** Waits after the 1st, 2nd, … failed attempt: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h; then given up. */
export const RETRY_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
export const DISABLE_AFTER_MS = 5 * 86_400_000;
const RETENTION_MS = 30 * 86_400_000;
const PRUNE_EVERY_MS = 3_600_000;

/** When to try again after `attempts` failed attempts, or null to give up. */
export function nextAttemptAt(attempts: number, now: number): number | null {
  const wait = RETRY_SCHEDULE_MS[attempts - 1];
  return wait === undefined ? null : now + wait;
}

/** The due deliveries a lane may send now: per subject, the pending ones in order up to the first not due. */
export function pickDue(rows: readonly repo.DeliveryRow[], now: number, max: number): repo.DeliveryRow[] {
  const blocked = new Set<string>();
  const out: repo.DeliveryRow[] = [];
  for (const r of rows) {
    if (blocked.has(r.subject)) continue;
    if (r.next_at > now) {
      blocked.add(r.subject);
      continue;
    }
    out.push(r);
    if (out.length >= max) break;
  }
  return out;
}

type DispatchDeps = Pick<Deps, 'db' | 'store' | 'clock' | 'log' | 'config' | 'kickOutbox'>;

export interface WebhookDispatcher extends Job {
  kick(): void;
  /** Sends everything due now and waits until it is written (tests, the bench). */
  drain(): Promise<void>;
}

export function startWebhookDispatcher(
  deps: DispatchDeps,
  opts: { resolve?: (host: string) => Promise<Resolved[]>; timeoutMs?: number; poll?: boolean } = {},
): WebhookDispatcher {
  const worker = newWorkerId();
  const allowed = allowList(deps.config.webhooks.allowHosts);
  const lanes = new Map<number, Promise<number>>();
  let stopping = false;
  let lastPrune = 0;

  class LostLease extends Error {}

  async function writeResults(id: number, results: repo.AttemptResult[], failed: boolean): Promise<void> {
    if (results.length === 0) return;
    const now = deps.clock.now();
    let disabled: { userId: number; url: string } | null = null;
    await tx(deps.store, async (trx) => {
      if (!(await repo.renewLane(trx, { id, worker, now, leaseMs: LANE_LEASE_MS }))) throw new LostLease();
      await repo.writeAttempts(trx, id, results);
      // "Failing" means no success since: any success clears it, a failure starts it if clear.
      if (results.some((r) => r.success)) await repo.setFailing(trx, id, null);
      if (!failed) return;
      await repo.setFailing(trx, id, now);
      const reason = 'Every delivery attempt failed for 5 days';
      if (await repo.disableFailing(trx, { id, now, before: now - DISABLE_AFTER_MS, reason })) {
        const hook = await repo.webhookById(trx, id);
        const user = hook ? await repo.userEmail(trx, hook.user_id) : undefined;
        if (hook && user) {
          disabled = { userId: hook.user_id, url: hook.url };
          await enqueueEmail(trx, now, {
            key: `webhook-disabled:${id}:${now}`,
            to: user.email,
            ...disabledMail(id, hook.url),
            category: 'webhook.disabled',
          });
          await recordEvent(trx, now, {
            userId: hook.user_id,
            type: 'webhook.disabled',
            subject: `webhook:${id}`,
            data: { webhook_id: id, url: hook.url, reason },
          });
        }
      }
    });
    if (disabled) {
      deps.log.warn({ webhook_id: id }, 'webhook disabled after 5 days of failures');
      deps.kickOutbox();
    }
  }

  /** Serves one endpoint until nothing of it is due; returns how many attempts it made. */
  async function runLane(id: number): Promise<number> {
    const agents = laneAgents();
    let leased = true;
    let attempts = 0;
    try {
      while (!stopping) {
        const now = deps.clock.now();
        const hook = await repo.webhookById(deps.db, id);
        if (!hook || hook.enabled !== 1 || hook.locked_by !== worker) break;
        const window = await repo.pendingWindow(deps.db, id, WINDOW);
        let batch = pickDue(window, now, BATCH);
        if (batch.length === 0 && window.length === WINDOW)
          batch = await repo.dueHeads(deps.db, id, now, BATCH);
        if (batch.length === 0) break;
        const secrets = signingSecrets(deps.config.secretKey, hook, now);
        const results: repo.AttemptResult[] = [];
        let failed = false;
        let since = performance.now();
        for (const d of batch) {
          if (stopping) break;
          const at = deps.clock.now();
          const r: SendResult =
            secrets.length === 0
              ? { success: false, status: null, latencyMs: 0, error: 'the signing secret cannot be read' }
              : await sendOnce(
                  hook.url,
                  signedHeaders(secrets, d.msg_id, Math.floor(at / 1000), d.body),
                  d.body,
                  {
                    allowed,
                    agents,
                    resolve: opts.resolve,
                    timeoutMs: opts.timeoutMs,
                  },
                );
          attempts++;
          results.push({
            deliveryId: Number(d.id),
            at,
            status: r.status,
            latencyMs: r.latencyMs,
            success: r.success,
            error: r.error,
            nextAt: r.success ? null : nextAttemptAt(d.attempts + 1, at),
          });
          if (!r.success) {
            // The endpoint is failing: this lane stops; each delivery's next try decides when
            // the endpoint is tried again.
            failed = true;
            break;
          }
          if (performance.now() - since > LANE_WRITE_EVERY_MS) {
            await writeResults(id, results.splice(0), false);
            since = performance.now();
          }
        }
        await writeResults(id, results, failed);
        if (failed) break;
      }
    } catch (err) {
      if (err instanceof LostLease) leased = false;
      else deps.log.error({ err, webhook_id: id }, 'webhook lane failed');
    } finally {
      agents.destroy();
      if (leased) await repo.releaseLane(deps.db, { id, worker }).catch(() => {});
    }
    return attempts;
  }

  /** Claims due endpoints not yet served and starts a lane for each; returns how many started. */
  async function tick(): Promise<number> {
    const now = deps.clock.now();
    if (now - lastPrune >= PRUNE_EVERY_MS) {
      lastPrune = now;
      await repo.pruneOld(deps.db, now - RETENTION_MS);
    }
    if (stopping || lanes.size >= MAX_LANES) return 0;
    const ids = await repo.dueWebhookIds(deps.db, now, MAX_LANES * 2);
    let started = 0;
    for (const id of ids) {
      if (lanes.size >= MAX_LANES) break;
      if (lanes.has(id)) continue;
      if (!(await repo.claimLane(deps.db, { id, worker, now, leaseMs: LANE_LEASE_MS }))) continue;
      const p = runLane(id).finally(() => lanes.delete(id));
      lanes.set(id, p);
      started++;
    }
    return started;
  }

  const onError = (err: unknown) =>
    deps.log.error({ err, job: 'webhook-dispatcher' }, 'background job failed');
  const loop =
    opts.poll === false ? null : every('webhook-dispatcher', deps.config.webhooks.pollMs, tick, onError);

  return {
    name: 'webhook-dispatcher',
    kick: () => loop?.kick(),
    async drain() {
      for (;;) {
        const started = await tick();
        if (started === 0 && lanes.size === 0) return;
        const sent = await Promise.all([...lanes.values()]);
        // Lanes that found nothing to send: done (never spin on the database).
        if (sent.every((n) => n === 0)) return;
      }
    },
    async stop() {
      stopping = true;
      await loop?.stop();
      // Lanes stop after the attempt in flight (at most the send timeout) and give their leases back.
      await Promise.all([...lanes.values()]);
    },
  };
}
