// Helpers of the bench scripts: built modules, scratch databases, processes, load, memory, profiles.
import { performance } from 'node:perf_hooks';
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Imports a built module of the package (`dist/…`: run `npm run build` first). */
export const dist = (p) => import(pathToFileURL(path.join(ROOT, 'dist', p)).href);

/**
 * A fresh PostgreSQL database named `PREFIX_PID` on the server of `adminUrl`: `{url, drop}`, or
 * `{skip: reason}` when that server cannot be reached or refuses.
 */
export async function scratchPgDatabase(adminUrl, prefix) {
  const name = `${prefix}_${process.pid}`;
  const c = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 });
  try {
    await c.connect();
    await c.query(`create database ${name}`);
  } catch (err) {
    return { skip: `PostgreSQL at ${adminUrl.replace(/\/\/[^@]*@/, '//')} unreachable: ${err.message}` };
  } finally {
    await c.end().catch(() => {});
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    async drop() {
      const d = new pg.Client({ connectionString: adminUrl });
      await d.connect();
      await d.query(`drop database if exists ${name} with (force)`);
      await d.end();
    },
  };
}

const live = new Set();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

/**
 * Spawns `node ARGS` and resolves once it printed `listening on URL` and /healthz (or /) answers.
 * With `logFile`, its standard output goes to that file, as under a service manager, instead of a
 * pipe this process would have to read (a server logging every request writes megabytes a second).
 */
export async function startNode(args, { env = {}, nodeArgs = [], probe = '/healthz', logFile = null } = {}) {
  const t0 = performance.now();
  const fd = logFile ? openSync(logFile, 'a') : null;
  const child = spawn(process.execPath, [...nodeArgs, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', fd ?? 'pipe', 'pipe'],
  });
  if (fd !== null) closeSync(fd);
  live.add(child);
  let out = '';
  let err = '';
  // Only the last 64 KB of each stream is kept: a server logging every request writes hundreds
  // of megabytes over a run, and gathering them would load this process, the load generator's.
  const keep = (s, d) => (s.length > 65536 ? s.slice(-32768) : s) + d;
  child.stdout?.on('data', (d) => (out = keep(out, d)));
  child.stderr.on('data', (d) => (err = keep(err, d)));
  const exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    }),
  );
  let url = null;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`process exited early: ${err.slice(-2000)} ${out.slice(-500)}`);
    const text = logFile ? readFileSync(logFile, 'utf8').slice(-65536) : out;
    url ??= /listening on (http:\/\/\S+)/.exec(text)?.[1] ?? null;
    if (url) {
      const ok = await fetch(url + probe).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
    }
    if (performance.now() - t0 > 30_000) throw new Error(`not ready after 30 s: ${err.slice(-2000)}`);
    await sleep(5);
  }
  const readyMs = performance.now() - t0;
  return {
    child,
    url,
    readyMs,
    stderr: () => err,
    async stop(signal = 'SIGTERM') {
      child.kill(signal);
      await exited;
    },
    exited,
  };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Machine-wide CPU jiffies (busy, total, steal) from /proc/stat. Steal is time the hypervisor
 * gave this virtual machine's CPUs to someone else: every process here stood still meanwhile.
 */
export function cpuTicks() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = f[3] + (f[4] ?? 0);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total, steal: f[7] ?? 0 };
}

/**
 * TCP segments the kernel retransmitted so far, machine-wide (/proc/net/snmp RetransSegs). Over
 * loopback nothing is lost, so each one is a timer that fired before an acknowledgement came back:
 * a request that waited for it waited at least the 200 ms minimum retransmission timeout.
 */
export function tcpRetransmits() {
  const lines = readFileSync('/proc/net/snmp', 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('Tcp:'));
  const [names, values] = lines.map((l) => l.trim().split(/\s+/));
  const i = names?.indexOf('RetransSegs') ?? -1;
  return i > 0 ? Number(values[i]) : NaN;
}

/** The bench's servers run with this OPENRIG_METRICS_TOKEN. */
export const BENCH_METRICS_TOKEN = 'bench-metrics-token';

/**
 * The server's own request-latency histogram for one route (openrig_http_request_duration_seconds
 * from /metrics, all statuses summed): cumulative counts by bucket bound in seconds. The time it
 * measures starts when the request is parsed and ends when the reply is written, so what a client
 * sees on top (socket queues, the kernel, CPU stolen from the machine) is the difference.
 */
