import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { Writable } from 'node:stream';
import { createTestDb, describeEachDb, type TestDb } from '../../../../test/helpers/db.js';
import { ManualClock } from '../../clock.js';
import { loadConfig, type Config } from '../../config.js';
import { enqueueEmails, type EmailMessage } from './notifications.outbox.js';
import { createMailer, type Mailer, type OutgoingEmail } from './notifications.mailer.js';
import {
  backoffMs,
  deliverDue,
  startOutboxRelay,
  RELAY_LEASE_MS,
  type RelayContext,
} from './notifications.relay.js';
import { claimDue, pruneOld } from './notifications.repo.js';

class FakeMailer implements Mailer {
  sent: OutgoingEmail[] = [];
  failures = 0;
  failWith = 'connect ECONNREFUSED';
  async send(m: OutgoingEmail): Promise<void> {
    if (this.failures > 0) {
      this.failures--;
      throw new Error(this.failWith);
    }
    // Yield, so concurrent relays really interleave.
    await new Promise((r) => setImmediate(r));
    this.sent.push(m);
  }
  async close(): Promise<void> {}
}

function logCapture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { log: pino({ level: 'info' }, stream), lines };
}

function msgs(n: number, prefix = 'k'): EmailMessage[] {
  return Array.from({ length: n }, (_, i) => ({
    key: `${prefix}:${i}`,
    to: `u${i}@example.com`,
    subject: `s${i}`,
    text: `t${i}`,
    html: `<p>t${i}</p>`,
    category: 'test',
  }));
}

