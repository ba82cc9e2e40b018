// `openrig serve --workers N`: N processes (node:cluster) serving HTTP on one port, so the server
// uses more than the one core a Node.js process gives it.
// - The workers are forked first (cluster-fork.ts); then the primary migrates the database, and
//   once every worker listens runs the background jobs (e-mail relay, heartbeat sweep, billing
//   meter) once for all workers; it serves no HTTP. Workers wake its relay over IPC after a commit that enqueued mail,
//   and on SQLite wake each other's held agent waits through it (agent-gateway.wake.ts).
// - Each worker opens its own connections: on SQLite, its own writer and query-only reader on the
//   same WAL file (SQLite serialises the writes of all processes); on PostgreSQL, its own pool.
// - `/metrics` answered by any worker holds every worker's request counts: the primary gathers
//   each worker's registry and merges them (database-wide gauges taken once, not summed).
// - SIGTERM (or SIGINT) to the primary drains every worker (in-flight requests finish), then the
//   jobs stop (the relay's last pass flushes the outbox) and the primary exits 0. A worker that
//   dies while serving is replaced. Any failure before every worker listens (a worker's or the
//   primary's) fails the start: every worker is ended, the jobs never run, and `serve` exits 1
//   with the reason, once.
// - Start-up: the primary loads only what it needs to migrate (the store, the migrations, the
//   log); the server's modules (deps, jobs, metrics) once every worker listens and the banner is
//   out. While the workers start, each on a core of its own, the primary takes as little CPU as it
//   can from them; each worker compiles its schemas ahead only then (openrig:ready).
import cluster, { type Worker } from 'node:cluster';
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import type { Config } from './config.js';
import { openStore, type Store } from './db/connection.js';
import { migrateToLatest } from './db/migrate.js';
import type { Deps } from './deps.types.js';
import { serverLog, type ServerLog } from './log.js';
import { endWorkers, forkWorker, START_FAILED, type ForkedWorker } from './cluster-fork.js';
import { onTermination } from './termination.js';

type Metrics = MetricObjectWithValues<MetricValue<string>>[];

type Message =
  | { type: 'openrig:start' }
  | { type: 'openrig:listening'; url: string }
  | { type: 'openrig:ready' }
  | { type: typeof START_FAILED; message: string }
  | { type: 'openrig:kick-outbox' }
  | { type: 'openrig:wake-agents'; ids: number[] }
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

/** How long after a worker's exit during start-up its reported reason may still arrive. */
const EXIT_REASON_WAIT_MS = 200;

/**
 * The primary: `n` workers, of which `forked` were forked already (prepareServe); their messages
 * held meanwhile are handled first, in order. The start fails, with every worker ended and no
 * background job run, when anything fails before all `n` workers listen: the primary's own
 * start-up, or any worker's (its reported reason is the error, else how it exited).
 */