export async function serverHistogram(url, method, route) {
  const text = await fetch(`${url}/metrics`, {
    headers: { authorization: `Bearer ${BENCH_METRICS_TOKEN}` },
  }).then((r) => r.text());
  const out = new Map();
  const re = /^openrig_http_request_duration_seconds_bucket\{([^}]*)\} (\S+)$/;
  for (const line of text.split('\n')) {
    const m = re.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (labels.method !== method || labels.route !== route) continue;
    const le = labels.le === '+Inf' ? Infinity : Number(labels.le);
    out.set(le, (out.get(le) ?? 0) + Number(m[2]));
  }
  return out;
}

/**
 * From two histogram snapshots: requests in between, the bucket bound (ms) the q-quantile falls
 * under, and the share answered within `withinS` seconds (a bucket bound).
 */
export function histogramDelta(before, after, q = 0.99, withinS = 0.05) {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const at = (le) => (after.get(le) ?? 0) - (before.get(le) ?? 0);
  const n = at(Infinity);
  const bound = bounds.find((le) => at(le) >= q * n) ?? Infinity;
  return { n, quantileMs: bound * 1000, withinPct: n ? (100 * at(withinS)) / n : NaN };
}

/** CPU seconds used so far by a process, in user space and in the kernel (Linux /proc). */
export function procCpu(pid) {
  const parts = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return { user: Number(parts[11]) / 100, sys: Number(parts[12]) / 100 }; // clock ticks, USER_HZ = 100
}

/** CPU seconds (user + system) used so far by a process. */
export function procCpuS(pid) {
  const c = procCpu(pid);
  return c.user + c.sys;
}

/**
 * CPU seconds used so far by each PostgreSQL process on this machine (server and backends), by
 * pid. Compared with postgresCpuDelta: a backend that exits between two readings (a pool closing
 * its connections) takes its whole CPU time with it, which a plain sum would count as negative.
 */