describeEachDb('outbox relay', (dialect) => {
  let db: TestDb;
  let config: Config;
  const clock = new ManualClock();
  beforeAll(async () => {
    db = await createTestDb(dialect);
    config = loadConfig(
      {
        OPENRIG_SECRET_KEY: 'ab'.repeat(32),
        OPENRIG_MAIL_MAX_ATTEMPTS: '3',
        SMTP_URL: 'smtp://mailer:hunter2secret@127.0.0.1:1',
      },
      { dataDir: db.dataDir, databaseUrl: db.url },
    );
  });
  afterAll(async () => db.cleanup());
  beforeEach(async () => {
    await db.store.db.deleteFrom('email_outbox').execute();
  });
  const ctx = (mailer: Mailer, worker = 'w1', log = pino({ level: 'silent' })): RelayContext => ({
    db: db.store.db,
    clock,
    log,
    config,
    mailer,
    worker,
  });

  it('delivers each due e-mail once and marks it sent', async () => {
    await enqueueEmails(db.store.db, clock.now(), msgs(7));
    const m = new FakeMailer();
    expect(await deliverDue(ctx(m))).toEqual({ sent: 7, retried: 0, failed: 0 });
    expect(m.sent.map((s) => s.key).sort()).toEqual(
      msgs(7)
        .map((x) => x.key)
        .sort(),
    );
    expect(m.sent[0]!.html).toBe('<p>t0</p>');
    expect(await deliverDue(ctx(m))).toEqual({ sent: 0, retried: 0, failed: 0 });
    const rows = await db.store.db.selectFrom('email_outbox').selectAll().execute();
    expect(rows.every((r) => r.sent_at === clock.now() && r.locked_by === null && r.attempts === 1)).toBe(
      true,
    );
  });

  it('never sends one e-mail twice when several relays run at once', async () => {
    await enqueueEmails(db.store.db, clock.now(), msgs(230));
    const m = new FakeMailer();
    const results = await Promise.all(['a', 'b', 'c', 'd'].map((w) => deliverDue(ctx(m, w))));
    expect(results.reduce((s, r) => s + r.sent, 0)).toBe(230);
    const keys = m.sent.map((s) => s.key);
    expect(new Set(keys).size).toBe(230);
    expect(keys.length).toBe(230);
  });

  it('retries a failed delivery with exponential backoff, then sends it', async () => {
    await enqueueEmails(db.store.db, clock.now(), msgs(1));
    const m = new FakeMailer();
    m.failures = 2;
    expect(await deliverDue(ctx(m))).toEqual({ sent: 0, retried: 1, failed: 0 });
    let row = await db.store.db.selectFrom('email_outbox').selectAll().executeTakeFirstOrThrow();
    expect(row.available_at).toBe(clock.now() + backoffMs(1));
    expect(row.attempts).toBe(1);
    expect(row.last_error).toContain('ECONNREFUSED');
    // Not due before the backoff has passed.
    clock.advance(backoffMs(1) - 1);
    expect(await deliverDue(ctx(m))).toEqual({ sent: 0, retried: 0, failed: 0 });
    clock.advance(1);
    expect(await deliverDue(ctx(m))).toEqual({ sent: 0, retried: 1, failed: 0 });
    row = await db.store.db.selectFrom('email_outbox').selectAll().executeTakeFirstOrThrow();
    expect(row.available_at).toBe(clock.now() + backoffMs(2));
    clock.advance(backoffMs(2));
    expect(await deliverDue(ctx(m))).toEqual({ sent: 1, retried: 0, failed: 0 });
    expect(m.sent).toHaveLength(1);
  });

  it('gives up visibly after maxAttempts, logging no secret', async () => {
    await enqueueEmails(db.store.db, clock.now(), [
      {
        key: 'code:1',
        to: 'x@example.com',
        subject: 'Your code 123456',
        text: 'Code: 123456',
        category: 'tfa.code',
      },
    ]);
    const m = new FakeMailer();
    m.failures = 99;
    m.failWith = 'Invalid login for smtp://mailer:hunter2secret@127.0.0.1:1 (hunter2secret)';
    const { log, lines } = logCapture();
    for (let i = 0; i < 3; i++) {
      await deliverDue(ctx(m, 'w1', log));
      clock.advance(backoffMs(3));
    }
    const row = await db.store.db.selectFrom('email_outbox').selectAll().executeTakeFirstOrThrow();
    expect(row.failed_at).not.toBeNull();
    expect(row.sent_at).toBeNull();
    expect(row.attempts).toBe(3);
    expect(row.last_error).not.toContain('hunter2secret');
    const given = lines.filter((l) => l.includes('given up'));
    expect(given).toHaveLength(1);
    const all = lines.join('\n');
    expect(all).not.toContain('hunter2secret');
    expect(all).not.toContain('123456');
    expect(JSON.parse(given[0]!)).toMatchObject({
      level: 50,
      outbox_id: row.id,
      category: 'tfa.code',
      attempts: 3,
    });
    // Given up is final.
    clock.advance(1e9);
    expect(await deliverDue(ctx(m))).toEqual({ sent: 0, retried: 0, failed: 0 });
  });

  it('takes over the lease of a relay that died mid-send, once the lease has run out', async () => {
    await enqueueEmails(db.store.db, clock.now(), msgs(3));
    const dead = await claimDue(db.store.db, {
      worker: 'dead',
      now: clock.now(),
      leaseMs: RELAY_LEASE_MS,
      limit: 10,
    });
    expect(dead).toHaveLength(3);
    const m = new FakeMailer();
    expect(await deliverDue(ctx(m, 'alive'))).toEqual({ sent: 0, retried: 0, failed: 0 });
    clock.advance(RELAY_LEASE_MS + 1);
    expect(await deliverDue(ctx(m, 'alive'))).toEqual({ sent: 3, retried: 0, failed: 0 });
    const rows = await db.store.db.selectFrom('email_outbox').select(['attempts']).execute();
    expect(rows.every((r) => r.attempts === 2)).toBe(true);
  });

  it('prunes sent and given-up e-mails older than the retention, never pending ones', async () => {
    await enqueueEmails(db.store.db, clock.now(), msgs(3, 'prune'));
    const m = new FakeMailer();
    await deliverDue(ctx(m));
    await enqueueEmails(db.store.db, clock.now(), msgs(1, 'pending'));
    clock.advance(1000);
    expect(await pruneOld(db.store.db, clock.now() - 2000)).toBe(0);
    expect(await pruneOld(db.store.db, clock.now())).toBe(3);
    expect(
      (await db.store.db.selectFrom('email_outbox').select('idempotency_key').execute()).map(
        (r) => r.idempotency_key,
      ),
    ).toEqual(['pending:0']);
  });

  it('writes the outbox file as {at, to, subject, text} lines, and stop() flushes what is due', async () => {
    const file = path.join(db.dataDir, `mail-${dialect}.jsonl`);
    const cfg = loadConfig(
      {
        OPENRIG_SECRET_KEY: 'ab'.repeat(32),
        OPENRIG_MAIL_OUTBOX: file,
        OPENRIG_MAIL_RELAY_INTERVAL_MS: '3600000',
      },
      { dataDir: db.dataDir, databaseUrl: db.url },
    );
    const relay = startOutboxRelay(
      { db: db.store.db, clock, log: pino({ level: 'silent' }), config: cfg },
      createMailer(cfg.mail),
    );
    await enqueueEmails(db.store.db, clock.now(), msgs(2, 'file'));
    await relay.stop();
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(2);
    for (const l of lines) expect(Object.keys(l)).toEqual(['at', 'to', 'subject', 'text']);
    expect(lines.map((l) => l.subject).sort()).toEqual(['s0', 's1']);
    expect(lines[0].at).toBe(new Date(clock.now()).toISOString());
  });
});
