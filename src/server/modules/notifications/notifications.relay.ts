// The e-mail relay: delivers what the transactional outbox holds.
// - Claims due rows with a lease (notifications.repo `claimDue`): several `serve` processes on one
//   database never send one row twice in normal operation.
// - Sends each through the mailer (SMTP and/or the outbox file), then marks it sent. A crash
//   between the two repeats that one e-mail once its lease runs out, with the same Message-ID
//   (derived from the idempotency key), so a receiver can drop the repeat; nothing is lost.
// - A failure is retried with exponential backoff; after `config.mail.maxAttempts` tries the row
//   is given up: `failed_at` is set and one error line is logged (ids and the error, never the
//   recipient's code, the body or SMTP credentials).
// - Woken by `deps.kickOutbox()` after a commit that enqueued mail, else every relayIntervalMs.
// - stop() (SIGTERM) waits for the pass in progress, then flushes what is due (operator contract).
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Deps } from '../../deps.types.js';
import { every, type Job } from '../../jobs/every.js';
import { createMailer, redactSmtp, type Mailer } from './notifications.mailer.js';
import {
  claimDue,
  markFailedAttempt,
  markSent,
  pruneOld,
  releaseLease,
  type OutboxRow,
} from './notifications.repo.js';

export const RELAY_LEASE_MS = 5 * 60_000;
/** A row is only sent with at least this much lease left (nodemailer timeouts are below it). */
export const RELAY_MIN_LEASE_LEFT_MS = 2 * 60_000;
export const RELAY_BATCH = 100;
export const RELAY_CONCURRENCY = 4;
export const BACKOFF_BASE_MS = 5_000;
export const BACKOFF_CAP_MS = 3_600_000;
/** Sent and given-up e-mails are kept this long (history, idempotency of late retries), then deleted. */
export const RETENTION_MS = 30 * 86_400_000;
export const PRUNE_EVERY_MS = 3_600_000;
/** stop() flushes for at most this long, so a dead SMTP server can't hold a shutdown forever. */
export const FLUSH_BUDGET_MS = 20_000;

/** Delay before the next try after `attempts` failed tries: 5 s, 10 s, 20 s … capped at 1 h. */
export function backoffMs(attempts: number): number {
  const n = Math.max(1, attempts);
  return Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.min(n - 1, 30));
}

export interface RelayContext {
  db: Deps['db'];
  clock: Deps['clock'];
  log: Deps['log'];
  config: Deps['config'];
  mailer: Mailer;
  worker: string;
}

export interface PassResult {
  sent: number;
  retried: number;
  failed: number;
}

/** Sends one leased row; true when it was handed over (marked sent by the caller, per batch). */
async function deliverOne(
  ctx: RelayContext,
  row: OutboxRow,
  leaseEnd: number,
  out: PassResult,
): Promise<boolean> {
  const { db, clock, log, config, worker } = ctx;
  if (leaseEnd - clock.now() < RELAY_MIN_LEASE_LEFT_MS) {
    await releaseLease(db, { id: row.id, worker });
    return false;
  }
  try {
    await ctx.mailer.send({
      key: row.idempotency_key,
      to: row.to_addr,
      subject: row.subject,
      text: row.text_body,
      html: row.html_body,
      date: new Date(clock.now()),
    });
  } catch (err) {
    const now = clock.now();
    const error = redactSmtp((err as Error)?.message ?? String(err), config.mail.smtpUrl);
    const giveUp = row.attempts >= config.mail.maxAttempts;
    await markFailedAttempt(db, {
      id: row.id,
      worker,
      now,
      error,
      giveUp,
      availableAt: now + backoffMs(row.attempts),
    });
    if (giveUp) {
      out.failed++;
      log.error(
        { outbox_id: row.id, category: row.category, attempts: row.attempts, error },
        'e-mail delivery given up',
      );
    } else {
      out.retried++;
      log.warn(
        { outbox_id: row.id, category: row.category, attempts: row.attempts, error },
        'e-mail delivery failed; will retry',
      );
    }
    return false;
  }
  return true;
}

/** One relay pass: claims and delivers due rows batch after batch until none is due (or `until`). */
export async function deliverDue(ctx: RelayContext, opts: { until?: number } = {}): Promise<PassResult> {
  const out: PassResult = { sent: 0, retried: 0, failed: 0 };
  for (;;) {
    const now = ctx.clock.now();
    if (opts.until !== undefined && now >= opts.until) return out;
    const rows = await claimDue(ctx.db, {
      worker: ctx.worker,
      now,
      leaseMs: RELAY_LEASE_MS,
      limit: RELAY_BATCH,
    });
    if (rows.length === 0) return out;
    const leaseEnd = now + RELAY_LEASE_MS;
    let next = 0;
    const handed: number[] = [];
    const lane = async () => {
      while (next < rows.length) {
        const row = rows[next++]!;
        if (await deliverOne(ctx, row, leaseEnd, out)) handed.push(row.id);
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(RELAY_CONCURRENCY, rows.length) }, lane));
    } finally {
      // One commit for the batch. A crash before it repeats these e-mails (same Message-IDs) once
      // their lease runs out: at most RELAY_BATCH repeats per crashed relay, none lost.
      out.sent += await markSent(ctx.db, { ids: handed, worker: ctx.worker, now: ctx.clock.now() });
    }
  }
}

export interface OutboxRelay extends Job {
  kick(): void;
  /** Delivers everything due now (tests, shutdown). */
  flush(): Promise<PassResult>;
}

export function newWorkerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

export function startOutboxRelay(
  deps: Pick<Deps, 'db' | 'clock' | 'log' | 'config'>,
  mailer: Mailer = createMailer(deps.config.mail),
): OutboxRelay {
  const ctx: RelayContext = {
    db: deps.db,
    clock: deps.clock,
    log: deps.log,
    config: deps.config,
    mailer,
    worker: newWorkerId(),
  };
  let lastPrune = 0;
  const pass = async () => {
    await deliverDue(ctx);
    const now = deps.clock.now();
    if (now - lastPrune >= PRUNE_EVERY_MS) {
      lastPrune = now;
      await pruneOld(deps.db, now - RETENTION_MS);
    }
  };
  const loop = every('outbox-relay', deps.config.mail.relayIntervalMs, pass, (err) =>
    deps.log.error(
      {
        err: redactSmtp((err as Error)?.message ?? String(err), deps.config.mail.smtpUrl),
        job: 'outbox-relay',
      },
      'background job failed',
    ),
  );
  let stopping: Promise<void> | null = null;
  return {
    name: 'outbox-relay',
    kick: () => loop.kick(),
    flush: () => deliverDue(ctx),
    stop() {
      stopping ??= (async () => {
        await loop.stop();
        try {
          const r = await deliverDue(ctx, { until: deps.clock.now() + FLUSH_BUDGET_MS });
          if (r.sent + r.failed + r.retried > 0) deps.log.info({ ...r }, 'outbox flushed');
        } catch (err) {
          deps.log.error(
            { err: redactSmtp((err as Error)?.message ?? String(err), deps.config.mail.smtpUrl) },
            'outbox flush failed',
          );
        } finally {
          await mailer.close();
        }
      })();
      return stopping;
    },
  };
}