export function postgresCpuS() {
  const byPid = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/comm`, 'utf8').trim() === 'postgres') byPid.set(d, procCpuS(d));
    } catch {
      /* exited meanwhile */
    }
  }
  return byPid;
}

/**
 * PostgreSQL CPU seconds between two postgresCpuS readings: what each process still running used
 * since the first (all of it for a process started since). A process that exited meanwhile is
 * left out, so the figure is a lower bound, never negative.
 */
export function postgresCpuDelta(a, b) {
  let s = 0;
  for (const [pid, cpu] of b) s += cpu - (a.get(pid) ?? 0);
  return s;
}

/**
 * Where the CPU went, per request, between two snapshots ({servers, postgres, loadgen}, seconds):
 * each server process (user space and kernel), PostgreSQL's processes, the load generator. In
 * microseconds.
 */
export function cpuPerRequest(a, b, requests) {
  const us = (s) => (requests ? (1e6 * s) / requests : NaN);
  const user = b.servers.reduce((t, c, i) => t + c.user - a.servers[i].user, 0);
  const sys = b.servers.reduce((t, c, i) => t + c.sys - a.servers[i].sys, 0);
  return {
    serverUser: us(user),
    serverSys: us(sys),
    postgres: us(postgresCpuDelta(a.postgres, b.postgres)),
    loadgen: us(b.loadgen - a.loadgen),
  };
}

/** Monotonic clock in microseconds (the clock of V8's .cpuprofile timestamps). */
export const monoUs = () => Number(process.hrtime.bigint() / 1000n);

/** Resident set size of a process, MB (Linux /proc). */
export function rssMb(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/**
 * Self time per function from a .cpuprofile (V8), top N, plus a breakdown by origin
 * (openrig, kysely, pg, better-sqlite3, fastify, node internals, GC/idle).
 */
export function summarizeProfile(dir, top = 12, window = null) {
  // Every process's profile (a cluster's primary and workers each write one), added up.
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  if (files.length === 0) return null;
  const selfUs = new Map();
  for (const file of files) {
    const prof = JSON.parse(readFileSync(path.join(dir, file), 'utf8'));
    const byId = new Map(prof.nodes.map((n) => [n.id, n]));
    // Only the samples taken while the load ran (V8's profile clock and process.hrtime are both
    // the monotonic clock), so start-up (module loading, schema compilation) does not count.
    const count = (from, to) => {
      const m = new Map();
      let t = prof.startTime;
      for (let i = 0; i < prof.samples.length; i++) {
        const dt = prof.timeDeltas[i] ?? 0;
        t += dt;
        if (t >= from && t <= to) m.set(prof.samples[i], (m.get(prof.samples[i]) ?? 0) + dt);
      }
      return m;
    };
    let own = window ? count(window[0], window[1]) : null;
    if (!own || own.size === 0) own = count(-Infinity, Infinity);
    for (const [id, us] of own) {
      const cf = byId.get(id).callFrame;
      const key = JSON.stringify([cf.functionName, cf.url, cf.lineNumber]);
      const e = selfUs.get(key) ?? { cf, us: 0 };
      e.us += us;
      selfUs.set(key, e);
    }
  }
  // Percentages are of the time the processes were busy: idle time (a cluster's primary is
  // nearly all idle) is reported on its own.
  let total = 0;
  let idle = 0;
  const fns = new Map();
  const origins = new Map();
  for (const { cf, us } of selfUs.values()) {
    if (cf.functionName === '(idle)') {
      idle += us;
      continue;
    }
    total += us;
    const where = cf.url ? cf.url.replace(/^file:\/\//, '').replace(ROOT + '/', '') : '';
    const name = `${cf.functionName || '(anonymous)'} ${where ? `${where}:${cf.lineNumber + 1}` : ''}`.trim();
    fns.set(name, (fns.get(name) ?? 0) + us);
    origins.set(origin(cf), (origins.get(origin(cf)) ?? 0) + us);
  }
  const pct = (us) => (total ? (100 * us) / total : 0);
  const sortDesc = (m) => [...m.entries()].sort((a, b) => b[1] - a[1]);
  return {
    totalMs: total / 1000,
    idleMs: idle / 1000,
    processes: files.length,
    functions: sortDesc(fns)
      .slice(0, top)
      .map(([name, us]) => ({ name, pct: pct(us) })),
    origins: sortDesc(origins).map(([name, us]) => ({ name, pct: pct(us) })),
  };
}

function origin(cf) {
  const u = cf.url || '';
  if (cf.functionName === '(idle)') return 'idle';
  if (cf.functionName === '(garbage collector)') return 'GC';
  if (cf.functionName === '(program)') return 'V8/native (program)';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(u);
  if (m) return m[1];
  if (u.startsWith('node:') || (!u.includes('/') && u)) return 'node internals';
  if (u.includes('/dist/')) return 'openrig (dist/)';
  if (!u) return 'native';
  return u;
}

/**
 * The load generator for req/s scenarios: Debian's `wrk` (C, event-driven; a small fraction of
 * the CPU a Node.js generator takes for the same load, which matters on a machine whose cores the
 * server shares). Found on PATH or at /usr/bin/wrk; when missing, installed with apt-get (Debian
 * package `wrk`). Returns {path, version, how}.
 */
export function findWrk() {
  const probe = (p) => {
    const r = spawnSync(p, ['-v'], { encoding: 'utf8' });
    const text = `${r.stdout ?? ''}${r.stderr ?? ''}`;
    return r.error ? null : (/wrk (\S+)/.exec(text)?.[1] ?? 'unknown');
  };
  for (const p of ['wrk', '/usr/bin/wrk']) {
    const v = probe(p);
    if (v) return { path: p, version: v, how: 'found on this machine' };
  }
  const apt = spawnSync(
    'sh',
    ['-c', 'apt-get install -y wrk || (apt-get update && apt-get install -y wrk)'],
    {
      stdio: 'inherit',
    },
  );
  const v = apt.status === 0 ? probe('/usr/bin/wrk') : null;
  if (!v) throw new Error('wrk is not installed and `apt-get install wrk` failed');
  return { path: '/usr/bin/wrk', version: v, how: 'installed by this run with apt-get (Debian package wrk)' };
}

const luaStr = (s) => `"${String(s).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;

/**
 * A wrk script: the requests `next()` gives (up to `count` distinct ones, pre-formatted), sent in
 * turn by every connection; on exit it prints one JSON line with the totals and latency
 * percentiles (µs). With `meanDelayMs`, each connection waits a random time (exponential, that
 * mean) after each reply before its next request: requests arrive as from many independent
 * clients (a Poisson stream) at about connections / mean delay a second, instead of as fast as
 * replies come.
 */
function wrkScript(next, count, meanDelayMs = 0) {
  const reqs = [];
  for (let i = 0; i < count; i++) {
    const r = next();
    const headers = Object.entries(r.headers ?? {})
      .map(([k, v]) => `[${luaStr(k)}]=${luaStr(v)}`)
      .join(',');
    reqs.push(
      `wrk.format(${luaStr(r.method)},${luaStr(r.path)},{${headers}},${r.body ? luaStr(r.body) : 'nil'})`,
    );
  }
  return `local reqs = nil
local i = 0
init = function(args)
  reqs = {${reqs.join(',\n')}}
  i = math.random(#reqs) - 1
end
request = function()
  i = i % #reqs + 1
  return reqs[i]
end
${meanDelayMs > 0 ? `delay = function()\n  return -math.log(1 - math.random()) * ${meanDelayMs}\nend\n` : ''}done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%f}\\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end
`;
}

/** CPU seconds of this process's waited-for children so far (/proc/self/stat cutime + cstime). */
function childrenCpuS() {
  const parts = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(parts[13]) + Number(parts[14])) / 100;
}

