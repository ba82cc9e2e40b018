// Crash test: SIGKILL `serve` at random moments during concurrent instance
// creates, on SQLite and PostgreSQL. After a restart: every acknowledged instance exists, live,
// on its offer, with its instance key; no offer is marked rented without its instance and no
// instance exists without its key (nothing half-written); still one live instance per machine.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDb, describeEachDb, type TestDb } from '../helpers/db.js';
import { createUser } from '../../src/server/modules/accounts/accounts.service.js';
import { insertOffers, publicKey } from '../race/race-fixtures.js';
import { CRASH_ENV, ROUNDS, crashRound, postJson, prng, serveArgs, type Round } from './crash-harness.js';
import { startServe } from '../helpers/process.js';

const SEED = Number(process.env.OPENRIG_CRASH_SEED || Date.now() % 100000);

describeEachDb('crash: instance creates under SIGKILL', (dialect) => {
  let db: TestDb;
  let offers: number[] = [];
  const renters: { id: number; key: string }[] = [];
  beforeAll(async () => {
    db = await createTestDb(dialect);
    const deps = { store: db.store, clock: { now: () => Date.now() } };
    const host = await createUser(deps, { email: `host-${dialect}@crash.example`, emailVerified: true });
    offers = await insertOffers(db.store.db, host.id, 400);
    for (let i = 0; i < 20; i++) {
      const u = await createUser(deps, {
        email: `renter${i}-${dialect}@crash.example`,
        emailVerified: true,
        balanceUsd: 100,
      });
      renters.push({ id: u.id, key: u.api_key });
    }
    const now = Date.now();
    const k = publicKey();
    await db.store.db
      .insertInto('ssh_keys')
      .values(
        renters.map((r) => ({
          user_id: r.id,
          public_key: k,
          key_type: 'ssh-ed25519',
          fingerprint: `SHA256:crash${r.id}`,
          comment: '',
          created_at: now,
        })),
      )
      .execute();
  });
  afterAll(async () => {
    await db.cleanup();
  });

  it(
    `keeps every acknowledged create and never half of one (${ROUNDS} SIGKILLs, seed ${SEED})`,
    async () => {
      const rnd = prng(SEED + (dialect === 'postgres' ? 1 : 0));
      const rounds: Round[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        rounds.push(
          await crashRound({
            dbUrl: db.url,
            dataDir: db.dataDir,
            workers: 8,
            minMs: 10,
            maxMs: 400,
            rnd,
            step: async (url) => {
              const offer = offers[Math.floor(rnd() * offers.length)]!;
              const renter = renters[Math.floor(rnd() * renters.length)]!;
              const reply = await postJson(`${url}/api/v0/asks/${offer}/`, 'PUT', renter.key, {
                client_id: 'me',
                image: 'ubuntu:22.04',
                disk: 10,
              });
              expect(reply.status).toBeLessThan(500);
              return { req: { offer, renter: renter.id }, ...reply };
            },
          }),
        );
      }
      const acked = rounds.flatMap((r) => r.acked);
      expect(acked.length).toBeGreaterThan(0);

      // Restart once (recovery must need nothing), then check the database.
      const s = await startServe(serveArgs(db.url, db.dataDir), CRASH_ENV);
      try {
        const d = db.store.db;
        const live = await d
          .selectFrom('instances')
          .select(['id', 'machine_id', 'user_id'])
          .where('destroyed_at', 'is', null)
          .execute();
        const liveById = new Map(live.map((i) => [Number(i.id), i]));
        for (const a of acked) {
          const req = a.req as { offer: number; renter: number };
          const i = liveById.get(a.body.new_contract);
          expect(i, `acknowledged instance ${a.body.new_contract}`).toBeDefined();
          expect(Number(i!.machine_id)).toBe(req.offer);
          expect(Number(i!.user_id)).toBe(req.renter);
          // Its instance key works after the restart.
          const me = await fetch(`${s.url}/api/v0/instances/${a.body.new_contract}/`, {
            headers: { authorization: `Bearer ${a.body.instance_api_key}` },
          });
          expect(me.status).not.toBe(401);
        }
        const rented = await d
          .selectFrom('machines')
          .select('id')
          .where('id', 'in', offers)
          .where('rented', '=', 1)
          .execute();
        const liveMachines = new Set(live.map((i) => Number(i.machine_id)));
        expect(liveMachines.size).toBe(live.length); // one live instance per machine
        expect(new Set(rented.map((m) => Number(m.id)))).toEqual(liveMachines);
        const keys = await d
          .selectFrom('api_keys')
          .select('instance_id')
          .where('kind', '=', 'instance')
          .execute();
        const keyed = new Set(keys.map((k) => Number(k.instance_id)));
        for (const i of live) expect(keyed.has(Number(i.id)), `instance key of ${i.id}`).toBe(true);
      } finally {
        s.child.kill('SIGTERM');
        await s.exited;
      }
    },
    120_000 + ROUNDS * 8_000,
  );
});