export async function runPrimary(config: Config, n: number, forked: ForkedWorker[] = []): Promise<void> {
  const workers = new Set<Worker>(forked.map((f) => f.worker));
  let out: ServerLog | null = null;
  let store: Store | null = null;
  let deps: Deps | null = null;
  let log: Deps['log'] | null = null;
  // The workers load their modules while the primary migrates; each opens the database only once
  // the migrations are done (it asks with openrig:start and waits for the answer).
  let migrated = false;
  const waitingToStart = new Set<Worker>();

  // Kicks that come before the relay runs are kept, and wake it once it does.
  let kickPending = false;
  let kick: () => void = () => {
    kickPending = true;
  };
  let listening = 0;
  let url: string | null = null;
  let stopping = false;
  let failedExit = false;
  let ready = false;
  /** The banner is out: every worker listens and the jobs run (workers are told openrig:ready). */
  let announced = false;
  let failure: Error | null = null;
  let settle!: { resolve: () => void; reject: (err: Error) => void };
  const started = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
  started.catch(() => {}); // awaited after the migrations; a failure meanwhile waits for that
  const failStart = (err: Error) => {
    if (ready || failure) return;
    failure = err;
    settle.reject(err);
  };

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
    // A CommonJS package: loaded with import(), the bundle gives its exports as `default` alone.
    const prom = await import('prom-client');
    const { AggregatorRegistry } = (prom as unknown as { default?: typeof prom }).default ?? prom;
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
        if (listening >= n && !failure && !ready) {
          ready = true;
          settle.resolve();
        } else if (announced) send(w, { type: 'openrig:ready' }); // a replacement
      } else if (m.type === START_FAILED) failStart(new Error(m.message));
      else if (m.type === 'openrig:kick-outbox') kick();
      // A worker queued something for these machines (SQLite: no database notifications): the
      // other workers wake the waits their agents hold there.
      else if (m.type === 'openrig:wake-agents') {
        for (const other of workers) if (other !== w) send(other, m);
      } else if (m.type === 'openrig:metrics-request') {
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
        // Its reason, sent just before it exited, may still be on its way.
        const reason = new Error(`a worker exited during start-up (code ${code}, signal ${signal})`);
        setTimeout(() => failStart(reason), EXIT_REASON_WAIT_MS);
        return;
      }
      log?.error({ pid: w.process.pid, code, signal }, 'worker exited; starting another');
      watch(forkWorker());
    };
    // A worker forked early may have exited before this: its exit is handled now.
    if (w.isDead()) onExit(w.process.exitCode, w.process.signalCode);
    else w.on('exit', onExit);
  };

  try {
    out = serverLog(config.logLevel, config.logFlushMs);
    log = out.log;
    store = openStore(config.databaseUrl);
    for (const f of forked) watch(f);
    for (let i = forked.length; i < n; i++) watch(forkWorker());
    await migrateToLatest(store);
    migrated = true;
    for (const w of waitingToStart) send(w, { type: 'openrig:start' });
    waitingToStart.clear();
    await started;
  } catch (err) {
    stopping = true;
    await endWorkers(workers);
    await store?.destroy().catch(() => {});
    await out?.close();
    throw err;
  }
  const s = store;
  const o = out;
  const l = log;
  // The jobs run only in a cluster that started: a failed start leaves them to a primary that did.
  // Their modules load once the banner is out: every worker serves by then, and what the primary
  // loads would only delay it (on a machine with one core per worker, also the workers' start).
  let jobsStarted: Promise<void> | null = null;
  const startPrimaryJobs = async () => {
    const [{ makeDeps }, { systemClock }, { startJobs }] = await Promise.all([
      import('./deps.js'),
      import('./clock.js'),
      import('./jobs/index.js'),
    ]);
    // Started even when SIGTERM came first: the stop waits for them and their stop makes the relay's
    // last pass, so a serve stopped right after its banner still delivers the committed e-mails.
    const d = makeDeps({ store: s, clock: systemClock, config, log: l });
    deps = d;
    d.jobs.push(...startJobs(d));
    kick = () => d.kickOutbox();
    if (kickPending) kick();
  };

  const stop = async (signal: string) => {
    stopping = true;
    o.log.info({ signal }, 'shutting down');
    const exits = [...workers].map((w) => new Promise<void>((resolve) => w.once('exit', () => resolve())));
    // Each worker drains: stops accepting, finishes its in-flight requests, writes its logs.
    for (const w of workers) w.process.kill('SIGTERM');
    await Promise.all(exits);
    await jobsStarted?.catch(() => {});
    for (const j of deps?.jobs ?? []) await j.stop(); // the relay's last pass flushes the outbox
    await s.destroy();
    await o.close();
    if (failedExit) throw new Error('a worker failed to shut down cleanly');
  };
  onTermination(stop);
  process.stdout.write(`openrig listening on ${url} (${n} workers)\n`);
  // The cluster has started: each worker compiles the rest of its schemas now (runWorker), not
  // while the other processes start.
  announced = true;
  for (const w of workers) send(w, { type: 'openrig:ready' });
  jobsStarted = startPrimaryJobs();
  try {
    await jobsStarted;
  } catch (err) {
    if (stopping) return; // the shutdown under way ends the process
    stopping = true;
    await endWorkers(workers);
    // (Set by startPrimaryJobs, which TypeScript does not follow.)
    for (const j of (deps as Deps | null)?.jobs ?? []) await j.stop().catch(() => {});
    await s.destroy().catch(() => {});
    await o.close();
    throw err;
  }
}

export async function runWorker(config: Config): Promise<void> {
  // The server's modules load while the primary migrates; the database is opened once it has.
  // The HTTP application too (main.ts imports it only once the store is open): loading it is
  // most of a worker's start-up, and on a fresh database the migrations take about as long.
  const main = import('./main.js');
  main.catch(() => {}); // awaited below
  import('./app.js').catch(() => {}); // main.ts's import gets the same module, or its error
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
  const { onTermination, startServer } = await main;
  const server = await startServer(config, {
    jobs: false,
    migrate: false,
    // Schemas compile ahead once every worker listens (openrig:ready), not while others start.
    warmOnListen: false,
    kickOutbox: () => send(process, { type: 'openrig:kick-outbox' }),
    wakeAgents: (ids) => send(process, { type: 'openrig:wake-agents', ids }),
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
    else if (m.type === 'openrig:ready') server.app.warmSchemas();
    else if (m.type === 'openrig:wake-agents') deps.agentWake.wakeLocal(m.ids);
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
