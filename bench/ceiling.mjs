// The database ceiling of bench/run.mjs: the fastest a Node.js server on this machine can answer
// a request that, like an authenticated instance GET, reads the database twice. Bare Fastify in
// as many node:cluster workers as `serve` runs, each with the same driver and connections as a
// `serve` worker (on a SQLite file a query-only better-sqlite3 connection; on PostgreSQL a pg pool
// of 10 with named prepared statements), and per request two one-row reads by primary key: a
// user, then an instance, the two tables the credential lookup and the instance read touch. No
// authentication, no view, no log: whatever openrig spends beyond this is its own.
//
// Usage: node bench/ceiling.mjs DATABASE_URL WORKERS. Prints `listening on URL` when every worker
// listens.
import cluster from 'node:cluster';
import { createServer } from 'node:net';
import Fastify from 'fastify';

const [databaseUrl, workersArg] = process.argv.slice(2);
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
  const read = await reader(databaseUrl);
  const [users, instances] = await Promise.all([
    read.count('SELECT max(id) AS n FROM users'),
    read.count('SELECT max(id) AS n FROM instances'),
  ]);
  let i = 0;
  const app = Fastify({ logger: false });
  app.get('/', async () => {
    i++;
    const user = await read.one('SELECT id, email FROM users WHERE id = $1', 1 + (i % users));
    const instance = await read.one('SELECT id, user_id FROM instances WHERE id = $1', 1 + (i % instances));
    return { user: user?.id ?? null, instance: instance?.id ?? null };
  });
  await app.listen({ host: '127.0.0.1', port: Number(process.env.CEILING_PORT) });
  process.send('listening');
  process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
}

async function reader(url) {
  if (url.startsWith('sqlite:')) {
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(url.slice('sqlite:'.length));
    db.pragma('query_only = ON');
    const statements = new Map();
    const prepare = (text) => {
      let st = statements.get(text);
      if (!st) statements.set(text, (st = db.prepare(text.replace(/\$1/g, '?'))));
      return st;
    };
    return {
      one: async (text, arg) => prepare(text).get(arg),
      count: async (text) => Number(prepare(text).get().n ?? 0) || 1,
    };
  }
  const { default: pg } = await import('pg');
  pg.types.setTypeParser(20, (v) => Number(v)); // as `serve` reads its bigint ids
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  const names = new Map();
  const query = async (text, values) => {
    if (!names.has(text)) names.set(text, `ceiling_${names.size}`);
    return (await pool.query({ name: names.get(text), text, values })).rows;
  };
  return {
    one: async (text, arg) => (await query(text, [arg]))[0],
    count: async (text) => Number((await query(text, []))[0].n ?? 0) || 1,
  };
}
