// Maintenance batches under SIGKILL of a real `serve` process (node bin/openrig.js, after
// `npm run build`), on SQLite and PostgreSQL. A batch's windows and every e-mail about them are
// one transaction, so the database holds all of a batch or nothing of it, and the outbox then
// delivers every committed e-mail. Two workloads:
// - many concurrent small batches, killed at random moments and right after the windows are
//   written but before their e-mails are (the service logs a line there): every acknowledged
//   batch is there, every window has exactly its e-mails, and the outbox delivers them all;
// - one 100-machine / 1,000-instance batch, killed again and again at chosen points: when the
//   transaction opens (a debug line), when the windows are written and the e-mails not yet (an
//   info line; on PostgreSQL the test holds a lock on email_outbox so the server is certainly
//   stuck right there), after fixed delays, and right after the reply. Each time the database
//   holds either the whole batch (100 windows, 1,000 client e-mails, 1 host e-mail) or nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import pg from 'pg';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createTestDb, describeEachDb, type TestDb } from '../helpers/db.js';
import { insertInstances, insertMachines, insertUsers } from '../helpers/maintenance.js';
import { createUser } from '../../src/server/modules/accounts/accounts.service.js';
import { systemClock } from '../../src/server/clock.js';
import { killGroup } from '../helpers/process.js';
import { ROUNDS, crashRound, postJson, prng, restartAndDrain, type Round } from './crash-harness.js';

const SEED = Number(process.env.OPENRIG_CRASH_SEED || Date.now() % 100000);

const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'bin/openrig.js');
const LINES = {
  'tx-open': 'maintenance transaction open',
  'in-tx': 'maintenance windows written; enqueueing e-mails',
} as const;

interface Serve {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
}

function serve(db: TestDb, outbox: string, opts: { killOn?: keyof typeof LINES } = {}): Promise<Serve> {
  const child = spawn(
    process.execPath,
    [BIN, 'serve', '--port', '0', '--data', db.dataDir, '--database-url', db.url],
    {
      env: {
        ...process.env,
        OPENRIG_SECRET_KEY: 'ef'.repeat(32),
        OPENRIG_LOG_LEVEL: 'debug',
        // The kill points are log lines: each goes out as soon as it is logged, not with a batch.
        OPENRIG_LOG_FLUSH_MS: '0',
        OPENRIG_MAIL_OUTBOX: outbox,
        SMTP_URL: '',
        OPENRIG_MAIL_RELAY_INTERVAL_MS: '100',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: killGroup stops the workers with it
    },
  );
  let out = '';
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return new Promise((resolve, reject) => {
    let url: string | null = null;
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      // Killed from inside the transaction, at the line's point.
      if (opts.killOn && out.includes(LINES[opts.killOn])) killGroup(child, 'SIGKILL');
      const m = /openrig listening on (\S+)/.exec(out);
      if (m && !url) {
        url = m[1]!;
        resolve({ child, url, exited });
      }
    });
    child.stderr.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.on('exit', (code) => {
      if (!url) reject(new Error(`serve exited early (${code}): ${out.slice(-2000)}`));
    });
  });
}

