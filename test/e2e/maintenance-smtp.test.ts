// End to end over real sockets: two `serve` instances (HTTP, relay) on one database, a real SMTP
// server (the smtp-server package) receiving what the relays send, parsed with postal-mime.
// Checks: text and HTML parts, Date, Message-ID derived from the idempotency key, From from config,
// the outbox file written too, and every e-mail received exactly once although two relays run.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import PostalMime from 'postal-mime';
import { createTestDb, describeEachDb, type TestDb } from '../helpers/db.js';
import { insertInstances, insertMachines, insertUsers } from '../helpers/maintenance.js';
import { loadConfig } from '../../src/server/config.js';
import { startServer, type Server } from '../../src/server/main.js';
import { createUser } from '../../src/server/modules/accounts/accounts.service.js';
import { messageIdFor } from '../../src/server/modules/notifications/notifications.mailer.js';
import { enqueueEmail } from '../../src/server/modules/notifications/notifications.outbox.js';

interface Received {
  rcpt: string[];
  mail: Awaited<ReturnType<typeof PostalMime.parse>>;
  raw: string;
}

async function waitFor<T>(
  what: string,
  fn: () => T | Promise<T>,
  ok: (v: T) => boolean,
  ms = 20_000,
): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describeEachDb('maintenance e-mail over real SMTP', (dialect) => {
  let db: TestDb;
  let smtp: SMTPServer;
  const received: Received[] = [];
  const servers: Server[] = [];
  const FROM = 'openrig maintenance <noreply@rig.example>';
  let outboxFile: string;

  beforeAll(async () => {
    db = await createTestDb(dialect);
    smtp = new SMTPServer({
      disabledCommands: ['STARTTLS'],
      allowInsecureAuth: true,
      logger: false,
      onAuth(auth, _session, cb) {
        if (auth.username === 'relay' && auth.password === 's3cret') cb(null, { user: 'relay' });
        else cb(new Error('Invalid username or password'));
      },
      onData(stream, session, cb) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          PostalMime.parse(raw).then(
            (mail) => {
              received.push({ rcpt: session.envelope.rcptTo.map((r) => r.address), mail, raw });
              cb();
            },
            (err) => cb(err),
          );
        });
      },
    });
    await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', () => r()));
    const port = (smtp.server.address() as AddressInfo).port;
    outboxFile = path.join(db.dataDir, 'mail.jsonl');
    for (let i = 0; i < 2; i++) {
      const config = loadConfig(
        {
          OPENRIG_SECRET_KEY: 'cd'.repeat(32),
          SMTP_URL: `smtp://relay:s3cret@127.0.0.1:${port}`,
          OPENRIG_MAIL_OUTBOX: outboxFile,
          OPENRIG_MAIL_FROM: FROM,
          OPENRIG_MAIL_RELAY_INTERVAL_MS: '50',
          OPENRIG_LOG_LEVEL: 'silent',
        },
        { dataDir: db.dataDir, databaseUrl: db.url, port: 0 },
      );
      servers.push(await startServer(config, { logger: false }));
    }
  });
  afterAll(async () => {
    for (const s of servers) await s.close();
    await new Promise<void>((r) => smtp.close(() => r()));
    await db.cleanup();
  });

  it('delivers the client notifications and the host confirmation as real e-mails, each once', async () => {
    const [a] = servers;
    const host = await createUser(a!.deps, { email: `host-${dialect}@example.com`, fullName: 'Hana Host' });
    const machines = await insertMachines(db.store.db, host.id, 4);
    const clients = await insertUsers(db.store.db, 3, `smtp-${dialect}`);
    await insertInstances(db.store.db, [
      { machineId: machines[0]!, userId: clients[0]! },
      { machineId: machines[1]!, userId: clients[1]!, intended: 'stopped' },
      { machineId: machines[2]!, userId: clients[2]! },
    ]);
    const sdate = Math.floor(Date.now() / 1000) + 86_400;
    const before = Date.now();
    const res = await fetch(`${a!.url}/api/v0/machines/maintenances/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${host.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        machine_ids: [...machines, 77777777],
        sdate,
        duration: 2,
        maintenance_category: 'internet',
      }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { results: { notifications_sent?: number }[] };
    expect(body.results.map((r) => r.notifications_sent ?? null)).toEqual([1, 1, 1, 0, null]);

    // Both relays poll; all four e-mails arrive (3 clients + 1 host).
    await waitFor(
      '4 e-mails',
      () => received.length,
      (n) => n >= 4,
    );
    // Let both relays run a few more passes: nothing more may arrive.
    await new Promise((r) => setTimeout(r, 400));
    expect(received).toHaveLength(4);

    const rows = await db.store.db.selectFrom('email_outbox').selectAll().orderBy('id').execute();
    expect(rows.every((r) => r.sent_at !== null && r.attempts === 1)).toBe(true);
    const emails = await db.store.db
      .selectFrom('users')
      .select(['id', 'email'])
      .where('id', 'in', clients)
      .execute();
    expect(received.map((r) => r.rcpt[0]).sort()).toEqual([...emails.map((e) => e.email), host.email].sort());

    const startText = new Date(sdate * 1000).toISOString().replace('T', ' ').replace('.000Z', ' UTC');
    for (const r of received) {
      const row = rows.find((x) => x.to_addr === r.rcpt[0])!;
      expect(r.mail.messageId).toBe(messageIdFor(row.idempotency_key, FROM));
      expect(r.mail.from).toMatchObject({ address: 'noreply@rig.example', name: 'openrig maintenance' });
      expect(r.mail.to?.[0]?.address).toBe(row.to_addr);
      expect(r.mail.subject).toBe(row.subject);
      expect(r.mail.text?.trim()).toBe(row.text_body.trim());
      expect(r.mail.html).toContain('<html>');
      expect(r.raw).toMatch(/Content-Type: multipart\/alternative/i);
      const date = Date.parse(r.mail.date!);
      expect(date).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
      expect(date).toBeLessThanOrEqual(Date.now());
      expect(r.mail.text).toContain(startText);
      expect(r.mail.text).toContain('internet');
    }
    const hostMail = received.find((r) => r.rcpt[0] === host.email)!;
    expect(hostMail.mail.subject).toContain('4 machines, 1 failed');
    expect(hostMail.mail.text).toContain('machine 77777777');
    const clientMail = received.find((r) => r.rcpt[0] === emails.find((e) => e.id === clients[1])!.email)!;
    expect(clientMail.mail.subject).toContain(`machine ${machines[1]}`);

    // The outbox file got the same four, once each, as {at, to, subject, text} lines.
    const lines = readFileSync(outboxFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(4);
    expect(lines.map((l) => l.to).sort()).toEqual(received.map((r) => r.rcpt[0]).sort());
    for (const l of lines) expect(Object.keys(l)).toEqual(['at', 'to', 'subject', 'text']);
  });

  it('sends a text-only e-mail (as other modules queue them) with an HTML part too', async () => {
    const n = received.length;
    await enqueueEmail(db.store.db, Date.now(), {
      key: `text-only-${dialect}`,
      to: 'code@example.com',
      subject: 'Your code',
      text: 'Your code is 123456 <ok>',
      category: 'tfa.code',
    });
    servers[1]!.deps.kickOutbox();
    await waitFor(
      'the text-only e-mail',
      () => received.length,
      (x) => x > n,
    );
    const r = received[received.length - 1]!;
    expect(r.mail.text?.trim()).toBe('Your code is 123456 <ok>');
    expect(r.mail.html).toContain('Your code is 123456 &lt;ok&gt;');
  });
});
