#!/usr/bin/env node
// `npm run bench`: seeds a fresh database per dialect (SQLite, then PostgreSQL when reachable),
// starts `node bin/openrig.js serve` with its default settings (log level, workers, pools) except
// per-account rate limits, drives it over loopback with wrk, and writes its section of
// bench/RESULTS.md. Every req/s figure is compared with a bare Fastify hello world measured in
// alternating rounds of the same run (baseline, openrig, baseline, openrig, …; medians), so the
// machine's other work weighs on both alike. The authenticated instance GET is also set against a
// database ceiling (bench/ceiling.mjs: openrig's own reads of a poll and nothing else). Each scenario reports
// the load generator's CPU, the server's CPU per request (all its processes) and how busy the
// machine was. Loads at a fixed rate (polling during heartbeats, the agents' syncs) are wrk too,
// paced as Poisson streams; creates are 1,000 concurrent fetches. A CPU profile (node --cpu-prof,
// every process) of the polling scenario is always taken, and of search when its target is missed.
//
// Environment (all optional): BENCH_DURATION (s per round, 5), BENCH_CONNECTIONS (8,32),
// BENCH_ROUNDS (alternating rounds per scenario, 3), BENCH_DIALECTS (sqlite,postgres),
// BENCH_PG_URL (postgres://postgres@127.0.0.1:5432/postgres: a fresh database is created there
// and dropped after), BENCH_OFFERS (50000), BENCH_INSTANCES (10000), BENCH_HB_MACHINES (20000),
// BENCH_MACHINES_PER_AGENT (10), BENCH_PROFILE (1: profile; 0: don't), BENCH_WARMUP (s of the same
// requests before each scenario's rounds, 2).
import { performance } from 'node:perf_hooks';
import { mkdtempSync, rmSync, readFileSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir, cpus, totalmem, availableParallelism } from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import {
  ROOT,
  scratchPgDatabase,
  startNode,
  wrkLoad,
  wrkInfo,
  processTree,
  rssMb,
  sleep,
  summarizeProfile,
  monoUs,
  cpuTicks,
  procCpuS,
  serverHistogram,
  histogramDelta,
  BENCH_METRICS_TOKEN,
} from './bench-lib.mjs';
import { seed } from './bench-seed.mjs';

const env = process.env;
const D = Number(env.BENCH_DURATION || 5);
const CONNS = (env.BENCH_CONNECTIONS || '8,32').split(',').map(Number);
const ROUNDS = Number(env.BENCH_ROUNDS || 3);
const DIALECTS = (env.BENCH_DIALECTS || 'sqlite,postgres').split(',').map((s) => s.trim());
const PG_ADMIN = env.BENCH_PG_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const OFFERS = Number(env.BENCH_OFFERS || 50_000);
const INSTANCES = Number(env.BENCH_INSTANCES || 10_000);
const HB_MACHINES = Number(env.BENCH_HB_MACHINES || 20_000);
const PER_AGENT = Number(env.BENCH_MACHINES_PER_AGENT || 10);
const PROFILE = env.BENCH_PROFILE !== '0';
const WARM = Number(env.BENCH_WARMUP ?? 2);
const HEARTBEAT_S = 10;

