// A fresh start of the default configuration, measured: `openrig serve` on a new data folder (a
// new SQLite database to migrate and a new secret key), one worker per core, from spawn to the
// first `/healthz` 200; then each process's idle RSS. Run on the build (`npm run build` first):
//
//   node bench/startup.mjs [rounds=9] [--workers N] [--pg URL-of-an-admin-database]
//
// Prints each round and the median, with the CPU time the processes spent until ready (on a
// busy machine the wall time mostly measures the others). `node -e 0` is measured too, as the floor a process start
// costs on this host. Measure on a quiet machine: the load average is printed with the figures.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { procCpuS, processTree, rssMb, scratchPgDatabase, sleep, startNode } from './bench-lib.mjs';

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args.splice(i, 2)[1] : undefined;
};
const workers = opt('--workers');
const pgAdmin = opt('--pg');
const rounds = Number(args[0] ?? 9);

const median = (xs) => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};

function nodeFloor() {
  const times = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    execFileSync(process.execPath, ['-e', '0']);
    times.push(performance.now() - t0);
  }
  return median(times);
}

async function round() {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'openrig-startup-'));
  const pg = pgAdmin ? await scratchPgDatabase(pgAdmin, `openrig_startup_${process.pid}`) : null;
  if (pg?.skip) throw new Error(pg.skip);
  try {
    const s = await startNode(
      [
        'bin/openrig.js',
        'serve',
        '--port',
        '0',
        '--data',
        dataDir,
        ...(pg ? ['--database-url', pg.url] : []),
        ...(workers ? ['--workers', workers] : []),
      ],
      { env: { OPENRIG_LOG_LEVEL: 'warn', OPENRIG_SECRET_KEY: '', DATABASE_URL: '' } },
    );
    // CPU seconds the processes spent to get there (less sensitive to a busy machine than time).
    const cpuS = processTree(s.child.pid).reduce((t, p) => t + procCpuS(p), 0);
    await sleep(1500);
    const rss = processTree(s.child.pid).map((p) => rssMb(p));
    await s.stop('SIGTERM');
    return { readyMs: s.readyMs, cpuS, rss };
  } finally {
    await pg?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const floor = nodeFloor();
const load = loadavg()
  .map((x) => x.toFixed(2))
  .join(' ');
const out = [];
for (let i = 0; i < rounds; i++) {
  const r = await round();
  out.push(r);
  console.log(
    `round ${i + 1}: ready ${r.readyMs.toFixed(0)} ms, ${(r.cpuS * 1000).toFixed(0)} ms of CPU; RSS ${r.rss.map((x) => x.toFixed(0)).join(' + ')} MB`,
  );
}
const maxRss = Math.max(...out.flatMap((r) => r.rss));
console.log(
  `median ready ${median(out.map((r) => r.readyMs)).toFixed(0)} ms (min ${Math.min(...out.map((r) => r.readyMs)).toFixed(0)}, max ${Math.max(...out.map((r) => r.readyMs)).toFixed(0)}) over ${rounds} fresh starts, ${(median(out.map((r) => r.cpuS)) * 1000).toFixed(0)} ms of CPU` +
    `${pgAdmin ? ' on PostgreSQL' : ' on SQLite'}; largest process ${maxRss.toFixed(0)} MB idle; ` +
    `node -e 0: ${floor.toFixed(0)} ms; load average ${load}`,
);
