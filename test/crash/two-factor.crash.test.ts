// Crash test: SIGKILL `serve` at random moments while users change their 2FA
// (regenerate backup codes, relabel their method), on SQLite and PostgreSQL. After a restart:
// every user has exactly one full set of 10 unused backup codes; a user whose last change was
// acknowledged (nothing in flight at the kill) has exactly the acknowledged codes and label;
// every committed regeneration has its notice e-mail and vice versa (nothing half-written); the
// outbox delivers every e-mail.
import { afterAll, beforeAll, expect, it } from 'vitest';
import pino from 'pino';
import { createTestDb, describeEachDb, type TestDb } from '../helpers/db.js';
import { createUser } from '../../src/server/modules/accounts/accounts.service.js';
import { makeDeps } from '../../src/server/deps.js';
import { loadConfig } from '../../src/server/config.js';
import { buildApp } from '../../src/server/app.js';
import { ManualClock } from '../../src/server/clock.js';
import { enableTotp, type KitApp } from '../../src/server/modules/two-factor/two-factor.testkit.js';
import {
  CRASH_ENV,
  ROUNDS,
  crashRound,
  postJson,
  prng,
  restartAndDrain,
  type Round,
} from './crash-harness.js';

const SEED = Number(process.env.OPENRIG_CRASH_SEED || Date.now() % 100000);

interface UserState {
  id: number;
  email: string;
  key: string;
  methodId: number;
  codes: string[];
  next: number;
  label: string;
  /** A change was sent and no reply came back (the kill): its outcome is unknown. */
  inFlight: boolean;
  stuck: boolean;
}

describeEachDb('crash: 2FA changes under SIGKILL', (dialect) => {
  let db: TestDb;
  const users: UserState[] = [];
  beforeAll(async () => {
    db = await createTestDb(dialect);
    // Enrol TOTP for the users through the app itself (in-process), before any serve runs.
    const config = loadConfig(
      { ...CRASH_ENV, OPENRIG_LOG_LEVEL: 'silent' },
      { dataDir: db.dataDir, databaseUrl: db.url },
    );
    const clock = new ManualClock(Date.now());
    const deps = makeDeps({ store: db.store, clock, config, log: pino({ level: 'silent' }) });
    const app = await buildApp(deps, { logger: false });
    await app.ready();
    const kit: KitApp = {
      clock,
      config,
      deps,
      async request(method, url, opts = {}) {
        const headers: Record<string, string> = { ...(opts.headers ?? {}) };
        if (opts.key) headers.authorization = `Bearer ${opts.key}`;
        if (opts.body !== undefined) headers['content-type'] = 'application/json';
        const r = await app.inject({
          method: method as 'GET',
          url,
          headers,
          payload: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        });
        return {
          status: r.statusCode,
          body: r.body ? JSON.parse(r.body) : undefined,
          headers: r.headers,
        };
      },
    };
    for (let i = 0; i < 12; i++) {
      const u = await createUser(
        { store: db.store, clock },
        { email: `tfa${i}-${dialect}@crash.example`, emailVerified: true },
      );
      const totp = await enableTotp(kit, u.api_key, u.email);
      users.push({
        id: u.id,
        email: u.email,
        key: u.api_key,
        methodId: totp.id,
        codes: totp.backupCodes,
        next: 0,
        label: 'phone app',
        inFlight: false,
        stuck: false,
      });
    }
    await app.close();
    // Enrolment moved the manual clock 30 s per user (one TOTP step each): its e-mails are due now.
    await db.store.db.updateTable('email_outbox').set({ available_at: Date.now() }).execute();
  });
  afterAll(async () => {
    await db.cleanup();
  });

  it(
    `keeps every acknowledged 2FA change and never half of one (${ROUNDS} SIGKILLs, seed ${SEED})`,
    async () => {
      const rnd = prng(SEED + (dialect === 'postgres' ? 1 : 0));
      let seq = 0;
      const rounds: Round[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        rounds.push(
          await crashRound({
            dbUrl: db.url,
            dataDir: db.dataDir,
            workers: users.length, // one worker per user: each user's changes are sequential
            minMs: 20,
            maxMs: 500,
            rnd,
            step: async (url, w) => {
              const u = users[w]!;
              if (u.stuck || u.inFlight) {
                // An unknown outcome (or no usable code left): this user sits the rest out.
                await new Promise((res) => setTimeout(res, 20));
                return null;
              }
              u.inFlight = true;
              if (rnd() < 0.5) {
                const label = `L${++seq}`;
                const reply = await postJson(`${url}/api/v0/tfa/update/`, 'PUT', u.key, {
                  tfa_method_id: u.methodId,
                  label,
                });
                expect(reply.status).toBeLessThan(500);
                u.inFlight = false;
                if (reply.status === 200) u.label = label;
                return { req: { user: u.id, label }, ...reply };
              }
              const code = u.codes[u.next]!;
              const reply = await postJson(`${url}/api/v0/tfa/regen-backup-codes/`, 'PUT', u.key, {
                backup_code: code,
              });
              expect(reply.status).toBeLessThan(500);
              u.inFlight = false;
              if (reply.status === 200) {
                u.codes = reply.body.backup_codes;
                u.next = 0;
              } else if (++u.next >= u.codes.length) u.stuck = true;
              return { req: { user: u.id, regen: true }, ...reply };
            },
          }),
        );
        // After a kill, the users with a request in flight have an unknown state from now on.
        for (const u of users) if (u.inFlight) u.stuck = true;
      }
      expect(rounds.flatMap((r) => r.acked).length).toBeGreaterThan(0);

      const d = db.store.db;
      const s = await restartAndDrain(db.url, db.dataDir, d);
      try {
        for (const u of users) {
          const codes = await d
            .selectFrom('tfa_backup_codes')
            .select(['created_at', 'used_at', 'deleted_at'])
            .where('user_id', '=', u.id)
            .execute();
          const live = codes.filter((c) => c.used_at === null && c.deleted_at === null);
          // 9 would be a backup code spent by a regeneration that never happened: the code's check
          // and the new set must commit together.
          expect(live.length, `unused backup codes of user ${u.id}`).toBe(10);
          expect(codes.length % 10, `backup codes of user ${u.id} come in sets of 10`).toBe(0);
          const regens = codes.length / 10 - 1;
          const notices = await d
            .selectFrom('email_outbox')
            .select('id')
            .where('to_addr', '=', u.email)
            .where('category', '=', 'tfa.backup_regenerated')
            .execute();
          expect(notices.length, `regeneration notices of user ${u.id}`).toBe(regens);
          const m = await d
            .selectFrom('tfa_methods')
            .select('label')
            .where('id', '=', u.methodId)
            .executeTakeFirstOrThrow();
          if (!u.inFlight) {
            // Nothing in flight at the last kill: the acknowledged state is the state.
            expect(m.label).toBe(u.label);
            if (u.next < u.codes.length) {
              const login = await postJson(`${s.url}/api/v0/tfa/`, 'POST', u.key, {
                backup_code: u.codes[u.next],
              });
              expect(login.status, `acknowledged backup code of user ${u.id}`).toBe(200);
            }
          }
        }
        const mails = await d.selectFrom('email_outbox').select(['sent_at', 'failed_at']).execute();
        expect(mails.every((x) => x.sent_at !== null && x.failed_at === null)).toBe(true);
      } finally {
        s.child.kill('SIGTERM');
        await s.exited;
      }
    },
    120_000 + ROUNDS * 8_000,
  );
});
