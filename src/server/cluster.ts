// `openrig serve --workers N`: N processes (node:cluster) serving HTTP on one port, so the server
// uses more than the one core a Node.js process gives it.
// - The workers are forked first (cluster-fork.ts); then the primary migrates the database, runs
//   the background jobs (e-mail relay, heartbeat sweep, billing meter) once for all workers, and
//   serves no HTTP. Workers wake its relay over IPC after a commit that enqueued mail.
// - Each worker opens its own connections: on SQLite, its own writer and query-only reader on the
//   same WAL file (SQLite serialises the writes of all processes); on PostgreSQL, its own pool.
// - `/metrics` answered by any worker holds every worker's request counts: the primary gathers
//   each worker's registry and merges them (database-wide gauges taken once, not summed).
// - SIGTERM (or SIGINT) to the primary drains every worker (in-flight requests finish), then the
//   jobs stop (the relay's last pass flushes the outbox) and the primary exits 0. A worker that
//   dies while serving is replaced; one that dies before the cluster is ready fails the start.
import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { Config } from './config.js';
import { openStore } from './db/connection.js';
import { migrateToLatest } from './db/migrate.js';
import { makeDeps, type Deps } from './deps.js';
import { systemClock } from './clock.js';
import { startJobs } from './jobs/index.js';
import { serverLog } from './log.js';
import { onTermination, startServer } from './main.js';
import { forkWorker, type ForkedWorker } from './cluster-fork.js';

type Metrics = MetricObjectWithValues<MetricValue<string>>[];

type Message =
  | { type: 'openrig:start' }
  | { type: 'openrig:listening'; url: string }
  | { type: 'openrig:kick-outbox' }
  | { type: 'openrig:metrics-request'; id: number }
  | { type: 'openrig:metrics-collect'; id: number }
  | { type: 'openrig:metrics-part'; id: number; metrics: Metrics | null }
  | { type: 'openrig:metrics-text'; id: number; text: string | null };

const isMessage = (m: unknown): m is Message =>
  typeof m === 'object' && m !== null && typeof (m as { type?: unknown }).type === 'string';

export function isClusterWorker(): boolean {
  return cluster.isWorker;
}

/** How long the primary waits for the workers' metrics before answering with what it has. */
const METRICS_WAIT_MS = 5000;

/**
 * The primary: `n` workers, of which `forked` were forked already (prepareServe); their messages
 * held meanwhile are handled first, in order.
 */
