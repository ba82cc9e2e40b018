// Crash test (issue 9, point 3): SIGKILL `serve` during concurrent maintenance batches, at random
// moments and right after the windows are written but before their e-mails are (the service
// logs a line there), on SQLite and PostgreSQL. After a restart: every acknowledged batch is
// there, every window has exactly its e-mails (nothing half-written), and the outbox delivers
// every e-mail.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { createTestDb, describeEachDb, type TestDb } from '../helpers/db.js';
import { createUser } from '../../src/server/modules/accounts/accounts.service.js';
import { ROUNDS, crashRound, postJson, prng, restartAndDrain, type Round } from './crash-harness.js';

const SEED = Number(process.env.OPENRIG_CRASH_SEED || Date.now() % 100000);

describeEachDb('crash: maintenance batches under SIGKILL', (dialect) => {
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
              const reply = await postJson(`${url}/api/v0/machines/maintenances/batch`, 'POST', hostKey, req);
              expect(reply.status).toBeLessThan(500);
              return { req, ...reply };
            },
          }),
        );
      }
      const acked = rounds.flatMap((r) => r.acked);
      expect(acked.length).toBeGreaterThan(0);

      const d = db.store.db;
      const pending = async () =>
        Number(
          (
            await d
              .selectFrom('email_outbox')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('sent_at', 'is', null)
              .where('failed_at', 'is', null)
              .executeTakeFirstOrThrow()
          ).n,
        );
      const expire = () =>
        d
          .updateTable('email_outbox')
          .set({ locked_until: 1 })
          .where('sent_at', 'is', null)
          .where('locked_until', 'is not', null)
          .execute();
      const s = await restartAndDrain(db.url, db.dataDir, pending, expire);
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
          expect(keys.has(`maint-batch:${w.batch_id}:host`), `host e-mail of batch ${w.batch_id}`).toBe(true);
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
          expect(delivered.get(k) ?? 0, `deliveries of ${k.replace('\n', ' / ')}`).toBeGreaterThanOrEqual(n);
      } finally {
        s.child.kill('SIGTERM');
        await s.exited;
      }
    },
    120_000 + ROUNDS * 8_000,
  );
});
