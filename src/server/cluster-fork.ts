// The first step of `openrig serve`, before the server's modules load: the configuration, and in
// the primary of a cluster the workers forked at once. A worker spends most of its start-up
// loading modules and building its HTTP application; forked first, the workers do that while the
// primary loads its own modules (migrations, background jobs) instead of after. A worker's
// messages until the primary listens to it are held, then handed over in order (cluster.ts).
// A start that fails after the fork fails as a whole: a worker reports its reason to the primary
// and exits, and the primary ends every worker before it reports the reason, once, and exits 1.
import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import { loadConfig, type Config, type ConfigOverrides } from './config.js';

export interface ServeOptions extends ConfigOverrides {
  demo?: boolean;
  /** HTTP worker processes; default: the machine's cores, 1 with --demo. 1 serves in this process. */
  workers?: number;
}

/** Workers to run: `--workers N`, else 1 for the demo (its agents live in-process), else the cores. */
export function workerCount(o: { workers?: number; demo?: boolean }): number {
  if (o.workers !== undefined) return o.workers;
  return o.demo ? 1 : availableParallelism();
}

/** A worker forked before the primary listened to it. */
export interface ForkedWorker {
  worker: Worker;
  /** Stops holding its messages and returns those held so far, oldest first. */
  takeHeld(): unknown[];
}

export function forkWorker(): ForkedWorker {
  cluster.setupPrimary({ silent: false });
  const worker = cluster.fork();
  const held: unknown[] = [];
  const hold = (m: unknown) => void held.push(m);
  worker.on('message', hold);
  return {
    worker,
    takeHeld: () => {
      worker.off('message', hold);
      return held.splice(0);
    },
  };
}

export interface PreparedServe {
  config: Config;
  /** Workers to run (1: this process serves). */
  workers: number;
  /** In a cluster's primary, the workers already forked; empty otherwise. */
  forked: ForkedWorker[];
}

/** Reads and checks the configuration (a bad one throws before anything starts), then forks. */
export function prepareServe(o: ServeOptions): PreparedServe {
  const config = loadConfig(process.env, o);
  // The demo prints instructions to paste; request logs would bury them (OPENRIG_LOG_LEVEL wins).
  if (o.demo && !process.env.OPENRIG_LOG_LEVEL) config.logLevel = 'warn';
  const workers = workerCount(o);
  const forked = cluster.isPrimary && workers > 1 ? Array.from({ length: workers }, forkWorker) : [];
  return { config, workers, forked };
}

/** How long a worker may take to exit on SIGTERM before it is killed. */
const STOP_GRACE_MS = 5000;

/** Ends `workers` (SIGTERM, then SIGKILL after a grace period) and resolves once all have exited. */
export async function endWorkers(workers: Iterable<Worker>): Promise<void> {
  await Promise.all(
    [...workers].map(async (w) => {
      if (w.isDead()) return;
      const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      w.process.kill('SIGTERM');
      const timer = setTimeout(() => w.process.kill('SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    }),
  );
}

/** The message a worker sends its primary when its start-up failed, with the reason. */
export const START_FAILED = 'openrig:start-failed';

/**
 * `serve` failed to start. In a cluster worker: the reason goes to the primary, which reports it
 * for the whole cluster, and the worker exits 1 (this never returns). In the primary: the workers
 * forked already are ended, then it returns and the caller reports the error.
 */
export async function abortStart(err: unknown, forked: ForkedWorker[]): Promise<void> {
  if (cluster.isWorker) {
    const message = err instanceof Error ? err.message : String(err);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 1000);
      try {
        process.send!({ type: START_FAILED, message }, undefined, {}, () => {
          clearTimeout(timer);
          resolve();
        });
      } catch {
        resolve(); // the primary is gone
      }
    });
    process.exit(1);
  }
  await endWorkers(forked.map((f) => f.worker));
}