const log = (...a) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}]`, ...a);
const f = (n, d = 1) => (n === undefined || n === null || Number.isNaN(n) ? '–' : Number(n).toFixed(d));
// The defaults (log level info, one worker per core, pool sizes), except that per-account rate
// limits are off: a load test is a handful of accounts sending thousands of requests a second,
// which the limits exist to refuse.
const SERVE_ENV = (dataDir) => ({
  OPENRIG_LOG_LEVEL: '',
  OPENRIG_SECRET_KEY: 'be'.repeat(32),
  OPENRIG_MAIL_OUTBOX: path.join(dataDir, 'mail.jsonl'),
  OPENRIG_HEARTBEAT_S: String(HEARTBEAT_S),
  OPENRIG_RATE_LIMITS: 'off',
  // /metrics on the API port needs a token (the server-side latency histograms are read there).
  OPENRIG_METRICS_TOKEN: BENCH_METRICS_TOKEN,
});

let serveCount = 0;
/** `serve` with its logs in a file of the data directory, as a service manager would keep them. */
function serve(dbUrl, dataDir, nodeArgs = [], args = []) {
  return startNode(
    ['bin/openrig.js', 'serve', '--port', '0', '--data', dataDir, '--database-url', dbUrl, ...args],
    { env: SERVE_ENV(dataDir), nodeArgs, logFile: path.join(dataDir, `serve-${++serveCount}.log`) },
  );
}

const median = (xs) => {
  const v = xs.filter((x) => typeof x === 'number' && !Number.isNaN(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};

/** The median round of several wrk results (each figure its own median), counts summed. */
function medianOf(rs) {
  const m = (k) => median(rs.map((r) => r[k]));
  const cpu = (k) => median(rs.map((r) => r.cpu?.[k]));
  const sum = (k) => rs.reduce((t, r) => t + (r[k] ?? 0), 0);
  return {
    rounds: rs.length,
    rps: m('rps'),
    p50: m('p50'),
    p99: m('p99'),
    busyPct: m('busyPct'),
    stealPct: m('stealPct'),
    loadgenCores: m('loadgenCores'),
    cpu: {
      serverUser: cpu('serverUser'),
      serverSys: cpu('serverSys'),
      postgres: cpu('postgres'),
      loadgen: cpu('loadgen'),
    },
    total: sum('total'),
    errors: sum('errors'),
    non2xx: sum('non2xx'),
    n2xx: sum('n2xx'),
    n5xx: sum('n5xx'),
  };
}

/**
 * Alternating rounds of two loads at the same connection count: `a` (the baseline, or one
 * configuration), then `b`, ROUNDS times, after a warm-up of each. Returns the median of each
 * side and the median of the per-round ratios b/a.
 */
async function alternate(a, b, connections) {
  const run = (x, duration, warm = 0) =>
    wrkLoad({ url: x.url, connections, duration, warmup: warm, next: x.next, pids: x.pids });
  if (WARM > 0) {
    await run(a, WARM);
    await run(b, WARM);
  }
  const ra = [];
  const rb = [];
  for (let i = 0; i < ROUNDS; i++) {
    ra.push(await run(a, D));
    rb.push(await run(b, D));
  }
  return {
    connections,
    a: medianOf(ra),
    b: medianOf(rb),
    ratio: median(rb.map((r, i) => r.rps / ra[i].rps)),
    ratios: rb.map((r, i) => r.rps / ra[i].rps),
  };
}

const bearer = (key) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
const rotate = (list) => {
  let i = 0;
  return () => list[i++ % list.length];
};

function pollNext(seeded) {
  const next = rotate(seeded.polls);
  return () => {
    const p = next();
    return {
      method: 'GET',
      path: `/api/v0/instances/${p.id}/`,
      headers: { authorization: `Bearer ${p.key}` },
    };
  };
}

const SEARCH_GPUS = ['RTX 4090', 'RTX 3090', 'A100 SXM4', 'H100 SXM', 'RTX A6000', 'L40S'];
function searchNext(seeded) {
  let i = 0;
  return () => {
    const u = seeded.renters[i % seeded.renters.length];
    const body = {
      gpu_name: { eq: SEARCH_GPUS[i % SEARCH_GPUS.length] },
      num_gpus: { eq: [1, 2, 4, 8][i % 4] },
      verified: { eq: true },
      rentable: { eq: true },
      direct_port_count: { gte: 10 },
      order: [['dlperf_per_dphtotal', 'desc']],
      type: 'on-demand',
      limit: 64,
    };
    i++;
    return { method: 'POST', path: '/api/v0/bundles/', headers: bearer(u.key), body: JSON.stringify(body) };
  };
}

/** An OpenSSH ed25519 public key line from node:crypto (ssh2's generator drops a leading zero byte now and then). */
function ed25519Line() {
  const raw = generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const str = (b) => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
  return `ssh-ed25519 ${Buffer.concat([str(Buffer.from('ssh-ed25519')), str(raw)]).toString('base64')} bench@openrig`;
}

async function creates(url, seeded) {
  // 1,000 concurrent creates over 100 offers from 100 users: the database must let exactly one
  // create per offer win (one live instance per machine); every loser gets a clean 4xx.
  const reqs = [];
  for (let i = 0; i < 1000; i++) {
    const u = seeded.creators[i % seeded.creators.length];
    const offer = seeded.createOffers[(i * 37) % seeded.createOffers.length];
    reqs.push({ u, offer });
  }
  const t0 = performance.now();
  const replies = await Promise.all(
    reqs.map(({ u, offer }) =>
      fetch(`${url}/api/v0/asks/${offer}/`, {
        method: 'PUT',
        headers: bearer(u.key),
        body: JSON.stringify({ client_id: 'me', image: 'ubuntu:22.04', disk: 10, runtype: 'ssh' }),
      })
        .then(async (r) => ({ status: r.status, body: await r.text() }))
        .catch((e) => ({ status: 0, body: String(e) })),
    ),
  );
  const ms = performance.now() - t0;
  const count = (p) => replies.filter((r) => p(r.status)).length;
  const codes = {};
  for (const r of replies) codes[r.status] = (codes[r.status] ?? 0) + 1;
  const ok = count((s) => s >= 200 && s < 300);
  const n4xx = count((s) => s >= 400 && s < 500);
  const n5xx = count((s) => s >= 500 || s === 0);
  const errorBodiesOk = replies
    .filter((r) => r.status >= 400)
    .every((r) => {
      try {
        const b = JSON.parse(r.body);
        return typeof b.error === 'string' && typeof b.msg === 'string';
      } catch {
        return false;
      }
    });
  const sample4xx = replies.find((r) => r.status >= 400 && r.status < 500)?.body?.slice(0, 160);
  return { ms, ok, n4xx, n5xx, codes, errorBodiesOk, sample4xx };
}

async function registerAgents(url, seeded) {
  const agents = [];
  const n = Math.ceil(HB_MACHINES / PER_AGENT);
  const t0 = performance.now();
  for (let a = 0; a < n; a += 20) {
    const batch = [];
    for (let j = a; j < Math.min(n, a + 20); j++) {
      const host = seeded.hosts[j % seeded.hosts.length];
      const body = {
        agent_uid: `bench-agent-${j}`,
        version: 'bench',
        runtime: 'process',
        machines: Array.from({ length: PER_AGENT }, (_, slot) => ({
          slot,
          hostname: `agent${j}-${slot}`,
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
      };
      batch.push(
        fetch(`${url}/api/agent/v1/register`, {
          method: 'POST',
          headers: bearer(host.key),
          body: JSON.stringify(body),
        }).then(async (r) => {
          const j2 = await r.json().catch(() => ({}));
          if (!r.ok) throw new Error(`register: ${r.status} ${JSON.stringify(j2).slice(0, 200)}`);
          return {
            key: host.key,
            agent_uid: body.agent_uid,
            machine_ids: j2.machines.map((m) => m.machine_id),
          };
        }),
      );
    }
    agents.push(...(await Promise.all(batch)));
  }
  return { agents, seconds: (performance.now() - t0) / 1000 };
}

async function heartbeats(url, seeded) {
  const pollRate = Math.min(1000, seeded.polls.length / HEARTBEAT_S);
  const POLL_ROUTE = ['GET', '/api/v0/instances/:id'];
  // Paced by wrk (a Poisson stream at the rate): autocannon's own rate limit sends each
  // connection's share of a second in one burst at the start of the second, and its latency
  // figures then measure how long the server takes to drain 1,000 requests at once.
  const pollAtRate = () =>
    wrkLoad({ url, connections: 32, duration: D * 2, rate: pollRate, next: pollNext(seeded) });
  // The control, in the same run: the same polls at the same rate before any agent exists, so a
  // tail that both show is the machine's, not the heartbeats'.
  let before = await serverHistogram(url, ...POLL_ROUTE);
  const control = await pollAtRate();
  control.server = histogramDelta(before, await serverHistogram(url, ...POLL_ROUTE));
  let reg;
  try {
    reg = await registerAgents(url, seeded);
  } catch (err) {
    return { skipped: `agent registration failed: ${err.message}`, control };
  }
  const nextAgent = rotate(reg.agents);
  const syncRate = reg.agents.length / HEARTBEAT_S;
  before = await serverHistogram(url, ...POLL_ROUTE);
  const [hb, poll] = await Promise.all([
    wrkLoad({
      url,
      connections: 16,
      duration: D * 2,
      rate: syncRate,
      distinct: reg.agents.length,
      next: () => {
        const a = nextAgent();
        return {
          method: 'POST',
          path: '/api/agent/v1/sync',
          headers: bearer(a.key),
          body: JSON.stringify({ agent_uid: a.agent_uid, machine_ids: a.machine_ids, instances: [] }),
        };
      },
    }),
    pollAtRate(),
  ]);
  poll.server = histogramDelta(before, await serverHistogram(url, ...POLL_ROUTE));
  return {
    hb,
    poll,
    control,
    agents: reg.agents.length,
    machines: reg.agents.length * PER_AGENT,
    registerS: reg.seconds,
    syncRate,
    pollRate,
  };
}

async function maintenance(url, seeded) {
  const rows = [];
  // A quick measure in the seeded database (50,000 offers): one batch over the maintenance
  // host's 100 machines with one live instance each (the schema allows one per machine). The
  // 1,000-affected-instance scenario is bench/maintenance-batch.mjs's (run after this script).
  const body = {
    machine_ids: seeded.maintMachines,
    sdate: Math.floor(Date.now() / 1000) + 86400,
    duration: 2,
    maintenance_category: 'gpu',
  };
  const t0 = performance.now();
  const r = await fetch(`${url}/api/v0/machines/maintenances/batch`, {
    method: 'POST',
    headers: bearer(seeded.maintHost.key),
    body: JSON.stringify(body),
  });
  const ms = performance.now() - t0;
  const text = await r.text();
  let sent = null;
  try {
    sent = JSON.parse(text).results?.reduce((s, e) => s + (e.notifications_sent ?? 0), 0) ?? null;
  } catch {
    /* not JSON */
  }
  rows.push({
    scenario: 'batch of 100 machines (100 affected instances)',
    ms,
    status: r.status,
    sent,
    note: r.ok ? '' : text.slice(0, 160),
  });
  return rows;
}

async function profileScenario(dbUrl, dataDir, scenario, seeded, connections) {
  const dir = mkdtempSync(path.join(tmpdir(), 'openrig-prof-'));
  const s = await serve(dbUrl, dataDir, ['--cpu-prof', '--cpu-prof-dir', dir]);
  // As in the measured run: the offer index's background load and the idle-time schema
  // compilation finish first, so the profile holds the scenario's steady state only.
  await sleep(3000);
  const next = scenario === 'search' ? searchNext(seeded) : pollNext(seeded);
  const pids = [s.child.pid];
  if (WARM > 0) await wrkLoad({ url: s.url, connections, duration: WARM, next, pids });
  const from = monoUs();
  const measured = await wrkLoad({ url: s.url, connections, duration: D, next, pids });
  const to = monoUs();
  await s.stop('SIGTERM');
  const p = summarizeProfile(dir, 15, [from, to]);
  if (p) p.rps = measured.rps;
  rmSync(dir, { recursive: true, force: true });
  return p;
}

async function profileStartup(dbUrl, dataDir) {
  const dir = mkdtempSync(path.join(tmpdir(), 'openrig-prof-'));
  const s = await serve(dbUrl, dataDir, ['--cpu-prof', '--cpu-prof-dir', dir]);
  await s.stop('SIGTERM');
  const p = summarizeProfile(dir, 12);
  rmSync(dir, { recursive: true, force: true });
  return p;
}

/** RSS of a server's processes: the primary, each worker, and all together (MB). */
function treeRss(pid) {
  const each = processTree(pid).map((p) => {
    try {
      return rssMb(p);
    } catch {
      return 0;
    }
  });
  return {
    primary: each[0],
    workers: each.slice(1),
    total: each.reduce((t, x) => t + x, 0),
    max: Math.max(...each),
  };
}

async function runDialect(dialect, hello) {
  const dataDir = mkdtempSync(path.join(tmpdir(), `openrig-bench-${dialect}-`));
  let dbUrl;
  let drop = async () => {};
  if (dialect === 'sqlite') dbUrl = `sqlite:${path.join(dataDir, 'openrig.db')}`;
  else {
    const fresh = await scratchPgDatabase(PG_ADMIN, `openrig_bench_${Date.now() % 100000}`);
    if (fresh.skip) return { dialect, skipped: fresh.skip };
    dbUrl = fresh.url;
    drop = fresh.drop;
  }
  const out = { dialect, pairs: {}, notes: [] };
  try {
    log(`${dialect}: seeding ${OFFERS} offers, ${INSTANCES} instances`);
    const seeded = await seed(dbUrl, {
      offers: OFFERS,
      instances: INSTANCES,
      log: (m) => log(`${dialect}: ${m}`),
    });
    out.seedS = seeded.seconds;

    const s = await serve(dbUrl, dataDir);
    await sleep(2000);
    out.readyMs = s.readyMs;
    out.idleRss = treeRss(s.child.pid);
    out.workers = out.idleRss.workers.length;
    log(
      `${dialect}: ready in ${f(s.readyMs, 0)} ms, ${out.workers} workers, idle RSS ${f(out.idleRss.total)} MB in all`,
    );

    // SSH keys for the creators (creating an instance needs one), checked one by one.
    for (const u of seeded.creators) {
      const r = await fetch(`${s.url}/api/v0/ssh/`, {
        method: 'POST',
        headers: bearer(u.key),
        body: JSON.stringify({ ssh_key: ed25519Line() }),
      });
      if (!r.ok) throw new Error(`registering an SSH key: ${r.status} ${(await r.text()).slice(0, 200)}`);
    }

    const openrig = (next) => ({ url: s.url, pids: [s.child.pid], next });
    const scenarios = [
      ['healthz', () => ({ method: 'GET', path: '/healthz' })],
      ['poll', pollNext(seeded)],
      ['search', searchNext(seeded)],
      // The official CLI's first call, made with no key before it parses its arguments.
      ['gpunames', () => ({ method: 'GET', path: '/api/v0/gpu_names/unique/' }), [Math.min(...CONNS)]],
    ];
    for (const [name, next, conns = CONNS] of scenarios) {
      out.pairs[name] = {};
      for (const c of conns) {
        log(`${dialect}: ${name} at ${c} connections, alternating with the baseline`);
        out.pairs[name][c] = await alternate(hello, openrig(next), c);
        const p = out.pairs[name][c];
        log(
          `${dialect}: ${name}@${c}: ${f(p.b.rps, 0)} req/s vs baseline ${f(p.a.rps, 0)} (${f(100 * p.ratio, 0)} %), p99 ${f(p.b.p99, 2)} ms`,
        );
      }
    }

    // The database ceiling (bench/ceiling.mjs): a poll's own reads per request through
    // openrig's store in as many workers, nothing else, against the same baseline at the highest connection count.
    {
      const cMax = Math.max(...CONNS);
      log(`${dialect}: the database ceiling at ${cMax} connections, alternating with the baseline`);
      const ceiling = await startNode(['bench/ceiling.mjs', dbUrl, String(out.workers)], { probe: '/' });
      try {
        out.ceiling = await alternate(
          hello,
          { url: ceiling.url, pids: [ceiling.child.pid], next: () => ({ method: 'GET', path: '/' }) },
          cMax,
        );
      } finally {
        await ceiling.stop();
      }
      log(
        `${dialect}: ceiling ${f(out.ceiling.b.rps, 0)} req/s (${f(100 * out.ceiling.ratio, 0)} % of the baseline)`,
      );
      // The floors beneath it on PostgreSQL: one shared trivial round trip per request, and one
      // shared NOTIFY barrier per request (bench/ceiling.mjs says what each stands for).
      if (dialect === 'postgres') {
        out.floors = {};
        for (const floor of ['round-trip', 'notify']) {
          log(`${dialect}: the ${floor} floor at ${cMax} connections, alternating with the baseline`);
          const p = await startNode(['bench/ceiling.mjs', dbUrl, String(out.workers), floor], { probe: '/' });
          try {
            out.floors[floor] = await alternate(
              hello,
              { url: p.url, pids: [p.child.pid], next: () => ({ method: 'GET', path: '/' }) },
              cMax,
            );
          } finally {
            await p.stop();
          }
          log(`${dialect}: ${floor} floor ${f(100 * out.floors[floor].ratio, 0)} % of the baseline`);
        }
      }
    }

    // One worker against the default (one per core), the same polling, alternating rounds.
    if (out.workers > 1) {
      log(`${dialect}: polling, --workers 1 against the default ${out.workers} workers`);
      const one = await serve(dbUrl, dataDir, [], ['--workers', '1']);
      await sleep(2000);
      const cMax = Math.max(...CONNS);
      out.workersPair = await alternate(
        { url: one.url, pids: [one.child.pid], next: pollNext(seeded) },
        openrig(pollNext(seeded)),
        cMax,
      );
      await one.stop();
    }

    log(`${dialect}: 1,000 concurrent creates on 100 offers`);
    out.creates = await creates(s.url, seeded);
    log(`${dialect}: heartbeats of ${HB_MACHINES} machines while clients poll`);
    out.hb = await heartbeats(s.url, seeded);
    log(`${dialect}: maintenance`);
    out.maint = await maintenance(s.url, seeded);
    out.afterRss = treeRss(s.child.pid);

    if (dialect === 'postgres') {
      // Two single-process nodes on one database (as on two hosts), against one of them alone.
      log(`${dialect}: one node vs two nodes, polling`);
      await s.stop();
      const n1 = await serve(dbUrl, dataDir, [], ['--workers', '1']);
      const n2 = await serve(dbUrl, dataDir, [], ['--workers', '1']);
      const run = (x, warm = 0) =>
        wrkLoad({
          url: x.url,
          connections: 8,
          duration: D,
          warmup: warm,
          next: pollNext(seeded),
          pids: [x.child.pid],
        });
      const one = await run(n1, WARM);
      if (WARM > 0)
        await Promise.all(
          [n1, n2].map((x) =>
            wrkLoad({ url: x.url, connections: 8, duration: WARM, next: pollNext(seeded) }),
          ),
        );
      const c0 = cpuTicks();
      const p0 = [procCpuS(n1.child.pid), procCpuS(n2.child.pid)];
      const [a, b] = await Promise.all([run(n1), run(n2)]);
      const c1 = cpuTicks();
      const p1 = [procCpuS(n1.child.pid), procCpuS(n2.child.pid)];
      out.twoNodes = {
        one,
        cpu: {
          busyPct: (100 * (c1.busy - c0.busy)) / (c1.total - c0.total),
          node1: p1[0] - p0[0],
          node2: p1[1] - p0[1],
          loadgenCores: a.loadgenCores + b.loadgenCores,
          seconds: D,
        },
        two: {
          rps: a.rps + b.rps,
          p99: Math.max(a.p99, b.p99),
          errors: a.errors + b.errors,
          n5xx: a.n5xx + b.n5xx,
        },
      };
      await n1.stop();
      await n2.stop();
    } else await s.stop();

    if (PROFILE) {
      const cMax = Math.max(...CONNS);
      log(`${dialect}: profiling polling (default serve, ${cMax} connections)`);
      out.pollProfile = await profileScenario(dbUrl, dataDir, 'poll', seeded, cMax);
      const search8 = out.pairs.search[Math.min(...CONNS)];
      if (!(search8.b.p99 <= 15))
        out.searchProfile = await profileScenario(dbUrl, dataDir, 'search', seeded, Math.min(...CONNS));
      if (out.readyMs > 1000) out.startProfile = await profileStartup(dbUrl, dataDir);
    }
  } catch (err) {
    out.error = err.stack ?? String(err);
    log(`${dialect}: failed: ${out.error}`);
  } finally {
    await drop().catch(() => {});
    rmSync(dataDir, { recursive: true, force: true });
  }
  return out;
}

const verdict = (ok) => (ok ? '**met**' : '**missed**');

function loadRow(name, r, target) {
  if (!r) return `| ${name} | – | – | – | – | – | not run | ${target} |`;
  return `| ${name} | ${f(r.rps, 0)} | ${f(r.p50)} | ${f(r.p99)} | ${r.errors + r.n5xx} (${r.non2xx} non-2xx) | ${f(r.busyPct, 0)} % |`;
}

const SCENARIO_NAMES = {
  healthz: '`GET /healthz` (the stack, no authentication, no database)',
  poll: '`GET /api/v0/instances/{id}/`, authenticated',
  search: '`POST /api/v0/bundles/` (5 filters, order, limit 64)',
  gpunames: "`GET /api/v0/gpu_names/unique/` (no key: the official CLI's first call)",
};

/** One row per scenario and connection count: openrig against the baseline of the same rounds. */
function pairsTable(r) {
  const pg = r.dialect === 'postgres';
  const L = [
    `| scenario | conns | req/s | baseline req/s | % of baseline (rounds) | p50 ms | p99 ms | errors, non-2xx | server CPU µs/req (baseline) |${pg ? ' PostgreSQL µs/req |' : ''} wrk cores (baseline) | machine busy | target | result |`,
    `|---|---|---|---|---|---|---|---|---|${pg ? '---|' : ''}---|---|---|---|`,
  ];
  const cMin = Math.min(...CONNS);
  const cMax = Math.max(...CONNS);
  for (const [name, byC] of Object.entries(r.pairs ?? {})) {
    for (const [c, p] of Object.entries(byC)) {
      const b = p.b;
      const srv = (x) => x.cpu.serverUser + x.cpu.serverSys;
      let target = '';
      let result = '';
      if (name === 'poll' && Number(c) === cMax) {
        target = '≥ 50 % of baseline';
        result = verdict(p.ratio >= 0.5);
      } else if (name === 'search' && Number(c) === cMin) {
        target = 'p99 ≤ 15 ms';
        result = `${verdict(b.p99 <= 15)}${b.n2xx === 0 ? ' (no 2xx reply!)' : ''}`;
      }
      L.push(
        `| ${SCENARIO_NAMES[name]} | ${c} | ${f(b.rps, 0)} | ${f(p.a.rps, 0)} | **${f(100 * p.ratio, 0)} %** (${p.ratios.map((x) => f(100 * x, 0)).join(', ')}) | ${f(b.p50, 2)} | ${f(b.p99, 2)} | ${b.errors}, ${b.non2xx} | ${f(srv(b))} (${f(srv(p.a))}) |${pg ? ` ${f(b.cpu.postgres)} |` : ''} ${f(b.loadgenCores, 2)} (${f(p.a.loadgenCores, 2)}) | ${f(b.busyPct, 0)} % | ${target} | ${result} |`,
      );
    }
  }
  return L.join('\n') + '\n';
}

function profileText(p, what) {
  if (!p) return '';
  const lines = [
    `\nProfile of the ${what} scenario (\`node --cpu-prof\` in each of its ${p.processes} processes, ${f(p.totalMs / 1000)} s of busy samples and ${f(p.idleMs / 1000)} s idle while the load ran; ${f(p.rps, 0)} req/s under the profiler), self time as a share of the busy time, by origin:`,
    '',
  ];
  lines.push(
    p.origins
      .slice(0, 8)
      .map((o) => `${o.name} ${f(o.pct)} %`)
      .join(' · '),
  );
  lines.push('', 'Top functions by self time:', '');
  for (const fn of p.functions) lines.push(`- ${f(fn.pct)} % \`${fn.name}\``);
  return lines.join('\n') + '\n';
}

