#!/usr/bin/env node
// Gateway bench (docs/gateway.md): requests/s and MB/s through the gateway against a direct
// connection to the same app's port, in the same run. Starts `openrig serve` (SQLite, its default
// of one worker per core unless BENCH_WORKERS says otherwise), an agent (process runtime; the bench
// waits for its benchmarks at registration to be posted) and an instance running
// test/fixtures/gateway-app.mjs on a free port; then, with wrk, for each of
//   small: GET /hello (about 150 bytes of JSON)       -> requests/s
//   large: GET /bytes?n=BENCH_LARGE_BYTES (1 MiB)     -> MB/s
// one run directly at 127.0.0.1:PORT and one through http://SERVER/i/ID/PORT/ with the owner's
// key as Bearer. Prints a table and the ratio gateway/direct.
//
// Run on an otherwise idle machine, after `npm run build`: `node bench/gateway.mjs`. Writes the
// "Gateway" section of bench/RESULTS.md (BENCH_GATEWAY_WRITE=0: print only).
// Environment (optional): BENCH_DURATION_S (10), BENCH_CONNECTIONS (16), BENCH_WORKERS (serve's
// default), BENCH_LARGE_BYTES (1048576).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT, findWrk } from './bench-lib.mjs';

const env = process.env;
const DURATION = Number(env.BENCH_DURATION_S || 10);
const CONNECTIONS = Number(env.BENCH_CONNECTIONS || 16);
const WORKERS = env.BENCH_WORKERS ? Number(env.BENCH_WORKERS) : null;
const WRITE = (env.BENCH_GATEWAY_WRITE || '1') !== '0';
const LARGE = Number(env.BENCH_LARGE_BYTES || 1048576);
const BIN = path.join(ROOT, 'bin/openrig.js');
const ENV = {
  ...env,
  OPENRIG_SECRET_KEY: 'be'.repeat(32),
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
};
const log = (...a) => console.log(`[gateway bench ${new Date().toISOString().slice(11, 19)}]`, ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

function start(args, extraEnv = {}) {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...ENV, ...extraEnv }, detached: true });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  return { child, out: () => out };
}

async function waitFor(fn, what, ms = 60_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => null);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

