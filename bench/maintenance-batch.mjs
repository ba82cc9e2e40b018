#!/usr/bin/env node
// Maintenance batch bench: one `POST /api/v0/machines/maintenances/batch` of
// 100 machines with 1,000 affected instances (10 per machine, 1,000 distinct clients), against a
// real `node bin/openrig.js serve` over loopback, on SQLite and (when reachable) PostgreSQL.
// Measures the call (windows + 1,001 outbox rows in one transaction) and the relay's delivery of
// its e-mails to the outbox file; writes the "Maintenance batch" section of bench/RESULTS.md.
//
// Run after `npm run build`: `node bench/maintenance-batch.mjs`. Environment (optional):
// BENCH_DIALECTS (sqlite,postgres), BENCH_PG_URL (postgres://postgres@127.0.0.1:5432/postgres),
// BENCH_RUNS (5 timed calls after one warm-up).
//
// A machine holds one active instance (partial unique index instances_one_live_per_machine); a
// stopped instance releases it, so each machine has one running instance and nine stopped ones.
import { mkdtempSync, rmSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { tmpdir, cpus, availableParallelism } from 'node:os';
import path from 'node:path';
import { ROOT, dist, scratchPgDatabase, startNode, sleep } from './bench-lib.mjs';

const env = process.env;
const DIALECTS = (env.BENCH_DIALECTS || 'sqlite,postgres').split(',').map((s) => s.trim());
const PG_ADMIN = env.BENCH_PG_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const RUNS = Number(env.BENCH_RUNS || 5);
const MACHINES = 100;
const PER_MACHINE = 10;
const log = (...a) => console.log(`[maintenance bench ${new Date().toISOString().slice(11, 19)}]`, ...a);

const { openStore } = await dist('server/db/connection.js');
const { migrateToLatest } = await dist('server/db/migrate.js');
const { createUser } = await dist('server/modules/accounts/accounts.service.js');
const { systemClock } = await dist('server/clock.js');

async function seed(url) {
  const store = openStore(url);
  await migrateToLatest(store);
  const db = store.db;
  const now = Date.now();
  const host = await createUser({ store, clock: systemClock }, { email: 'bench-host@example.com' });
  const machines = (
    await db
      .insertInto('machines')
      .values(
        Array.from({ length: MACHINES }, (_, i) => ({
          host_id: host.id,
          hostname: `rig-${i}`,
          gpu_name: 'RTX 4090',
          num_gpus: 8,
          created_at: now,
          listed: 1,
        })),
      )
      .returning('id')
      .execute()
  ).map((r) => r.id);
  const clients = [];
  for (let i = 0; i < MACHINES * PER_MACHINE; i += 200) {
    const rows = Array.from({ length: 200 }, (_, k) => ({
      email: `client-${i + k}@example.com`,
      full_name: `Client ${i + k}`,
      created_at: now,
    }));
    clients.push(...(await db.insertInto('users').values(rows).returning('id').execute()).map((r) => r.id));
  }
  for (let i = 0; i < clients.length; i += 200) {
    const rows = clients.slice(i, i + 200).map((userId, k) => ({
      machine_id: machines[(i + k) % MACHINES],
      user_id: userId,
      image: 'pytorch/pytorch',
      disk: 20,
      dph_compute: 0.4,
      dph_disk: 0.01,
      // One running instance per machine, the other nine stopped: a machine holds one active
      // instance (a stopped one releases it but keeps its data there, so its client is affected).
      intended_status: i + k < MACHINES ? 'running' : 'stopped',
      actual_status: i + k < MACHINES ? 'running' : 'stopped',
      created_at: now,
      billed_until: now,
    }));
    await db.insertInto('instances').values(rows).execute();
  }
  return { store, host, machines };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

async function runDialect(dialect) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'openrig-maint-bench-'));
  let url = `sqlite:${path.join(dataDir, 'openrig.db')}`;
  let drop = async () => {};
  if (dialect === 'postgres') {
    const p = await scratchPgDatabase(PG_ADMIN, 'bench_maint');
    if (p.skip) return { dialect, skipped: p.skip };
    url = p.url;
    drop = p.drop;
  }
  const { store, host, machines } = await seed(url);
  const outbox = path.join(dataDir, 'mail.jsonl');
  const srv = await startNode(
    [path.join(ROOT, 'bin/openrig.js'), 'serve', '--port', '0', '--data', dataDir, '--database-url', url],
    {
      env: {
        OPENRIG_LOG_LEVEL: 'warn',
        OPENRIG_SECRET_KEY: 'be'.repeat(32),
        OPENRIG_MAIL_OUTBOX: outbox,
        SMTP_URL: '',
      },
    },
  );
  const times = [];
  const deliveries = [];
  let lastStatus = 0;
  let lastSent = [];
  const base = Math.floor(Date.now() / 1000) + 86_400;
  try {
    for (let i = 0; i <= RUNS; i++) {
      const before = Number(
        (
          await store.db
            .selectFrom('email_outbox')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirst()
        ).n,
      );
      const t0 = performance.now();
      const res = await fetch(`${srv.url}/api/v0/machines/maintenances/batch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${host.api_key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          machine_ids: machines,
          sdate: base + i * 36_000,
          duration: 4,
          maintenance_category: 'gpu',
        }),
      });
      const ms = performance.now() - t0;
      const body = await res.json();
      lastStatus = res.status;
      if (res.status !== 200)
        throw new Error(`batch answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
      lastSent = body.results.map((r) => r.notifications_sent);
      // Delivery: until every outbox row is sent (the relay writes the outbox file).
      for (;;) {
        const r = await store.db
          .selectFrom('email_outbox')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('sent_at', 'is', null)
          .executeTakeFirst();
        if (Number(r.n) === 0) break;
        if (performance.now() - t0 > 120_000) throw new Error('relay did not deliver within 120 s');
        await sleep(10);
      }
      const total = Number(
        (
          await store.db
            .selectFrom('email_outbox')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirst()
        ).n,
      );
      if (total - before !== MACHINES * PER_MACHINE + 1)
        throw new Error(`expected ${MACHINES * PER_MACHINE + 1} e-mails, got ${total - before}`);
      if (i > 0) {
        times.push(ms);
        deliveries.push(performance.now() - t0);
      }
      log(
        dialect,
        i === 0 ? 'warm-up' : `run ${i}`,
        `${ms.toFixed(0)} ms, delivered after ${(performance.now() - t0).toFixed(0)} ms`,
      );
    }
  } finally {
    await srv.stop('SIGTERM');
    await store.destroy();
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return {
    dialect,
    status: lastStatus,
    notifications: lastSent.reduce((a, b) => a + b, 0),
    median: median(times),
    min: Math.min(...times),
    max: Math.max(...times),
    delivery: median(deliveries),
  };
}

const results = [];
for (const d of DIALECTS) results.push(await runDialect(d));

const cpu = cpus()[0]?.model ?? 'unknown CPU';
const out = [
  '<!-- maintenance:begin (bench/maintenance-batch.mjs writes this section; keep others outside it) -->',
  '## Maintenance batch (bench/maintenance-batch.mjs)',
  '',
  `Run ${new Date().toISOString()} on ${availableParallelism()} cores (${cpu}), Node ${process.version}. One \`POST /api/v0/machines/maintenances/batch\` of ${MACHINES} machines with ${MACHINES * PER_MACHINE} affected instances (${PER_MACHINE} per machine, ${MACHINES * PER_MACHINE} distinct clients): ${MACHINES} windows, ${MACHINES * PER_MACHINE} client e-mails and 1 host e-mail written in one transaction, against \`node bin/openrig.js serve\` over loopback; ${RUNS} timed calls after a warm-up. "Delivered" is until the relay has written all ${MACHINES * PER_MACHINE + 1} e-mails to the outbox file and marked them sent.`,
  '',
  '| database | HTTP | notifications_sent (sum) | call median ms | min | max | delivered median ms |',
  '|---|---|---|---|---|---|---|',
  ...results.map((r) =>
    r.skipped
      ? `| ${r.dialect} | skipped: ${r.skipped} | | | | | |`
      : `| ${r.dialect} | ${r.status} | ${r.notifications} | ${r.median.toFixed(0)} | ${r.min.toFixed(0)} | ${r.max.toFixed(0)} | ${r.delivery.toFixed(0)} |`,
  ),
  '',
  '<!-- maintenance:end -->',
].join('\n');

const file = path.join(ROOT, 'bench/RESULTS.md');
let text = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmark results\n';
const re = /<!-- maintenance:begin[\s\S]*?<!-- maintenance:end -->/;
text = re.test(text) ? text.replace(re, out) : `${text.trimEnd()}\n\n${out}\n`;
writeFileSync(file, text);
console.log(out);