/** A process and every process below it (cluster workers), from /proc. */
export function processTree(pid) {
  const kids = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      if (!kids.has(ppid)) kids.set(ppid, []);
      kids.get(ppid).push(Number(d));
    } catch {
      /* exited meanwhile */
    }
  }
  const out = [];
  const walk = (p) => {
    out.push(p);
    for (const k of kids.get(p) ?? []) walk(k);
  };
  walk(pid);
  return out;
}

/** CPU seconds (user, kernel) of a set of processes; ones that exited count as 0. */
function treeCpu(pids) {
  let user = 0;
  let sys = 0;
  for (const p of pids) {
    try {
      const c = procCpu(p);
      user += c.user;
      sys += c.sys;
    } catch {
      /* exited */
    }
  }
  return { user, sys };
}

let wrkBin = null;
export function wrkInfo() {
  wrkBin ??= findWrk();
  return wrkBin;
}

/**
 * Runs wrk for `duration` s with `connections` connections (2 threads) over the requests `next()`
 * gives. `pids` are the server's root processes: CPU is counted over each and its children.
 * With `rate` (req/s in all), requests are paced as a Poisson stream of about that rate (see
 * wrkScript) instead of sent as fast as replies come.
 * Returns req/s, p50/p99 (ms), errors, CPU per request by process, how busy the machine was.
 */
export async function wrkLoad({
  url,
  connections = 8,
  duration = 5,
  next,
  distinct = 2000,
  warmup = 0,
  pids = [],
  rate = 0,
}) {
  const { path: bin } = wrkInfo();
  const dir = mkdtempSync(path.join(tmpdir(), 'openrig-wrk-'));
  const script = path.join(dir, 'requests.lua');
  writeFileSync(script, wrkScript(next, distinct, rate > 0 ? (connections * 1000) / rate : 0));
  const run = (secs) =>
    new Promise((resolve, reject) => {
      const threads = Math.min(2, connections);
      const child = spawn(
        bin,
        ['-t', String(threads), '-c', String(connections), '-d', `${secs}s`, '--latency', '-s', script, url],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      child.on('error', reject);
      child.on('exit', (code) => {
        const m = /WRKJSON (\{.*\})/.exec(out);
        if (code !== 0 || !m)
          return reject(new Error(`wrk exited ${code}: ${err.slice(-500)} ${out.slice(-500)}`));
        resolve(JSON.parse(m[1]));
      });
    });
  try {
    if (warmup > 0) await run(warmup);
    const tree = pids.flatMap((p) => processTree(p));
    const c0 = cpuTicks();
    const t0 = tcpRetransmits();
    const s0 = { servers: [treeCpu(tree)], postgres: postgresCpuS(), loadgen: childrenCpuS() };
    const w = await run(duration);
    const s1 = { servers: [treeCpu(tree)], postgres: postgresCpuS(), loadgen: childrenCpuS() };
    const c1 = cpuTicks();
    const total = w.requests;
    const secs = w.duration_us / 1e6;
    const errors = w.connect + w.read + w.write + w.timeout;
    return {
      generator: 'wrk',
      connections,
      cpu: cpuPerRequest(s0, s1, total),
      /** Seconds the load generator's CPU ran during the scenario, over its duration (cores). */
      loadgenCores: (s1.loadgen - s0.loadgen) / secs,
      busyPct: (100 * (c1.busy - c0.busy)) / Math.max(1, c1.total - c0.total),
      stealPct: (100 * (c1.steal - c0.steal)) / Math.max(1, c1.total - c0.total),
      retransmits: tcpRetransmits() - t0,
      rps: total / secs,
      total,
      p50: w.p50 / 1000,
      p90: w.p90 / 1000,
      p99: w.p99 / 1000,
      max: w.max / 1000,
      errors,
      non2xx: w.status,
      n2xx: total - w.status,
      // wrk counts replies outside 2xx/3xx without telling 4xx from 5xx: all of them count here.
      n5xx: w.status,
      codes: {},
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