function section(machine, wrk, results) {
  const L = [];
  L.push('<!-- platform:begin (bench/run.mjs writes this section; keep others outside it) -->');
  L.push('## Quick path, search, creates, heartbeats, workers, startup (bench/run.mjs)', '');
  L.push(
    `Run ${new Date().toISOString()} on ${machine}. \`serve\` with its defaults (log level \`info\`: one access-log line per request; one worker per core) except per-account rate limits, off (\`OPENRIG_RATE_LIMITS=off\`: a load test is a few accounts sending thousands of requests a second); its log goes to a file. Load generator: wrk ${wrk.version} (\`${wrk.path}\`, ${wrk.how}), 2 threads, on the same machine over loopback; the polling and agent syncs at a fixed rate during heartbeats are wrk too, paced as Poisson streams (Lua \`delay\`). Each req/s scenario alternates ${ROUNDS} rounds of ${D} s with the bare Fastify hello world baseline (own process, \`bench/hello.mjs\`) at the same connection count, after ${WARM} s of warm-up of each; figures are medians of the rounds, the ratio the median of the per-round ratios (each round's listed).`,
    '',
    `The machine is shared: before the run, over 2 s of this script idling, its cores were ${f(machineLoad.busyPct, 0)} % busy with other work (${f(machineLoad.stealPct, 1)} % stolen by the hypervisor); a fixed loop of 10⁸ integer steps took ${f(machineLoad.loopMs, 0)} ms on one core. "Machine busy" is all cores during the round (/proc/stat): server, database, load generator and everyone else.`,
    '',
  );
  for (const r of results) {
    L.push(`### ${r.dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`, '');
    if (r.skipped) {
      L.push(`Skipped: ${r.skipped}`, '');
      continue;
    }
    if (r.error && !r.pairs?.poll) {
      L.push('Failed before measuring:', '', '```', r.error.slice(0, 1500), '```', '');
      continue;
    }
    L.push(
      `Seeded ${OFFERS} offers, ${INSTANCES} live instances and ${1000 + 50 + 102} users in ${f(r.seedS)} s. \`serve\` ran ${r.workers} workers.`,
      '',
    );
    L.push(pairsTable(r));
    if (r.ceiling) {
      const c = r.ceiling;
      const poll = r.pairs?.poll?.[c.connections];
      const srv = (x) => x.cpu.serverUser + x.cpu.serverSys;
      L.push(
        `Database ceiling at ${c.connections} connections (\`bench/ceiling.mjs\`: bare Fastify in ${r.workers} workers making the reads an authenticated instance GET with an API key makes, its own statements through its own store (two in one read transaction on SQLite, one on PostgreSQL, concurrent ones sharing a round trip there, as in \`serve\`), rotating over every live instance, and nothing else), alternating rounds with the baseline: ${f(c.b.rps, 0)} req/s against ${f(c.a.rps, 0)}, **${f(100 * c.ratio, 0)} % of the baseline** (rounds ${c.ratios.map((x) => f(100 * x, 0)).join(', ')}; server CPU ${f(srv(c.b))} µs/req${r.dialect === 'postgres' ? `, PostgreSQL ${f(c.b.cpu.postgres)} µs/req` : ''}, wrk ${f(c.b.loadgenCores, 2)} cores).${poll ? ` The instance GET above is ${f((100 * poll.b.rps) / c.b.rps, 0)} % of this ceiling.` : ''}`,
        '',
      );
    }
    if (r.floors) {
      const srv = (x) => x.cpu.serverUser + x.cpu.serverSys;
      const line = (name, what) => {
        const c = r.floors[name];
        return `- **${name}** (${what}): ${f(c.b.rps, 0)} req/s against ${f(c.a.rps, 0)}, **${f(100 * c.ratio, 0)} % of the baseline** (rounds ${c.ratios.map((x) => f(100 * x, 0)).join(', ')}; server CPU ${f(srv(c.b))} µs/req, PostgreSQL ${f(c.b.cpu.postgres)} µs/req).`;
      };
      L.push(
        `Floors beneath the ceiling, the same server and load (\`bench/ceiling.mjs\` with a third argument): what a design that asks PostgreSQL something on every request can reach here at best.`,
        '',
        line(
          'round-trip',
          'one trivial statement per request, concurrent ones sharing a round trip as the polls do',
        ),
        line(
          'notify',
          'one shared NOTIFY awaited on a listening connection per request: the freshness barrier a per-process cache emptied by notifications would need to keep revocation immediate, its hits free',
        ),
        '',
      );
    }
    if (r.workersPair) {
      const w = r.workersPair;
      const srv = (x) => x.cpu.serverUser + x.cpu.serverSys;
      L.push(
        `Workers, polling at ${w.connections} connections, alternating rounds: \`--workers 1\` ${f(w.a.rps, 0)} req/s (server CPU ${f(srv(w.a))} µs/req, machine ${f(w.a.busyPct, 0)} % busy, wrk ${f(w.a.loadgenCores, 2)} cores), \`--workers ${r.workers}\` ${f(w.b.rps, 0)} req/s (server CPU ${f(srv(w.b))} µs/req, machine ${f(w.b.busyPct, 0)} % busy, wrk ${f(w.b.loadgenCores, 2)} cores): **×${f(w.ratio, 2)}** (rounds ${w.ratios.map((x) => f(x, 2)).join(', ')}).`,
        '',
      );
    }
    L.push(
      '| scenario | req/s | p50 ms | p99 ms | errors | CPU busy | target | result |',
      '|---|---|---|---|---|---|---|---|',
    );
    if (r.hb?.poll) {
      // Client-side (wrk) and server-side (the server's /metrics histogram: parse to reply
      // written) latency of the same polls, with the machine's stolen CPU and TCP retransmissions.
      const timed = (x) =>
        x.server?.n
          ? ` (server: p99 ≤ ${f(x.server.quantileMs, 1)} ms, ${f(x.server.withinPct, 2)} % within 50 ms; ${f(x.stealPct, 1)} % CPU stolen, ${x.retransmits} TCP retransmits)`
          : '';
      L.push(
        `${loadRow(`polling at ${f(r.hb.pollRate, 0)}/s during heartbeats${timed(r.hb.poll)}`, r.hb.poll)} client p99 ≤ 50 ms | ${verdict(r.hb.poll.p99 <= 50 && r.hb.poll.n5xx === 0)} |`,
      );
      if (r.hb.control)
        L.push(
          `${loadRow(`control: the same polling, no heartbeats${timed(r.hb.control)}`, r.hb.control)} (same run) | – |`,
        );
      L.push(
        `${loadRow(`agent sync, ${r.hb.agents} agents × ${PER_AGENT} machines every ${HEARTBEAT_S} s (${f(r.hb.syncRate, 0)}/s)`, r.hb.hb)} (load) | ${r.hb.hb.n5xx === 0 && r.hb.hb.n2xx > 0 ? 'ok' : 'errors'} |`,
      );
    } else if (r.hb)
      L.push(`| heartbeats | – | – | – | – | – | client p99 ≤ 50 ms | not run: ${r.hb.skipped} |`);
    L.push('');
    const c = r.creates;
    if (c) {
      L.push(
        `1,000 concurrent creates on 100 offers: ${c.ok} created, ${c.n4xx} 4xx, ${c.n5xx} 5xx/failed in ${f(c.ms, 0)} ms (status counts ${JSON.stringify(c.codes)}); error bodies {error, msg}: ${c.errorBodiesOk ? 'yes' : 'NO'}. Target exactly 100, the rest clean 4xx, no 5xx: ${verdict(c.ok === 100 && c.n5xx === 0 && c.ok + c.n4xx === 1000 && c.errorBodiesOk)}.${c.ok !== 100 && c.sample4xx ? ` A 4xx reply: \`${c.sample4xx}\`` : ''}`,
        '',
      );
    }
    for (const m of r.maint ?? []) {
      const ok = m.ms !== undefined && m.ms <= 250 && (m.status === undefined || m.status < 300);
      L.push(
        `Maintenance, ${m.scenario}: ${m.ms !== undefined ? `${f(m.ms, 0)} ms` : '–'}${m.status ? `, HTTP ${m.status}` : ''}${m.sent != null ? `, ${m.sent} client e-mails queued` : ''}. Target ≤ 250 ms: ${verdict(ok)}.${m.note ? ` ${m.note}` : ''}`,
        '',
      );
    }
    const rss = r.idleRss;
    L.push(
      `\`serve\` ready (spawn to the banner and /healthz 200, every worker listening) in **${f(r.readyMs, 0)} ms** (target ≤ 1,000: ${verdict(r.readyMs <= 1000)}); idle RSS: primary ${f(rss.primary)} MB, workers ${rss.workers.map((x) => f(x)).join(' and ')} MB, **${f(rss.total)} MB in all** (target ≤ 150 per process: ${verdict(rss.max <= 150)}); after the scenarios ${f(r.afterRss?.total)} MB in all.`,
      '',
    );
    if (r.twoNodes) {
      const ratio = r.twoNodes.two.rps / r.twoNodes.one.rps;
      const cpu = r.twoNodes.cpu;
      L.push(
        `Two single-process nodes (\`--workers 1\`) on one PostgreSQL, polling at 8 connections each: one node ${f(r.twoNodes.one.rps, 0)} req/s, two nodes ${f(r.twoNodes.two.rps, 0)} req/s (p99 ${f(r.twoNodes.two.p99)} ms): **×${f(ratio, 2)}** (target ≥ ×1.6: ${verdict(ratio >= 1.6)}); the cores were ${f(cpu.busyPct, 0)} % busy, CPU seconds over ${cpu.seconds} s: node 1 ${f(cpu.node1, 2)}, node 2 ${f(cpu.node2, 2)}, wrk ${f(cpu.loadgenCores * cpu.seconds, 2)}, the rest PostgreSQL and other processes.`,
        '',
      );
    }
    L.push(profileText(r.pollProfile, `polling (${Math.max(...CONNS)} connections)`));
    L.push(profileText(r.searchProfile, 'search'));
    L.push(
      profileText(r.startProfile, 'start-up (spawn to ready, then SIGTERM)').replace(
        ' while the load ran',
        '',
      ),
    );
    if (r.error) L.push('A later step failed:', '', '```', r.error.slice(0, 1500), '```', '');
  }
  L.push('<!-- platform:end -->');
  return L.join('\n');
}

