// The `openrig` command: serve, agent, admin, and the user commands.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../contract/package-root.js';
import { Command, CommanderError } from 'commander';
import { registerAdmin } from './admin.js';
import { registerAgentCommand } from './agent.js';
import { registerUserCommands } from './user/index.js';
import { registerCompletion, runComplete } from './completion.js';
import type { ForkedWorker } from '../server/cluster-fork.js';

/** The options of `openrig serve`, as commander parses them (defaults filled in). */
interface ServeOpts {
  host?: string;
  port?: string;
  data?: string;
  databaseUrl?: string;
  demo?: boolean;
  workers?: string;
  metricsPort?: string;
}

/** The package's version, from its package.json. */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

export function buildProgram(): Command {
  const program = new Command('openrig')
    .description('openrig: GPU cloud marketplace control plane')
    .version(packageVersion(), '-V, --version', 'print the version')
    .exitOverride();
  program
    .command('serve')
    .description('serve the API (SQLite under --data by default, PostgreSQL with --database-url)')
    // No defaults here: an absent flag leaves the value to OPENRIG_HOST / OPENRIG_PORT /
    // OPENRIG_DATA, then to the defaults of the configuration (config.ts).
    .option('--host <host>', 'listen address (default: OPENRIG_HOST or 127.0.0.1)')
    .option('--port <port>', 'listen port (default: OPENRIG_PORT or 8080)')
    .option('--data <dir>', 'data directory (default: OPENRIG_DATA or ./data)')
    .option('--database-url <url>', 'postgres://… (or env DATABASE_URL)')
    .option('--demo', 'seed a demo fleet and user, print how to try it')
    .option(
      '--workers <n>',
      'HTTP worker processes sharing the port (default: the number of cores; 1 with --demo)',
    )
    .option(
      '--metrics-port <port>',
      'serve GET /metrics on this port (on OPENRIG_METRICS_HOST, default 127.0.0.1)',
    )
    .addHelpText(
      'after',
      '\nExample:\n  openrig serve --port 8080 --database-url postgres://localhost/openrig',
    )
    .action(async (o: ServeOpts) => {
      const port = o.port === undefined ? undefined : Number(o.port);
      if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535))
        throw new CommanderError(2, 'usage', `--port must be 0-65535`);
      let workers: number | undefined;
      if (o.workers !== undefined) {
        workers = Number(o.workers);
        if (!Number.isInteger(workers) || workers < 1 || workers > 256)
          throw new CommanderError(2, 'usage', `--workers must be 1-256`);
        // The demo's agents run inside the serving process.
        if (o.demo && workers > 1) throw new CommanderError(2, 'usage', `--demo runs one worker`);
      }
      const metricsPort = o.metricsPort === undefined ? undefined : Number(o.metricsPort);
      if (
        metricsPort !== undefined &&
        (!Number.isInteger(metricsPort) || metricsPort < 0 || metricsPort > 65535)
      )
        throw new CommanderError(2, 'usage', `--metrics-port must be 0-65535`);
      const opts = {
        host: o.host,
        port,
        dataDir: o.data,
        databaseUrl: o.databaseUrl,
        demo: !!o.demo,
        workers,
        metricsPort,
      };
      // Loaded on demand: user commands start fast without the server's modules. The configuration
      // is checked and a cluster's workers forked before the server's modules load, so that the
      // workers load theirs meanwhile (server/cluster-fork.ts).
      const { abortStart, prepareServe } = await import('../server/cluster-fork.js');
      let forked: ForkedWorker[] = [];
      try {
        const prepared = prepareServe(opts);
        forked = prepared.forked;
        const { serveCommand } = await import('../server/serve.js');
        await serveCommand(opts, prepared);
      } catch (err) {
        // A failed start ends the whole cluster; the primary alone reports why.
        await abortStart(err, forked);
        throw err;
      }
    });
  registerAdmin(program);
  registerAgentCommand(program);
  registerUserCommands(program);
  registerCompletion(program);
  return program;
}

/** Runs the CLI; resolves to the exit code (0 ok, 1 API error, 2 usage error). */
export async function main(argv: string[]): Promise<number | undefined> {
  // Output piped into `head` and the like: a closed pipe ends the command quietly.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
  const program = buildProgram();
  // The shell's words go to the completer as they are: commander would take `--` and `-V` itself.
  if (argv[2] === '__complete') {
    await runComplete(program, argv.slice(3));
    return undefined;
  }
  // commander's own usage errors read like the CLI's: `openrig: unknown option '--x'`.
  const output = {
    writeErr: (s: string) => process.stderr.write(s),
    outputError: (s: string, write: (s: string) => void) => write(`openrig: ${s.replace(/^error: /, '')}`),
  };
  const configure = (c: Command) => {
    c.configureOutput(output).exitOverride();
    c.commands.forEach(configure);
  };
  configure(program);
  try {
    await program.parseAsync(argv);
    return undefined;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      // `openrig show` without its subcommand: the help went to stderr, as a usage error.
      if (err.code === 'commander.help') return err.exitCode === 0 ? 0 : 2;
      if (err.code === 'usage') process.stderr.write(`openrig: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
}
