// `openrig serve`: open the store, migrate, serve, run the
// background jobs; on SIGTERM stop accepting, finish in-flight requests, flush the outbox, exit 0.
import pino from 'pino';
import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config, type ConfigOverrides } from './config.js';
import { openStore } from './db/connection.js';
import { migrateToLatest } from './db/migrate.js';
import { makeDeps, type Deps } from './deps.js';
import { systemClock } from './clock.js';
import { buildApp } from './app.js';
import { startJobs } from './jobs/index.js';

export interface Server {
  app: FastifyInstance;
  deps: Deps;
  url: string;
  close(): Promise<void>;
}

export async function startServer(config: Config, opts: { logger?: boolean } = {}): Promise<Server> {
  const log = pino({ level: opts.logger === false ? 'silent' : config.logLevel });
  const store = openStore(config.databaseUrl);
  await migrateToLatest(store);
  const deps = makeDeps({ store, clock: systemClock, config, log });
  const app = await buildApp(deps, { logger: opts.logger });
  await app.listen({ host: config.host, port: config.port });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  const jobs = startJobs(deps);
  deps.jobs.push(...jobs);
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
    close() {
      closing ??= (async () => {
        // Stops accepting; in-flight requests finish first. Connections that turn idle after
        // their last reply are closed as they do, instead of waiting out keep-alive.
        const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
        try {
          await app.close();
        } finally {
          clearInterval(sweep);
        }
        for (const j of deps.jobs) await j.stop(); // the relay's last pass flushes the outbox
        await store.destroy();
      })();
      return closing;
    },
  };
}

export async function serveCommand(o: ConfigOverrides & { demo?: boolean }): Promise<void> {
  const config = loadConfig(process.env, o);
  // The demo prints instructions to paste; request logs would bury them (OPENRIG_LOG_LEVEL wins).
  if (o.demo && !process.env.OPENRIG_LOG_LEVEL) config.logLevel = 'warn';
  const server = await startServer(config);
  const onSignal = (sig: string) => {
    server.deps.log.info({ signal: sig }, 'shutting down');
    server.close().then(
      () => process.exit(0),
      (err) => {
        server.deps.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
  if (o.demo) {
    const { startDemo } = await import('./demo.js');
    await startDemo(server);
  } else {
    process.stdout.write(`openrig listening on ${server.url}\n`);
  }
}
