#!/usr/bin/env node
// Market preemption bench: the time from an on-demand create on a machine a bid holds to the winner
// `running`, less the grace period the preempted bid gets (OPENRIG_PREEMPT_GRACE_S), with
// BENCH_MARKET_MACHINES (1,000) machines each held by a running bid, against a real
// `node bin/openrig.js serve` over loopback, on SQLite and (when reachable) PostgreSQL. Writes the
// "Market preemption" section of bench/RESULTS.md.
//
// The machines are registered by simulated agents (BENCH_MARKET_PER_AGENT machines each) that sync
// every BENCH_MARKET_SYNC_MS (500) as a real agent does: they report what the server wants as done,
// stop a preempted instance only when its grace (stop_grace_s) has run out, and start an instance
// only once nothing else runs on its machine, as the real agent's reconcile does. So the measure
// holds the grace, the agents' sync delay and the server's work; the grace is subtracted.
//
// Run after `npm run build`: `node bench/market-preempt.mjs`. Environment (optional):
// BENCH_DIALECTS (sqlite,postgres), BENCH_PG_URL (postgres://postgres@127.0.0.1:5432/postgres),
// BENCH_MARKET_MACHINES (1000), BENCH_MARKET_PER_AGENT (10), BENCH_MARKET_SAMPLES (20),
// BENCH_MARKET_GRACE_S (1), BENCH_MARKET_SYNC_MS (500), BENCH_MARKET_WRITE (1: write RESULTS.md).
import { mkdtempSync, rmSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { tmpdir, cpus, availableParallelism } from 'node:os';
import path from 'node:path';
import { ROOT, dist, scratchPgDatabase, startNode, sleep } from './bench-lib.mjs';

const env = process.env;
const DIALECTS = (env.BENCH_DIALECTS || 'sqlite,postgres').split(',').map((s) => s.trim());
const PG_ADMIN = env.BENCH_PG_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const MACHINES = Number(env.BENCH_MARKET_MACHINES || 1000);
const PER_AGENT = Number(env.BENCH_MARKET_PER_AGENT || 10);
const SAMPLES = Math.min(Number(env.BENCH_MARKET_SAMPLES || 20), MACHINES);
const GRACE_S = Number(env.BENCH_MARKET_GRACE_S || 1);
const SYNC_MS = Number(env.BENCH_MARKET_SYNC_MS || 500);
const WRITE = (env.BENCH_MARKET_WRITE || '1') !== '0';
const PUB = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl bench@market';
const log = (...a) => console.log(`[market bench ${new Date().toISOString().slice(11, 19)}]`, ...a);

const { openStore } = await dist('server/db/connection.js');
const { migrateToLatest } = await dist('server/db/migrate.js');
const { createUser } = await dist('server/modules/accounts/accounts.service.js');
const { systemClock } = await dist('server/clock.js');

const bearer = (key) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
async function call(url, method, p, key, body) {
  const r = await fetch(`${url}${p}`, {
    method,
    headers: bearer(key),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${text.slice(0, 300)}`);
  return json;
}

/**
 * A simulated agent: registers its machines, then syncs every SYNC_MS. What it holds per instance:
 * running (since), stopping (until: the grace's end), stopped. It starts an instance only when no
 * other instance of the machine runs or stops here, as the real reconcile does.
 */
function simulatedAgent(url, key, uid, machineIds) {
  const here = new Map(); // id → { machine, state: 'running' | 'stopping' | 'stopped', until }
  let stopped = false;
  let timer;
  const busy = (machine, except) =>
    [...here.entries()].some(([id, h]) => id !== except && h.machine === machine && h.state !== 'stopped');
  async function sync() {
    const now = Date.now();
    for (const h of here.values()) if (h.state === 'stopping' && now >= h.until) h.state = 'stopped';
    const instances = [...here.entries()].map(([id, h]) => ({
      id,
      state: h.state === 'stopped' ? 'stopped' : 'running',
      ...(h.state !== 'stopped' ? { ssh_port: 40000 + (id % 20000) } : {}),
    }));
    const r = await call(url, 'POST', '/api/agent/v1/sync', key, {
      agent_uid: uid,
      machine_ids: machineIds,
      instances,
    });
    let again = false;
    for (const d of r.instances ?? []) {
      const h = here.get(d.id);
      if (d.desired === 'destroyed') {
        here.delete(d.id);
        again = true;
      } else if (d.desired === 'stopped') {
        if (h && h.state === 'running') {
          h.state = d.stop_grace_s ? 'stopping' : 'stopped';
          h.until = Date.now() + (d.stop_grace_s ?? 0) * 1000;
          again = true;
        }
      } else if (d.desired === 'running' && (!h || h.state === 'stopped')) {
        if (!busy(d.machine_id, d.id)) {
          here.set(d.id, { machine: d.machine_id, state: 'running', until: 0 });
          again = true;
        }
      }
    }
    return again;
  }
  const loop = async () => {
    if (stopped) return;
    let again = false;
    try {
      again = await sync();
    } catch (err) {
      log(`agent ${uid}: ${err.message}`);
    }
    // A change is reported at once, and a stop that ends is followed by a sync (the real agent
    // syncs again when an operation ends).
    let next = again ? 20 : SYNC_MS;
    for (const h of here.values())
      if (h.state === 'stopping') next = Math.min(next, Math.max(0, h.until - Date.now()));
    if (!stopped) timer = setTimeout(loop, next);
  };
  return {
    start: () => loop(),
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
    kick: () => {
      clearTimeout(timer);
      timer = setTimeout(loop, 0);
    },
    here,
  };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const pct = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

async function runDialect(dialect) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'openrig-market-bench-'));
  let url = `sqlite:${path.join(dataDir, 'openrig.db')}`;
  let drop = async () => {};
  if (dialect === 'postgres') {
    const p = await scratchPgDatabase(PG_ADMIN, 'bench_market');
    if (p.skip) return { dialect, skipped: p.skip };
    url = p.url;
    drop = p.drop;
  }
  const store = openStore(url);
  await migrateToLatest(store);
  const deps = { store, clock: systemClock };
  const host = await createUser(deps, { email: 'market-host@example.com' });
  const bidders = [];
  for (let i = 0; i < Math.ceil(MACHINES / 10); i++)
    bidders.push(await createUser(deps, { email: `bidder-${i}@example.com`, balanceUsd: 100_000 }));
  const renters = [];
  for (let i = 0; i < SAMPLES; i++)
    renters.push(await createUser(deps, { email: `renter-${i}@example.com`, balanceUsd: 100_000 }));
  const srv = await startNode(
    [path.join(ROOT, 'bin/openrig.js'), 'serve', '--port', '0', '--data', dataDir, '--database-url', url],
    {
      env: {
        OPENRIG_LOG_LEVEL: 'warn',
        OPENRIG_SECRET_KEY: 'bf'.repeat(32),
        OPENRIG_PREEMPT_GRACE_S: String(GRACE_S),
        OPENRIG_RATE_LIMITS: 'off',
        SMTP_URL: '',
      },
    },
  );
  const agents = [];
  const times = [];
  try {
    for (const u of [...bidders, ...renters])
      await call(srv.url, 'POST', '/api/v0/ssh/', u.api_key, { ssh_key: PUB });
    // Simulated agents register the machines; the host takes bids from 0.1 $/h.
    const t0 = performance.now();
    const machines = [];
    for (let a = 0; a * PER_AGENT < MACHINES; a++) {
      const uid = `bench-market-${a}`;
      const n = Math.min(PER_AGENT, MACHINES - a * PER_AGENT);
      const r = await call(srv.url, 'POST', '/api/agent/v1/register', host.api_key, {
        agent_uid: uid,
        version: 'bench',
        runtime: 'process',
        machines: Array.from({ length: n }, (_, slot) => ({
          slot,
          hostname: `m${a}-${slot}`,
          gpu_name: 'RTX 4090',
          num_gpus: 1,
          gpu_ram: 24576,
          cpu_name: 'bench',
          cpu_cores: 8,
          cpu_ghz: 3,
          cpu_ram: 65536,
          disk_space: 1000,
          driver_version: '550',
          cuda_max_good: 12.4,
          dlperf: 80,
        })),
      });
      const ids = r.machines.map((m) => m.machine_id);
      machines.push(...ids);
      agents.push(simulatedAgent(srv.url, host.api_key, uid, ids));
    }
    await store.db.updateTable('machines').set({ min_bid_dph: 0.1, listed: 1 }).execute();
    for (const ag of agents) ag.start();
    log(
      dialect,
      `${machines.length} machines registered by ${agents.length} agents in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    // A running bid on every machine.
    const bidOf = new Map();
    for (let i = 0; i < machines.length; i += 50) {
      await Promise.all(
        machines.slice(i, i + 50).map(async (m, k) => {
          const b = bidders[(i + k) % bidders.length];
          const r = await call(srv.url, 'PUT', `/api/v0/asks/${m}/`, b.api_key, {
            image: 'bench',
            disk: 1,
            price: 0.2,
          });
          bidOf.set(m, r.new_contract);
        }),
      );
    }
    for (;;) {
      const n = await store.db
        .selectFrom('instances')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('actual_status', '=', 'running')
        .where('is_bid', '=', 1)
        .executeTakeFirst();
      if (Number(n.n) >= machines.length) break;
      await sleep(100);
    }
    log(dialect, `${machines.length} bids running`);
    // Samples: one on-demand create at a time on a machine a bid holds, until the winner runs.
    for (let s = 0; s < SAMPLES; s++) {
      const m = machines[Math.floor((s * machines.length) / SAMPLES)];
      const r = renters[s];
      const t1 = performance.now();
      const c = await call(srv.url, 'PUT', `/api/v0/asks/${m}/`, r.api_key, { image: 'bench', disk: 1 });
      for (const ag of agents) if (ag.here.has(bidOf.get(m))) ag.kick();
      for (;;) {
        const row = await call(srv.url, 'GET', `/api/v0/instances/${c.new_contract}/`, r.api_key);
        if (row.instances?.actual_status === 'running') break;
        if (performance.now() - t1 > 60_000)
          throw new Error(`instance ${c.new_contract} not running after 60 s`);
        await sleep(10);
      }
      const ms = performance.now() - t1 - GRACE_S * 1000;
      times.push(ms);
      log(dialect, `sample ${s + 1}: ${ms.toFixed(0)} ms beyond the grace`);
    }
  } finally {
    for (const ag of agents) ag.stop();
    await srv.stop('SIGTERM');
    await store.destroy();
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return {
    dialect,
    median: median(times),
    p90: pct(times, 0.9),
    max: Math.max(...times),
    min: Math.min(...times),
  };
}

const results = [];
for (const d of DIALECTS) results.push(await runDialect(d));

const cpu = cpus()[0]?.model ?? 'unknown CPU';
const out = [
  '<!-- market:begin (bench/market-preempt.mjs writes this section; keep others outside it) -->',
  '## Market preemption (bench/market-preempt.mjs)',
  '',
  `Run ${new Date().toISOString()} on ${availableParallelism()} cores (${cpu}), Node ${process.version}. ${MACHINES} machines, each held by a running bid, registered by ${Math.ceil(MACHINES / PER_AGENT)} simulated agents syncing every ${SYNC_MS} ms (a change reported at once); ${SAMPLES} on-demand creates, one at a time, each on a machine a bid holds, timed until the winner reads \`running\`, less the ${GRACE_S} s grace period the preempted bid gets. Target: 2 s or less.`,
  '',
  '| database | median | p90 | max | min |',
  '|---|---|---|---|---|',
  ...results.map((r) =>
    r.skipped
      ? `| ${r.dialect} | skipped: ${r.skipped} | | | |`
      : `| ${r.dialect} | ${r.median.toFixed(0)} ms | ${r.p90.toFixed(0)} ms | ${r.max.toFixed(0)} ms | ${r.min.toFixed(0)} ms |`,
  ),
  '<!-- market:end -->',
].join('\n');
console.log(out);
if (WRITE) {
  const file = path.join(ROOT, 'bench/RESULTS.md');
  const cur = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const re = /<!-- market:begin[\s\S]*?<!-- market:end -->/;
  writeFileSync(file, re.test(cur) ? cur.replace(re, out) : `${cur.trimEnd()}\n\n${out}\n`);
}