function writeResults(text) {
  const file = path.join(ROOT, 'bench/RESULTS.md');
  const begin = '<!-- platform:begin';
  const end = '<!-- platform:end -->';
  let doc = existsSync(file)
    ? readFileSync(file, 'utf8')
    : '# Benchmark results\n\nWritten by `npm run bench`. Each section belongs to the script that writes it.\n\n';
  const i = doc.indexOf(begin);
  const j = doc.indexOf(end);
  if (i >= 0 && j > i) doc = doc.slice(0, i) + text + doc.slice(j + end.length);
  else doc = doc.trimEnd() + '\n\n' + text + '\n';
  writeFileSync(file, doc);
  return file;
}

const machineLoad = {};

/**
 * The machine before the run: how busy its cores were over 2 s of doing nothing here (other
 * processes, CPU stolen by the hypervisor), and how long a fixed loop of integer arithmetic takes
 * on one core. The baseline tells this run's ratios apart from the machine; the loop tells runs on
 * the same virtual machine apart when its host lends it more or less of a core.
 */
async function machineState() {
  const c0 = cpuTicks();
  await sleep(2000);
  const c1 = cpuTicks();
  const total = Math.max(1, c1.total - c0.total);
  const t0 = performance.now();
  let x = 0;
  for (let i = 0; i < 1e8; i++) x = (x + i * 7) % 1000003;
  const loopMs = performance.now() - t0;
  return {
    busyPct: (100 * (c1.busy - c0.busy)) / total,
    stealPct: (100 * (c1.steal - c0.steal)) / total,
    loopMs,
    x,
  };
}

