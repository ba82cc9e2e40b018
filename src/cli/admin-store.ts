// What every `openrig admin …` command shares (admin.ts and its parts admin-market.ts and
// admin-billing.ts): the database options, the store they open, and the JSON reply.
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import type { Store } from '../server/db/connection.js';

export interface DbOpts {
  data?: string;
  databaseUrl?: string;
  json?: boolean;
}

// The server's modules are imported inside the actions, so that user commands, which never need
// them, start fast.
export async function withStore<T>(o: DbOpts, fn: (store: Store) => Promise<T>): Promise<T> {
  const [{ loadConfig }, { openStore }, { migrateToLatest }] = await Promise.all([
    import('../server/config.js'),
    import('../server/db/connection.js'),
    import('../server/db/migrate.js'),
  ]);
  // Without --data or --database-url the default database must already exist: a new empty one
  // would take the writes while the running server reads another. Checked before the config is
  // read, which would create the data directory and its secret key.
  if (o.data === undefined && o.databaseUrl === undefined) {
    const env = process.env;
    const url = env.DATABASE_URL || `sqlite:${path.resolve(env.OPENRIG_DATA || './data', 'openrig.db')}`;
    const file = url.startsWith('sqlite:') ? url.slice('sqlite:'.length) : null;
    if (file !== null && !existsSync(file))
      throw new Error(
        `no database at ${file} (the default when neither --data nor --database-url is given, nor DATABASE_URL); nothing was created; pass --data DIR of the running server, or --database-url URL`,
      );
  }
  const config = loadConfig(process.env, { dataDir: o.data, databaseUrl: o.databaseUrl });
  const store = openStore(config.databaseUrl, { poolSize: 2 });
  try {
    await migrateToLatest(store);
    return await fn(store);
  } finally {
    await store.destroy();
  }
}

export function printJson(obj: unknown): void {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

/** Runs an admin action: JSON on stdout, or `openrig: msg` on stderr and exit 1. */
export async function adminAction(fn: () => Promise<unknown>): Promise<void> {
  try {
    printJson(await fn());
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    process.stderr.write(`openrig: ${msg}\n`);
    process.exitCode = 1;
  }
}

export function dbOptions(cmd: Command): Command {
  return cmd
    .option('--data <dir>', 'data directory (SQLite default database)')
    .option('--database-url <url>', 'database URL (postgres://… or sqlite:PATH); env DATABASE_URL')
    .option('--json', 'print one JSON object (the default output)');
}
