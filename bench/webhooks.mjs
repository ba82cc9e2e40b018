#!/usr/bin/env node
// Webhook delivery bench: how many events a second the dispatcher delivers to a local receiver,
// on SQLite and (when reachable) PostgreSQL. Events are recorded in transactions of 100 (as code
// paths record them: an event row and one delivery row per matching webhook), then the dispatcher
// starts and the clock runs until the receiver has answered 200 to every delivery and every
// result is written. Two cases: one endpoint (one lane: deliveries in order, one at a time) and
// eight endpoints of eight users (eight lanes in parallel). The receiver is a plain Node HTTP
// server in the same process, answering 200 at once. Writes the "Webhook delivery" section of
// bench/RESULTS.md.
//
// Run after `npm run build`: `node bench/webhooks.mjs`. Environment (optional): BENCH_DIALECTS
// (sqlite,postgres), BENCH_PG_URL (postgres://postgres@127.0.0.1:5432/postgres), BENCH_EVENTS
// (4000 per case).
import { mkdtempSync, rmSync, readFileSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { tmpdir, cpus, availableParallelism } from 'node:os';
import http from 'node:http';
import path from 'node:path';
import pino from 'pino';
import { ROOT, dist, scratchPgDatabase } from './bench-lib.mjs';

const env = process.env;
const DIALECTS = (env.BENCH_DIALECTS || 'sqlite,postgres').split(',').map((s) => s.trim());
const PG_ADMIN = env.BENCH_PG_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const EVENTS = Number(env.BENCH_EVENTS || 4000);
const log = (...a) => console.log(`[webhooks bench ${new Date().toISOString().slice(11, 19)}]`, ...a);

const { openStore, tx } = await dist('server/db/connection.js');
const { migrateToLatest } = await dist('server/db/migrate.js');
const { createUser } = await dist('server/modules/accounts/accounts.service.js');
const { systemClock } = await dist('server/clock.js');
const { loadConfig } = await dist('server/config.js');
const { makeDeps } = await dist('server/deps.js');
const { createWebhook } = await dist('server/modules/webhooks/webhooks.service.js');
const { recordEvents } = await dist('server/modules/webhooks/webhooks.events.js');
const { startWebhookDispatcher } = await dist('server/jobs/webhook-dispatcher.js');

async function receiver() {
  let ok = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      ok++;
      res.writeHead(200).end();
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, count: () => ok, close: () => server.close() };
}

async function runCase(url, dataDir, endpoints) {
  const store = openStore(url);
  await migrateToLatest(store);
  const config = loadConfig(
    {
      OPENRIG_SECRET_KEY: 'ab'.repeat(32),
      OPENRIG_WEBHOOK_ALLOW_HTTP: '1',
      OPENRIG_WEBHOOK_ALLOW_HOSTS: '127.0.0.1/32',
      OPENRIG_WEBHOOK_POLL_MS: '20',
    },
    { dataDir, databaseUrl: url },
  );
  const deps = makeDeps({ store, clock: systemClock, config, log: pino({ level: 'silent' }) });
  const rx = await receiver();
  const users = [];
  for (let i = 0; i < endpoints; i++) {
    const u = await createUser(deps, { email: `bench-${endpoints}-${i}-${Date.now()}@example.com` });
    await createWebhook(deps, { user: { id: u.id } }, { url: `${rx.url}/u${i}`, events: ['*'] });
    users.push(u.id);
  }
  const tr0 = performance.now();
  for (let i = 0; i < EVENTS; i += 100) {
    await tx(store, (trx) =>
      recordEvents(
        trx,
        Date.now(),
        Array.from({ length: Math.min(100, EVENTS - i) }, (_, k) => {
          const n = i + k;
          const userId = users[n % users.length];
          return {
            userId,
            type: 'instance.running',
            subject: `instance:${n % 50}`,
            data: { instance_id: n % 50, n },
          };
        }),
      ),
    );
  }
  const recordMs = performance.now() - tr0;
  const d = startWebhookDispatcher(deps);
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  for (;;) {
    const r = await store.db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('state', '=', 'pending')
      .executeTakeFirstOrThrow();
    if (Number(r.n) === 0) break;
    await new Promise((res) => setTimeout(res, 10));
  }
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  const cpuMsPerEvent = (cpu.user + cpu.system) / 1000 / EVENTS;
  await d.stop();
  rx.close();
  await store.destroy();
  return {
    endpoints,
    events: EVENTS,
    received: rx.count(),
    ms,
    perS: (EVENTS / ms) * 1000,
    cpuMsPerEvent,
    recordPerS: (EVENTS / recordMs) * 1000,
  };
}

const rows = [];
for (const dialect of DIALECTS) {
  for (const endpoints of [1, 8]) {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'openrig-bench-hooks-'));
    let url;
    let drop = async () => {};
    if (dialect === 'sqlite') url = `sqlite:${path.join(dataDir, 'openrig.db')}`;
    else {
      const p = await scratchPgDatabase(PG_ADMIN, 'bench_hooks');
      if (p.skip) {
        log(`postgres skipped: ${p.skip}`);
        rmSync(dataDir, { recursive: true, force: true });
        break;
      }
      url = p.url;
      drop = p.drop;
    }
    try {
      const r = await runCase(url, dataDir, endpoints);
      log(dialect, r);
      rows.push({ dialect, ...r });
    } finally {
      await drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
}

const cpu = cpus()[0]?.model ?? 'unknown CPU';
const section = [
  '<!-- webhooks:begin (bench/webhooks.mjs writes this section; keep others outside it) -->',
  '## Webhook delivery (bench/webhooks.mjs)',
  '',
  `Run ${new Date().toISOString()} on ${availableParallelism()} cores (${cpu.trim()}), Node ${process.version}. ${EVENTS} events recorded in transactions of 100, then delivered by the dispatcher (signed, one lane per endpoint, results written per batch) to a Node HTTP receiver in the same process answering 200 at once; timed from the dispatcher's start until no delivery is pending. "CPU ms per event" is this process's CPU time (dispatcher, receiver and the SQLite driver; on PostgreSQL the database server's own CPU is not in it) over the delivery phase, divided by the events: unlike the rate, it does not move with how busy the shared machine is. "Recorded/s" is the rate of writing the events with their delivery rows.`,
  '',
  '| database | endpoints | events | received | delivered/s | seconds | CPU ms per event | recorded/s |',
  '|---|---|---|---|---|---|---|---|',
  ...rows.map(
    (r) =>
      `| ${r.dialect} | ${r.endpoints} | ${r.events} | ${r.received} | ${Math.round(r.perS)} | ${(r.ms / 1000).toFixed(2)} | ${r.cpuMsPerEvent.toFixed(2)} | ${Math.round(r.recordPerS)} |`,
  ),
  '',
  '<!-- webhooks:end -->',
].join('\n');
const file = path.join(ROOT, 'bench/RESULTS.md');
let text = readFileSync(file, 'utf8');
const re = /<!-- webhooks:begin[\s\S]*?<!-- webhooks:end -->/;
text = re.test(text) ? text.replace(re, section) : `${text.trimEnd()}\n\n${section}\n`;
writeFileSync(file, text);
log('wrote bench/RESULTS.md');