describeEachDb('crash: maintenance batches under SIGKILL', (dialect) => {
  describe('many concurrent small batches, killed at random', () => {
    let db: TestDb;
    let hostKey = '';
    let machineIds: number[] = [];
    beforeAll(async () => {
      db = await createTestDb(dialect);
      const deps = { store: db.store, clock: { now: () => Date.now() } };
      const host = await createUser(deps, { email: `host-${dialect}@crash.example`, emailVerified: true });
      hostKey = host.api_key;
      const renters = await Promise.all(
        [0, 1, 2, 3, 4].map((i) =>
          createUser(deps, {
            email: `renter${i}-${dialect}@crash.example`,
            emailVerified: true,
            balanceUsd: 100,
          }),
        ),
      );
      const now = Date.now();
      const ms = await db.store.db
        .insertInto('machines')
        .values(
          Array.from({ length: 40 }, (_, i) => ({
            host_id: host.id,
            hostname: `c${i}`,
            gpu_name: 'RTX 4090',
            num_gpus: 1,
            listed: 1,
            online_state: 'online',
            last_heartbeat_at: now,
            created_at: now,
          })) as never,
        )
        .returning('id')
        .execute();
      machineIds = ms.map((m) => Number(m.id));
      await db.store.db
        .insertInto('instances')
        .values(
          machineIds.map((id, i) => ({
            machine_id: id,
            user_id: renters[i % 5]!.id,
            image: 'ubuntu',
            disk: 10,
            dph_compute: 1,
            dph_disk: 0.01,
            actual_status: 'running',
            created_at: now,
            billed_until: now,
          })) as never,
        )
        .execute();
    });
    afterAll(async () => {
      await db.cleanup();
    });

    it(
      `keeps every acknowledged batch and never half of one (${ROUNDS} SIGKILLs, seed ${SEED})`,
      async () => {
        const rnd = prng(SEED + (dialect === 'postgres' ? 1 : 0));
        let counter = 0;
        const base = Math.floor(Date.now() / 1000) + 86400;
        const rounds: Round[] = [];
        for (let r = 0; r < ROUNDS; r++) {
          rounds.push(
            await crashRound({
              dbUrl: db.url,
              dataDir: db.dataDir,
              workers: 6,
              minMs: 30,
              maxMs: 600,
              rnd,
              killOn: /maintenance windows written; enqueueing e-mails/,
              step: async (url, _w, _i) => {
                const picked = machineIds.filter(() => rnd() < 0.25).slice(0, 10);
                if (picked.length === 0) picked.push(machineIds[0]!);
                // A distinct 1-hour slot per request: no overlap between requests, ever.
                const sdate = base + 7200 * counter++;
                const req = { machine_ids: picked, sdate, duration: 1, maintenance_category: 'gpu' };
                const reply = await postJson(
                  `${url}/api/v0/machines/maintenances/batch`,
                  'POST',
                  hostKey,
                  req,
                );
                expect(reply.status).toBeLessThan(500);
                return { req, ...reply };
              },
            }),
          );
        }
        const acked = rounds.flatMap((r) => r.acked);
        expect(acked.length).toBeGreaterThan(0);

        const d = db.store.db;
        const s = await restartAndDrain(db.url, db.dataDir, d);
        try {
          const windows = await d.selectFrom('maintenance_windows').selectAll().execute();
          const mails = await d
            .selectFrom('email_outbox')
            .select(['idempotency_key', 'to_addr', 'subject', 'sent_at', 'failed_at'])
            .execute();
          const keys = new Set(mails.map((m) => m.idempotency_key));
          // 1. No acknowledged write lost.
          const byId = new Map(windows.map((w) => [Number(w.id), w]));
          for (const a of acked) {
            const req = a.req as { sdate: number };
            for (const e of a.body.results as {
              success: boolean;
              machine_id: number;
              maintenance_id: number;
              notifications_sent: number;
            }[]) {
              if (!e.success) continue;
              const w = byId.get(e.maintenance_id);
              expect(w, `acknowledged window ${e.maintenance_id}`).toBeDefined();
              expect(Number(w!.machine_id)).toBe(e.machine_id);
              expect(Number(w!.start_time)).toBe(req.sdate * 1000);
              expect(w!.notifications_sent).toBe(e.notifications_sent);
            }
          }
          // 2. Nothing half-written: every window has all its client e-mails and its batch's host e-mail.
          for (const w of windows) {
            const clientMails = mails.filter((m) =>
              m.idempotency_key.startsWith(`maint:${w.id}:client:`),
            ).length;
            expect(clientMails, `client e-mails of window ${w.id}`).toBe(w.notifications_sent);
            expect(w.notifications_sent).toBe(1); // one renter per machine
            expect(keys.has(`maint-batch:${w.batch_id}:host`), `host e-mail of batch ${w.batch_id}`).toBe(
              true,
            );
          }
          // 3. The outbox delivered every e-mail (at least once), none given up.
          expect(mails.every((m) => m.sent_at !== null && m.failed_at === null)).toBe(true);
          const file = path.join(db.dataDir, 'mail-outbox.jsonl');
          const lines = existsSync(file)
            ? readFileSync(file, 'utf8')
                .trim()
                .split('\n')
                .filter(Boolean)
                .map((l) => JSON.parse(l) as { to: string; subject: string })
            : [];
          const delivered = new Map<string, number>();
          for (const l of lines)
            delivered.set(`${l.to}\n${l.subject}`, (delivered.get(`${l.to}\n${l.subject}`) ?? 0) + 1);
          const wanted = new Map<string, number>();
          for (const m of mails)
            wanted.set(`${m.to_addr}\n${m.subject}`, (wanted.get(`${m.to_addr}\n${m.subject}`) ?? 0) + 1);
          for (const [k, n] of wanted)
            expect(delivered.get(k) ?? 0, `deliveries of ${k.replace('\n', ' / ')}`).toBeGreaterThanOrEqual(
              n,
            );
        } finally {
          s.child.kill('SIGTERM');
          await s.exited;
        }
      },
      120_000 + ROUNDS * 8_000,
    );
  });

  describe('one 100-machine batch, killed at chosen points', () => {
    let db: TestDb;
    let hostKey: string;
    let machines: number[];

    beforeAll(async () => {
      if (!existsSync(path.join(ROOT, 'dist/cli/main.js'))) throw new Error('run `npm run build` first');
      db = await createTestDb(dialect);
      const host = await createUser(
        { store: db.store, clock: systemClock },
        { email: `crash-host-${dialect}@example.com` },
      );
      hostKey = host.api_key;
      machines = await insertMachines(db.store.db, host.id, 100);
      const clients = await insertUsers(db.store.db, 1000, `crash-${dialect}`);
      await insertInstances(
        db.store.db,
        // One running instance per machine and nine stopped ones (stopped instances release it).
        clients.map((userId, i) => ({
          machineId: machines[i % 100]!,
          userId,
          intended: i < 100 ? ('running' as const) : ('stopped' as const),
        })),
      );
    }, 120_000);
    afterAll(async () => db?.cleanup());

    async function state(startMs: number) {
      const windows = await db.store.db
        .selectFrom('maintenance_windows')
        .select(['id', 'batch_id'])
        .where('start_time', '=', startMs)
        .execute();
      const keys = (await db.store.db.selectFrom('email_outbox').select('idempotency_key').execute()).map(
        (r) => r.idempotency_key,
      );
      const ids = new Set(windows.map((w) => w.id));
      const client = keys.filter((k) => {
        const m = /^maint:(\d+):client:/.exec(k);
        return m && ids.has(Number(m[1]));
      }).length;
      const batchIds = new Set(windows.map((w) => w.batch_id));
      const host = keys.filter((k) => batchIds.has(k.split(':')[1]!) && k.startsWith('maint-batch:')).length;
      return { windows: windows.length, batches: batchIds.size, client, host, totalMails: keys.length };
    }

    it('leaves the whole batch with all its e-mails, or none of it, wherever the kill lands; then loses no e-mail', async () => {
      const crashOutbox = path.join(db.dataDir, 'crash-outbox.jsonl');
      const outcomes: { mode: string; result: 'all' | 'none' }[] = [];
      const plan: ({ mode: 'tx-open' | 'in-tx' | 'after-reply' } | { mode: 'delay'; ms: number })[] = [
        { mode: 'tx-open' },
        { mode: 'in-tx' },
        { mode: 'in-tx' },
        { mode: 'delay', ms: 300 },
        { mode: 'delay', ms: 1000 },
        { mode: 'after-reply' },
      ];
      const base = Math.floor(Date.now() / 1000) + 86_400;
      for (const [i, step] of plan.entries()) {
        const startS = base + i * 36_000; // 10 h apart: never overlapping
        const mailsBefore = (await state(0)).totalMails;
        const s = await serve(
          db,
          crashOutbox,
          step.mode === 'tx-open' || step.mode === 'in-tx' ? { killOn: step.mode } : {},
        );
        // PostgreSQL: hold email_outbox so the server blocks after writing the windows, before its
        // e-mails: the kill at the in-tx line then certainly lands inside the transaction.
        const blocker =
          dialect === 'postgres' && step.mode === 'in-tx'
            ? new pg.Client({ connectionString: db.url })
            : null;
        if (blocker) {
          await blocker.connect();
          await blocker.query('begin');
          await blocker.query('lock table email_outbox in exclusive mode');
        }
        const req = fetch(`${s.url}/api/v0/machines/maintenances/batch`, {
          method: 'POST',
          headers: { authorization: `Bearer ${hostKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            machine_ids: machines,
            sdate: startS,
            duration: 2,
            maintenance_category: 'power',
          }),
        }).then(
          (r) => r.status,
          () => 'killed' as const,
        );
        if (step.mode === 'delay') {
          await new Promise((r) => setTimeout(r, step.ms));
          killGroup(s.child, 'SIGKILL');
        }
        // Every mode ends with a kill: at the latest when the reply arrives.
        await Promise.race([s.exited, req.then(() => killGroup(s.child, 'SIGKILL'))]);
        await s.exited;
        const reply = await req;
        if (blocker) {
          await blocker.query('rollback');
          await blocker.end();
        }
        const st = await state(startS * 1000);
        if (st.windows === 0) {
          expect(st).toMatchObject({ windows: 0, client: 0, host: 0 });
          // Not a single e-mail row of the lost batch either.
          expect(st.totalMails).toBe(mailsBefore);
          expect(reply).not.toBe(200);
          outcomes.push({ mode: step.mode, result: 'none' });
        } else {
          expect(st).toMatchObject({ windows: 100, batches: 1, client: 1000, host: 1 });
          expect(st.totalMails).toBe(mailsBefore + 1001);
          outcomes.push({ mode: step.mode, result: 'all' });
        }
      }
      console.log(
        `[crash test ${dialect}] outcomes: ${outcomes.map((o) => `${o.mode}:${o.result}`).join(', ')}`,
      );
      // Kills inside the transaction leave nothing (on SQLite the in-tx point is a few ms before the
      // commit, so one may land after it: then the whole batch is there, also fine; the tx-open
      // kill, with the whole batch still to write, must find nothing).
      const inside = outcomes.filter(
        (o) => o.mode === 'tx-open' || (o.mode === 'in-tx' && dialect === 'postgres'),
      );
      expect(inside.length).toBeGreaterThan(0);
      expect(inside.every((o) => o.result === 'none')).toBe(true);
      expect(outcomes.filter((o) => o.mode === 'after-reply').every((o) => o.result === 'all')).toBe(true);

      // A killed relay's leases run out (5 minutes in real time): make them so, then let a fresh
      // `serve` deliver what was committed and flush on SIGTERM. Every row is sent, and every row
      // appears in an outbox file: nothing lost.
      await db.store.db
        .updateTable('email_outbox')
        .set({ locked_until: 0 })
        .where('sent_at', 'is', null)
        .where('locked_by', 'is not', null)
        .execute();
      const finalOutbox = path.join(db.dataDir, 'final-outbox.jsonl');
      const s = await serve(db, finalOutbox);
      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(0);
      const rows = await db.store.db
        .selectFrom('email_outbox')
        .select(['to_addr', 'subject', 'sent_at', 'failed_at'])
        .execute();
      expect(rows.filter((r) => r.sent_at === null)).toEqual([]);
      const lines = [crashOutbox, finalOutbox]
        .filter((f) => existsSync(f))
        .flatMap((f) => readFileSync(f, 'utf8').split('\n').filter(Boolean))
        .map((l) => JSON.parse(l) as { to: string; subject: string });
      const delivered = new Set(lines.map((l) => `${l.to}\n${l.subject}`));
      expect(rows.every((r) => delivered.has(`${r.to_addr}\n${r.subject}`))).toBe(true);
      // Repeats are bounded by what a killed relay held in flight (its lease), never more.
      expect(lines.length - delivered.size).toBeLessThanOrEqual(100 * plan.length);
    }, 240_000);
  });
});
