// Helpers of bench/run.mjs: processes, load, memory, profiles.
import { performance } from 'node:perf_hooks';
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const live = new Set();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

/** Spawns `node ARGS` and resolves once it printed `listening on URL` and /healthz (or /) answers. */
export async function startNode(args, { env = {}, nodeArgs = [], probe = '/healthz' } = {}) {
  const t0 = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
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
    url ??= /listening on (http:\/\/\S+)/.exec(out)?.[1] ?? null;
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

/**
 * The server's own request-latency histogram for one route (openrig_http_request_duration_seconds
 * from /metrics, all statuses summed): cumulative counts by bucket bound in seconds. The time it
 * measures starts when the request is parsed and ends when the reply is written, so what a client
 * sees on top (socket queues, the kernel, CPU stolen from the machine) is the difference.
 */
export async function serverHistogram(url, method, route) {
  const text = await fetch(`${url}/metrics`).then((r) => r.text());
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

/** CPU seconds used so far by every PostgreSQL process on this machine (server and backends). */
export function postgresCpuS() {
  let s = 0;
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/comm`, 'utf8').trim() === 'postgres') s += procCpuS(d);
    } catch {
      /* exited meanwhile */
    }
  }
  return s;
}

/**
 * Where the CPU went, per request, between two snapshots: each server process (user space and
 * kernel), PostgreSQL's processes, and this process, the load generator. In microseconds.
 */
export function cpuSnapshot(pids) {
  const self = process.cpuUsage();
  return {
    servers: pids.map((p) => procCpu(p)),
    postgres: postgresCpuS(),
    loadgen: (self.user + self.system) / 1e6,
  };
}
export function cpuPerRequest(a, b, requests) {
  const us = (s) => (requests ? (1e6 * s) / requests : NaN);
  const user = b.servers.reduce((t, c, i) => t + c.user - a.servers[i].user, 0);
  const sys = b.servers.reduce((t, c, i) => t + c.sys - a.servers[i].sys, 0);
  return {
    serverUser: us(user),
    serverSys: us(sys),
    postgres: us(b.postgres - a.postgres),
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
 * Runs autocannon. `requests` rotate per connection via `next()` which returns
 * {method, path, headers, body}. Returns req/s, p50/p99 (ms), errors and status counts.
 */
export async function load({
  url,
  connections = 8,
  duration = 5,
  next,
  overallRate,
  pipelining = 1,
  warmup = 0,
  pids = [],
}) {
  // A warm-up with the same requests, not measured: the steady state of a long-running server
  // (optimised code, caches, sorted views of the offer index) rather than its first seconds.
  if (warmup > 0) await load({ url, connections, duration: warmup, next, overallRate, pipelining });
  const c0 = cpuTicks();
  const t0 = tcpRetransmits();
  const s0 = cpuSnapshot(pids);
  return new Promise((resolve, reject) => {
    const inst = autocannon(
      {
        url,
        connections,
        duration,
        pipelining,
        overallRate,
        requests: [
          {
            setupRequest: (req) => {
              const r = next();
              return {
                ...req,
                method: r.method,
                path: r.path,
                headers: { ...(r.headers ?? {}) },
                body: r.body,
              };
            },
          },
        ],
      },
      (err, res) => {
        if (err) return reject(err);
        const codes = res.statusCodeStats ?? {};
        const n5xx = Object.entries(codes)
          .filter(([c]) => Number(c) >= 500)
          .reduce((s, [, v]) => s + v.count, 0);
        const n2xx = Object.entries(codes)
          .filter(([c]) => Number(c) < 300)
          .reduce((s, [, v]) => s + v.count, 0);
        const c1 = cpuTicks();
        resolve({
          /** CPU per request (µs): the server processes `pids`, PostgreSQL, the load generator. */
          cpu: cpuPerRequest(s0, cpuSnapshot(pids), res.requests.total),
          /** Machine-wide CPU busy % during the run (server, database, load generator, others). */
          busyPct: (100 * (c1.busy - c0.busy)) / Math.max(1, c1.total - c0.total),
          /** Machine-wide CPU stolen by the hypervisor during the run, %. */
          stealPct: (100 * (c1.steal - c0.steal)) / Math.max(1, c1.total - c0.total),
          /** TCP retransmissions during the run, machine-wide (see tcpRetransmits). */
          retransmits: tcpRetransmits() - t0,
          // Completed requests over the run (the per-second average reads 0 when few complete).
          rps: res.requests.total / (res.duration || duration),
          total: res.requests.total,
          p50: res.latency.p50,
          p99: res.latency.p99,
          errors: res.errors + res.timeouts,
          non2xx: res.non2xx,
          n2xx,
          n5xx,
          codes: Object.fromEntries(Object.entries(codes).map(([c, v]) => [c, v.count])),
        });
      },
    );
    void inst;
  });
}

/**
 * Self time per function from a .cpuprofile (V8), top N, plus a breakdown by origin
 * (openrig, kysely, pg, better-sqlite3, fastify, node internals, GC/idle).
 */
export function summarizeProfile(dir, top = 12, window = null) {
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) return null;
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
  let selfUs = window ? count(window[0], window[1]) : null;
  if (!selfUs || selfUs.size === 0) selfUs = count(-Infinity, Infinity);
  let total = 0;
  const fns = new Map();
  const origins = new Map();
  for (const [id, us] of selfUs) {
    const n = byId.get(id);
    const cf = n.callFrame;
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
