// The database ceiling of bench/run.mjs: the fastest a Node.js server on this machine can answer
// a request that, like an authenticated instance GET, reads its key and its instance from the
// database. Bare Fastify in as many node:cluster workers as `serve` runs, each opening the
// database as a `serve` worker does (openrig's own store from dist/: on a SQLite file its
// query-only reader connection, on PostgreSQL its pg pool with named prepared statements), and
// per request the very statements an instance GET with an API key runs: the key by its hash
// joined with its user, and the instance joined with its machine and its maintenance windows; two
// statements in one read transaction on a SQLite file, one statement on PostgreSQL, as `serve`
// makes them (KeyJoinedRead in src/server/http/auth.ts, read by src/server/db/credentials.ts), concurrent ones sharing a round trip on
// PostgreSQL as in `serve` (src/server/db/coalesce.ts). The requests rotate over every live instance, each read with a key of
// its owner. No HTTP authentication, no view, no log, no metrics: whatever openrig spends beyond
// this is not the database's.
//
//
// Two floors beneath it, on PostgreSQL only, for what any design that asks the database on every
// request can reach on this machine (the third argument):
// - `round-trip`: per request one trivial statement (a parameter returned as it came) through the
//   same coalesced reads, so concurrent requests share a round trip as the polls do: no lookup,
//   no row to encode or parse;
// - `notify`: per request one shared NOTIFY on a connection that LISTENs on its channel, its
//   answer awaited. PostgreSQL delivers notifications in commit order and a session's own before
//   its command completes, so this is the barrier a per-process cache of keys and instances,
//   emptied by notifications from triggers, would need on every request to keep a revoked key
//   refused on its next request: the floor of that design, its cache hits costing nothing.
//
// Usage: node bench/ceiling.mjs DATABASE_URL WORKERS [round-trip|notify] (after `npm run build`).
// Prints `listening on URL` when every worker listens.
import cluster from 'node:cluster';
import { createServer } from 'node:net';
import Fastify from 'fastify';
import { dist } from './bench-lib.mjs';

const [databaseUrl, workersArg, floor] = process.argv.slice(2);
if (floor && floor !== 'round-trip' && floor !== 'notify') throw new Error(`unknown floor: ${floor}`);
const workers = Math.max(1, Number(workersArg) || 1);

if (cluster.isPrimary) {
  // One port for every worker, chosen before they start.
  const port = await new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
  let listening = 0;
  for (let i = 0; i < workers; i++) {
    const w = cluster.fork({ CEILING_PORT: String(port) });
    w.on('message', (m) => {
      if (m === 'listening' && ++listening === workers)
        process.stdout.write(`listening on http://127.0.0.1:${port}\n`);
    });
  }
  process.on('SIGTERM', () => {
    for (const w of Object.values(cluster.workers)) w.kill('SIGTERM');
    process.exit(0);
  });
} else {
  const { openStore } = await dist('server/db/connection.js');
  const { keyWithJoinedRead, keyWithReadInSnapshot } = await dist('server/db/credentials.js');
  const { polledInstance } = await dist('server/modules/instances/instances.routes.js');
  const store = openStore(databaseUrl);
  // Every live instance with the hash of one live key of its owner, as the bench's polls send.
  const pairs = await store.read(
    `SELECT i.id AS id, (SELECT k.key_hash FROM api_keys k WHERE k.user_id = i.user_id
       AND k.revoked_at IS NULL AND k.kind = 'user' ORDER BY k.id LIMIT 1) AS key_hash
     FROM instances i WHERE i.destroyed_at IS NULL AND i.user_id IS NOT NULL ORDER BY i.id`,
    [],
  );
  // As `serve` reads for an API key: on PostgreSQL the key and the instance in one statement, on
  // a SQLite file the key, then the instance, in one read transaction (shared with the requests
  // of the same turn of the event loop).
  const keyWithInstance = keyWithJoinedRead(polledInstance);
  if (floor && store.dialect.name !== 'postgres') throw new Error('the floors are PostgreSQL only');
  const poll =
    floor === 'round-trip'
      ? async (p) => {
          const [row] = await store.readCoalesced('SELECT $1::bigint AS id', [p.id]);
          return { user: null, instance: row?.id ?? null };
        }
      : floor === 'notify'
        ? await notifyBarrier(databaseUrl)
        : store.dialect.name === 'postgres'
          ? async (p) => {
              const [row] = await keyWithInstance(store, p.key_hash, p.id, Date.now());
              return { user: row?.key.id ?? null, instance: row?.joined?.id ?? null };
            }
          : async (p) => {
              const r = await keyWithReadInSnapshot(store, store.readSnapshot, p.key_hash, polledInstance, [
                p.id,
                Date.now(),
              ]);
              return { user: r.key?.id ?? null, instance: r.joined?.id ?? null };
            };
  // The reads must find what a poll finds, or this would measure misses.
  const first = pairs.length > 0 ? await poll(pairs[0]) : null;
  if (!first?.instance) throw new Error("ceiling: no live instance readable with its owner's key");
  let i = 0;
  const app = Fastify({ logger: false });
  app.get('/', async () => poll(pairs[i++ % pairs.length]));
  await app.listen({ host: '127.0.0.1', port: Number(process.env.CEILING_PORT) });
  process.send('listening');
  process.on('SIGTERM', () =>
    app.close().then(async () => {
      await store.destroy();
      process.exit(0);
    }),
  );
}

/** Per request, the shared NOTIFY round trip of `notify` (see the header). */
async function notifyBarrier(url) {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  // A notifying transaction commits; it need not wait for its commit record to reach the disk.
  await c.query('SET synchronous_commit = off');
  await c.query('LISTEN openrig_floor');
  c.on('notification', () => {});
  let waiting = [];
  let inFlight = false;
  const fire = () => {
    if (inFlight || waiting.length === 0) return;
    const batch = waiting;
    waiting = [];
    inFlight = true;
    c.query('NOTIFY openrig_floor').then(() => {
      inFlight = false;
      for (const done of batch) done();
      fire();
    });
  };
  return (p) =>
    new Promise((resolve) => {
      waiting.push(() => resolve({ user: null, instance: p.id }));
      if (!inFlight) setImmediate(fire);
    });
}