async function main() {
  const machine = `${availableParallelism()} cores (\`nproc\`; ${cpus()[0]?.model ?? 'unknown CPU'}), ${f(totalmem() / 2 ** 30)} GiB memory, Node ${process.version}, ${process.platform}`;
  log(machine);
  const wrk = wrkInfo();
  log(`load generator: wrk ${wrk.version} at ${wrk.path} (${wrk.how})`);
  Object.assign(machineLoad, await machineState());
  log(
    `machine before the run: ${f(machineLoad.busyPct, 0)} % busy, ${f(machineLoad.stealPct, 1)} % stolen, fixed loop ${f(machineLoad.loopMs, 0)} ms`,
  );
  // The baseline runs for the whole run, idle between its rounds.
  const helloProc = await startNode(['bench/hello.mjs'], { probe: '/' });
  const hello = {
    url: helloProc.url,
    pids: [helloProc.child.pid],
    next: () => ({ method: 'GET', path: '/' }),
  };
  const results = [];
  try {
    for (const d of DIALECTS) results.push(await runDialect(d, hello));
  } finally {
    await helloProc.stop();
  }
  const file = writeResults(section(machine, wrk, results));
  log(`wrote ${path.relative(ROOT, file)}`);
  // The maintenance developer's scenarios write their own sections of RESULTS.md.
  for (const f2 of readdirSync(path.join(ROOT, 'bench'))
    .filter((n) => /^maintenance-.*\.mjs$/.test(n))
    .sort()) {
    log(`running bench/${f2}`);
    const code = await new Promise((resolve) =>
      spawn(process.execPath, [path.join('bench', f2)], { cwd: ROOT, stdio: 'inherit', env: process.env }).on(
        'exit',
        resolve,
      ),
    );
    if (code !== 0) log(`bench/${f2} exited with ${code}`);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