function cli(args) {
  const r = spawnSync(process.execPath, [BIN, ...args], { env: ENV, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openrig ${args.join(' ')}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

async function api(url, key, method, p, body) {
  const res = await fetch(`${url}${p}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return res.json();
}

function wrk(url, headers = []) {
  const { path: bin } = findWrk();
  const args = ['-t', '2', '-c', String(CONNECTIONS), '-d', `${DURATION}s`];
  for (const h of headers) args.push('-H', h);
  const r = spawnSync(bin, [...args, url], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`wrk: ${r.stderr}`);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(r.stdout)?.[1]);
  const m = /Transfer\/sec:\s+([\d.]+)(\w+)/.exec(r.stdout);
  const unit = { B: 1 / 1e6, KB: 1024 / 1e6, MB: (1024 * 1024) / 1e6, GB: (1024 * 1024 * 1024) / 1e6 };
  const mbs = m ? Number(m[1]) * (unit[m[2]] ?? 1) : NaN;
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(r.stdout)?.[1] ?? '0';
  return { rps, mbs, errors: Number(errors) };
}

const dir = mkdtempSync(path.join(tmpdir(), 'openrig-gw-bench-'));
const procs = [];
try {
  const serve = start([
    'serve',
    '--port',
    '0',
    '--data',
    dir,
    ...(WORKERS ? ['--workers', String(WORKERS)] : []),
  ]);
  procs.push(serve);
  const url = await waitFor(
    async () => /(?:listening on|running at) (http:\/\/\S+)/.exec(serve.out())?.[1],
    'serve to listen',
  );
  const host = cli([
    'admin',
    'create-user',
    '--data',
    dir,
    '--email',
    'bench-host@example.com',
    '--email-verified',
  ]);
  const owner = cli([
    'admin',
    'create-user',
    '--data',
    dir,
    '--email',
    'bench-owner@example.com',
    '--email-verified',
    '--balance',
    '100',
  ]);
  const agent = start(
    [
      'agent',
      '--url',
      url,
      '--runtime',
      'process',
      '--gpus',
      'RTX 4090x1',
      '--price-gpu',
      '0.5',
      '--state-dir',
      path.join(dir, 'agent'),
      '--ssh-bind',
      '127.0.0.1',
    ],
    { OPENRIG_API_KEY: host.api_key, OPENRIG_LOG_LEVEL: 'warn' },
  );
  procs.push(agent);
  const { ed25519KeyPair } = await import(path.join(ROOT, 'dist/contract/ssh-keygen.js'));
  await api(url, owner.api_key, 'POST', '/api/v0/ssh/', { ssh_key: ed25519KeyPair().public });
  const offer = await waitFor(
    async () =>
      (await api(url, owner.api_key, 'POST', '/api/v0/bundles/', { gpu_name: { eq: 'RTX 4090' } }))
        .offers?.[0],
    'the offer',
  );
  // The agent benchmarks its machine after registering; the load must not share the cores with it.
  await waitFor(
    async () => {
      const rows = await api(url, owner.api_key, 'GET', '/api/v0/benchmarks');
      return Array.isArray(rows) && rows.some((b) => b.machine_id === offer.machine_id);
    },
    "the agent's benchmarks",
    180_000,
  );
  const port = await freePort();
  const created = await api(url, owner.api_key, 'PUT', `/api/v0/asks/${offer.id}/`, {
    client_id: 'me',
    image: 'ubuntu:22.04',
    disk: 5,
    onstart: `${process.execPath} ${path.join(ROOT, 'test/fixtures/gateway-app.mjs')} ${port}`,
    portal: [{ name: 'bench', port }],
  });
  const id = created.new_contract;
  await waitFor(
    async () =>
      (await api(url, owner.api_key, 'GET', `/api/v0/instances/${id}/`)).instances?.actual_status ===
      'running',
    `instance ${id} to run`,
  );
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/hello`)).ok, 'the app');
  const auth = [`Authorization: Bearer ${owner.api_key}`];
  const through = `${url}/i/${id}/${port}`;
  await waitFor(
    async () => (await fetch(`${through}/hello`, { headers: { authorization: auth[0].slice(15) } })).ok,
    'the gateway',
  );
  log(
    `server ${url} (${WORKERS ?? "serve's default"} worker(s)), instance ${id}, app port ${port}; ${DURATION} s per run, ${CONNECTIONS} connections`,
  );
  const rows = [];
  for (const [name, p] of [
    ['small GET /hello', '/hello'],
    [`large GET /bytes (${LARGE} B)`, `/bytes?n=${LARGE}`],
  ]) {
    const direct = wrk(`http://127.0.0.1:${port}${p}`);
    const gw = wrk(`${through}${p}`, auth);
    rows.push({ name, direct, gw });
    log(name, 'done');
  }
  const out = [
    '<!-- gateway:begin (bench/gateway.mjs writes this section; keep others outside it) -->',
    '## Gateway (bench/gateway.mjs)',
    '',
    `Run ${new Date().toISOString()} on ${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}. \`serve\` on SQLite with ${WORKERS ? `${WORKERS} worker(s)` : 'its default workers'}, a process-runtime agent and an instance running test/fixtures/gateway-app.mjs; wrk with 2 threads and ${CONNECTIONS} connections for ${DURATION} s per run, directly at the app's port and through \`/i/ID/PORT/\` with the owner's key, one after the other.`,
    '',
    '| case | direct req/s | gateway req/s | direct MB/s | gateway MB/s | gateway/direct (req/s) | non-2xx (gateway) |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${r.direct.rps.toFixed(0)} | ${r.gw.rps.toFixed(0)} | ${r.direct.mbs.toFixed(1)} | ${r.gw.mbs.toFixed(1)} | ${(r.gw.rps / r.direct.rps).toFixed(2)} | ${r.gw.errors} |`,
    ),
    '<!-- gateway:end -->',
  ].join('\n');
  console.log(`\n${out}`);
  if (WRITE) {
    const file = path.join(ROOT, 'bench/RESULTS.md');
    const cur = existsSync(file) ? readFileSync(file, 'utf8') : '';
    const re = /<!-- gateway:begin[\s\S]*?<!-- gateway:end -->/;
    writeFileSync(file, re.test(cur) ? cur.replace(re, out) : `${cur.trimEnd()}\n\n${out}\n`);
    log('wrote bench/RESULTS.md');
  }
} finally {
  for (const p of procs.reverse()) {
    try {
      process.kill(-p.child.pid, 'SIGTERM');
    } catch {
      /* gone */
    }
  }
  await sleep(1000);
  // The instance's supervisor outlives a stopped agent by design: end its group.
  spawnSync('sh', [
    '-c',
    `for f in ${path.join(dir, 'agent', 'instances')}/*/main.pid; do [ -f "$f" ] && kill -9 -"$(cat "$f")"; done`,
  ]);
  rmSync(dir, { recursive: true, force: true });
}
