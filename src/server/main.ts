// `openrig serve`: open the store, migrate, serve, run the
// background jobs; on SIGTERM stop accepting, finish in-flight requests, flush the outbox, exit 0.
// With several workers (cluster.ts) the primary process migrates and runs the background jobs
// once; each worker serves HTTP on the shared port with its own database connections.
import pino from 'pino';
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import { openStore } from './db/connection.js';
import { migrateToLatest } from './db/migrate.js';
import { makeDeps } from './deps.js';
import type { Deps } from './deps.types.js';
import { systemClock } from './clock.js';
import { startJobs } from './jobs/index.js';
import { serverLog, type ServerLog } from './log.js';
import { storeNotifications } from './db/notify.js';
import { notificationsRelay } from './modules/agent-gateway/agent-gateway.wake.js';
import { startScheduleRunner } from './modules/schedules/schedules.runner.js';

export interface Server {
  app: FastifyInstance;
  deps: Deps;
  url: string;
  /** The separate /metrics listener's URL, when one was asked for. */
  metricsUrl: string | null;
  close(): Promise<void>;
}

export interface ServerOptions {
  /** false: no logs at all (tests). */
  logger?: boolean;
  /** The log to write to (default: a new serverLog at the configured level); closed by close(). */
  log?: ServerLog;
  /** Run the background jobs in this process (default true; a cluster worker leaves them to the primary). */
  jobs?: boolean;
  /** Migrate the database first (default true; a cluster's primary has done it). */
  migrate?: boolean;
  /** Wakes the e-mail relay when it runs in another process (a cluster worker). */
  kickOutbox?: () => void;
  /**
   * Tells the other processes to wake their agents' waits of these machines, where the database
   * cannot (a cluster worker on SQLite); they call deps.agentWake.wakeLocal.
   */
  wakeAgents?: (machineIds: number[]) => void;
  /** false: the schemas not used yet compile when app.warmSchemas() is called, not on listen. */
  warmOnListen?: boolean;
}

export async function startServer(config: Config, opts: ServerOptions = {}): Promise<Server> {
  const out = opts.logger === false ? null : (opts.log ?? serverLog(config.logLevel, config.logFlushMs));
  const log = out?.log ?? pino({ level: 'silent' });
  const store = openStore(config.databaseUrl);
  if (opts.migrate !== false) await migrateToLatest(store);
  const deps = makeDeps({ store, clock: systemClock, config, log, kickOutbox: opts.kickOutbox });
  // Agents' waits are woken in every process serving the database: by its notifications where it
  // has them (PostgreSQL), else by the cluster's IPC, else this process is the only one.
  const notifications = storeNotifications(store, config.databaseUrl);
  if (notifications) deps.agentWake.useRelay(notificationsRelay(notifications));
  else if (opts.wakeAgents) deps.agentWake.useRelay({ send: opts.wakeAgents });
  // Loaded here, not at start-up: a cluster's primary serves no HTTP and never loads it.
  const { buildApp } = await import('./app.js');
  const app = await buildApp(deps, { logger: opts.logger, warmOnListen: opts.warmOnListen });
  await app.listen({ host: config.host, port: config.port });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  if (opts.jobs !== false) deps.jobs.push(...startJobs(deps));
  // Scheduled jobs are sent through this process's application, so every process serving HTTP
  // runs them (a cluster's workers too); the database gives each due time to one of them.
  const schedules = startScheduleRunner(deps, app);
  const metricsServer =
    config.metricsPort === null
      ? null
      : await (
          await import('./modules/platform/platform.routes.js')
        ).startMetricsServer(deps, config.metricsHost, config.metricsPort);
  const maddr = metricsServer?.address();
  const metricsUrl =
    maddr && typeof maddr === 'object'
      ? `http://${maddr.address.includes(':') ? `[${maddr.address}]` : maddr.address}:${maddr.port}/metrics`
      : null;
  // The offer index loads in the background once listening (in chunks, between requests), so the
  // first search does not wait for every machine row; a search meanwhile joins the same load.
  setImmediate(() => {
    deps.offerIndex
      .sync()
      .catch((err: unknown) => log.warn({ err }, 'loading the offer index failed; the first search retries'));
  });
  let closing: Promise<void> | null = null;
  return {
    app,
    deps,
    url,
    metricsUrl,
    close() {
      closing ??= (async () => {
        // Stops accepting; in-flight requests finish first. Connections that turn idle after
        // their last reply are closed as they do, instead of waiting out keep-alive.
        const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
        try {
          await schedules.stop(); // no run starts on a closing application
          await app.close();
          if (metricsServer) {
            metricsServer.closeAllConnections();
            await new Promise((r) => metricsServer.close(r));
          }
        } finally {
          clearInterval(sweep);
        }
        for (const j of deps.jobs) await j.stop(); // the relay's last pass flushes the outbox
        await store.destroy();
        await out?.close(); // every log line written
      })();
      return closing;
    },
  };
}

export { onTermination } from './termination.js';