export async function runPrimary(config: Config, n: number, forked: ForkedWorker[] = []): Promise<void> {
  const out = serverLog(config.logLevel, config.logFlushMs);
  const log = out.log;
  const store = openStore(config.databaseUrl);
  // The workers load their modules while the primary migrates; each opens the database only once
  // the migrations are done (it asks with openrig:start and waits for the answer).
  let migrated = false;
  const waitingToStart = new Set<Worker>();

  const workers = new Set<Worker>();
  let kick = () => {};
  let listening = 0;
  let url: string | null = null;
  let stopping = false;
  let failedExit = false;
  let ready = false;
  let startFailed: ((err: Error) => void) | null = null;
  const started = new Promise<void>((resolve, reject) => {
    startFailed = reject;
    const check = setInterval(() => {
      if (listening >= n) {
        clearInterval(check);
        ready = true;
        resolve();
      }
    }, 5);
  });

  // Metrics: one gathering per request from a worker, answered with every worker's registry.
  let nextId = 0;
  const gathering = new Map<number, { parts: Metrics[]; waiting: number; done: () => void }>();
  const gatherMetrics = async (): Promise<string | null> => {
    const id = ++nextId;
    const live = [...workers].filter((w) => w.isConnected());
    const parts: Metrics[] = [];
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, METRICS_WAIT_MS);
      gathering.set(id, {
        parts,
        waiting: live.length,
        done: () => {
          clearTimeout(timer);
          resolve();
        },
      });
      for (const w of live) send(w, { type: 'openrig:metrics-collect', id });
      if (live.length === 0) resolve();
    });
    gathering.delete(id);
    if (parts.length === 0) return null;
    return AggregatorRegistry.aggregate(parts).metrics();
  };

  const watch = (f: ForkedWorker) => {
    const w = f.worker;
    workers.add(w);
    const onMessage = (m: unknown) => {
      if (!isMessage(m)) return;
      if (m.type === 'openrig:start') {
        if (migrated) send(w, { type: 'openrig:start' });
        else waitingToStart.add(w);
      } else if (m.type === 'openrig:listening') {
        url = m.url;
        listening++;
      } else if (m.type === 'openrig:kick-outbox') kick();
      else if (m.type === 'openrig:metrics-request') {
        gatherMetrics().then(
          (text) => send(w, { type: 'openrig:metrics-text', id: m.id, text }),
          () => send(w, { type: 'openrig:metrics-text', id: m.id, text: null }),
        );
      } else if (m.type === 'openrig:metrics-part') {
        const g = gathering.get(m.id);
        if (!g) return;
        if (m.metrics) g.parts.push(m.metrics);
        if (--g.waiting <= 0) g.done();
      }
    };
    w.on('message', onMessage);
    for (const m of f.takeHeld()) onMessage(m);
    const onExit = (code: number | null, signal: string | null) => {
      workers.delete(w);
      if (stopping) {
        if (code !== 0) failedExit = true;
        return;
      }
      if (!ready) {
        startFailed?.(new Error(`a worker exited during start-up (code ${code}, signal ${signal})`));
        return;
      }
      log.error({ pid: w.process.pid, code, signal }, 'worker exited; starting another');
      watch(forkWorker());
    };
    // A worker forked early may have exited before this: its exit is handled now.
    if (w.isDead()) onExit(w.process.exitCode, w.process.signalCode);
    else w.on('exit', onExit);
  };
  for (const f of forked) watch(f);
  for (let i = forked.length; i < n; i++) watch(forkWorker());
  let deps: Deps;
  try {
    await migrateToLatest(store);
    migrated = true;
    for (const w of waitingToStart) send(w, { type: 'openrig:start' });
    waitingToStart.clear();
    deps = makeDeps({ store, clock: systemClock, config, log });
    deps.jobs.push(...startJobs(deps));
    kick = () => deps.kickOutbox();
  } catch (err) {
    stopping = true;
    for (const w of workers) w.process.kill('SIGTERM');
    await store.destroy().catch(() => {});
    await out.close();
    throw err;
  }

  const stop = async (signal: string) => {
    stopping = true;
    log.info({ signal }, 'shutting down');
    const exits = [...workers].map((w) => new Promise<void>((resolve) => w.once('exit', () => resolve())));
    // Each worker drains: stops accepting, finishes its in-flight requests, writes its logs.
    for (const w of workers) w.process.kill('SIGTERM');
    await Promise.all(exits);
    for (const j of deps.jobs) await j.stop(); // the relay's last pass flushes the outbox
    await store.destroy();
    await out.close();
    if (failedExit) throw new Error('a worker failed to shut down cleanly');
  };

  try {
    await started;
  } catch (err) {
    stopping = true;
    for (const w of workers) w.process.kill('SIGTERM');
    await stop('start-up failure').catch(() => {});
    throw err;
  }
  onTermination(stop);
  process.stdout.write(`openrig listening on ${url} (${n} workers)\n`);
}

export async function runWorker(config: Config): Promise<void> {
  // The database is opened once the primary has migrated it.
  await new Promise<void>((resolve) => {
    const onMessage = (m: unknown) => {
      if (isMessage(m) && m.type === 'openrig:start') {
        process.off('message', onMessage);
        resolve();
      }
    };
    process.on('message', onMessage);
    send(process, { type: 'openrig:start' });
  });
  const server = await startServer(config, {
    jobs: false,
    migrate: false,
    kickOutbox: () => send(process, { type: 'openrig:kick-outbox' }),
  });
  const { deps } = server;
  const pending = new Map<number, (text: string | null) => void>();
  let nextId = 0;
  deps.clusterMetrics = () =>
    new Promise<string | null>((resolve) => {
      const id = ++nextId;
      const timer = setTimeout(() => {
        pending.delete(id);
        resolve(null);
      }, METRICS_WAIT_MS * 2);
      pending.set(id, (text) => {
        clearTimeout(timer);
        pending.delete(id);
        resolve(text);
      });
      send(process, { type: 'openrig:metrics-request', id });
    });
  process.on('message', (m: unknown) => {
    if (!isMessage(m)) return;
    if (m.type === 'openrig:metrics-collect') {
      deps.metrics.registry.getMetricsAsJSON().then(
        (metrics) => send(process, { type: 'openrig:metrics-part', id: m.id, metrics }),
        () => send(process, { type: 'openrig:metrics-part', id: m.id, metrics: null }),
      );
    } else if (m.type === 'openrig:metrics-text') pending.get(m.id)?.(m.text);
  });
  onTermination((signal) => {
    deps.log.info({ signal }, 'shutting down');
    return server.close();
  });
  send(process, { type: 'openrig:listening', url: server.url });
}

/** Sends over the IPC channel; a closed channel (the other side is exiting) drops the message. */
function send(to: { send?: (m: Message) => unknown; connected?: boolean } | Worker, m: Message): void {
  try {
    if ('isConnected' in to ? to.isConnected() : to.connected !== false) to.send?.(m);
  } catch {
    /* the channel closed meanwhile */
  }
}
