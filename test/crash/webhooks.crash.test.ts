// Crash test: SIGKILL `serve` at random moments while clients create instances and the server
// delivers their instance.created events to a webhook, on SQLite and PostgreSQL. After a restart
// has drained the deliveries: every acknowledged create has its event; every event in the
// database reached the receiver; a repeat carries the same webhook-id and the same body (at least
// once, nothing lost, no other duplicate); nothing reached the receiver that is not a committed event.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDb, describeEachDb, type TestDb } from '../helpers/db.js';
import { createUser } from '../../src/server/modules/accounts/accounts.service.js';
import { insertOffers, publicKey } from '../race/race-fixtures.js';
import {
  CRASH_ENV,
  ROUNDS,
  crashRound,
  postJson,
  prng,
  releaseLeasesOfDead,
  serveArgs,
  type Round,
} from './crash-harness.js';
import { startServe, waitFor } from '../helpers/process.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';

const SEED = Number(process.env.OPENRIG_CRASH_SEED || Date.now() % 100000);
const ENV = {
  OPENRIG_WEBHOOK_ALLOW_HTTP: '1',
  OPENRIG_WEBHOOK_ALLOW_HOSTS: '127.0.0.1/32',
  OPENRIG_WEBHOOK_POLL_MS: '20',
};

describeEachDb('crash: webhook deliveries under SIGKILL', (dialect) => {
  let db: TestDb;
  let rx: Receiver;
  let offers: number[] = [];
  let renter: { id: number; key: string };
  beforeAll(async () => {
    db = await createTestDb(dialect);
    rx = await startReceiver();
    const deps = { store: db.store, clock: { now: () => Date.now() } };
    const host = await createUser(deps, { email: `host-${dialect}@hooks.example`, emailVerified: true });
    offers = await insertOffers(db.store.db, host.id, 400);
    const u = await createUser(deps, {
      email: `r-${dialect}@hooks.example`,
      emailVerified: true,
      balanceUsd: 1000,
    });
    renter = { id: u.id, key: u.api_key };
    await db.store.db
      .insertInto('ssh_keys')
      .values({
        user_id: u.id,
        public_key: publicKey(),
        key_type: 'ssh-ed25519',
        fingerprint: `SHA256:hooks${u.id}`,
        comment: '',
        created_at: Date.now(),
      })
      .execute();
  });
  afterAll(async () => {
    await rx.close();
    await db.cleanup();
  });

  it(
    `loses no event and repeats only with the same webhook-id (${ROUNDS} SIGKILLs, seed ${SEED})`,
    async () => {
      // The webhook is registered through a first, cleanly stopped server.
      const first = await startServe(serveArgs(db.url, db.dataDir), { ...CRASH_ENV, ...ENV });
      const c = await postJson(`${first.url}/api/v0/webhooks/`, 'POST', renter.key, {
        url: `${rx.url}/crash`,
        events: ['instance.*'],
      });
      expect(c.status).toBe(200);
      first.child.kill('SIGTERM');
      await first.exited;

      const rnd = prng(SEED + (dialect === 'postgres' ? 1 : 0));
      const rounds: Round[] = [];
      let next = 0;
      for (let r = 0; r < ROUNDS; r++) {
        rounds.push(
          await crashRound({
            dbUrl: db.url,
            dataDir: db.dataDir,
            env: ENV,
            workers: 4,
            minMs: 50,
            maxMs: 600,
            rnd,
            step: async (url) => {
              const offer = offers[next++ % offers.length]!;
              const reply = await postJson(`${url}/api/v0/asks/${offer}/`, 'PUT', renter.key, {
                client_id: 'me',
                image: 'ubuntu:22.04',
                disk: 10,
              });
              expect(reply.status).toBeLessThan(500);
              return { req: { offer }, ...reply };
            },
          }),
        );
      }
      const acked = rounds.flatMap((r) => r.acked);
      expect(acked.length).toBeGreaterThan(0);

      // A killed server's lanes hold their leases until they run out (a minute).
      await releaseLeasesOfDead(db.store.db, 'webhooks');
      const s = await startServe(serveArgs(db.url, db.dataDir), { ...CRASH_ENV, ...ENV });
      try {
        const pending = async () =>
          Number(
            (
              await db.store.db
                .selectFrom('webhook_deliveries')
                .select((eb) => eb.fn.countAll<number>().as('n'))
                .where('state', '=', 'pending')
                .executeTakeFirstOrThrow()
            ).n,
          );
        await waitFor(
          async () => {
            await releaseLeasesOfDead(db.store.db, 'webhooks');
            return (await pending()) === 0;
          },
          'every delivery to be sent',
          60_000,
          50,
        );
        const events = await db.store.db
          .selectFrom('events')
          .select(['public_id', 'data'])
          .where('user_id', '=', renter.id)
          .where('type', '=', 'instance.created')
          .execute();
        const byInstance = new Map(
          events.map((e) => [JSON.parse(e.data).instance_id as number, e.public_id]),
        );
        for (const a of acked)
          expect(byInstance.has(a.body.new_contract), `event of ${a.body.new_contract}`).toBe(true);
        const got = rx.received.filter((r) => r.path === '/crash' && r.status === 200);
        const bodies = new Map<string, string>();
        for (const g of got) {
          const id = g.headers['webhook-id']!;
          const seen = bodies.get(id);
          if (seen !== undefined) expect(g.body, `repeat of ${id}`).toBe(seen);
          bodies.set(id, g.body);
          expect(JSON.parse(g.body).id).toBe(id);
        }
        const committed = new Set(events.map((e) => e.public_id));
        for (const id of bodies.keys())
          expect(committed.has(id), `received ${id} is a committed event`).toBe(true);
        for (const id of committed) expect(bodies.has(id), `event ${id} delivered`).toBe(true);
        console.log(
          `[webhooks crash ${dialect}] ${acked.length} acknowledged creates, ${committed.size} events, ${got.length} deliveries (${got.length - bodies.size} repeats)`,
        );
      } finally {
        s.child.kill('SIGTERM');
        await s.exited;
      }
    },
    120_000 + ROUNDS * 10_000,
  );
});
