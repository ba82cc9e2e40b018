// `openrig admin …`: direct database access that works while
// `serve` runs (SQLite WAL + busy timeout, or PostgreSQL). Prints one JSON object.
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import type { Store } from '../server/db/connection.js';
import { registerAdminMarket } from './admin-market.js';
import { registerAdminBilling } from './admin-billing.js';

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

export function registerAdmin(program: Command): Command {
  const admin = program.command('admin').description('operator commands with direct database access');

  dbOptions(admin.command('create-user'))
    .description('create an account and print {id, email, api_key[, team_api_key]}')
    .requiredOption('--email <email>', 'e-mail address')
    .option('--password <password>', 'password for the web login')
    .option('--full-name <name>', 'full name', '')
    .option('--email-verified', 'mark the e-mail address verified')
    .option('--admin', 'make the account an admin')
    .option('--phone <e164>', 'phone number on file (E.164)')
    .option('--legacy-tfa', 'legacy 2FA account: SMS to the number on file, no method rows')
    .option('--team <name>', 'add to this team (created if needed) and print a team API key')
    .option('--balance <usd>', 'starting balance in USD', '0')
    .addHelpText(
      'after',
      '\nExample:\n  openrig admin create-user --email alice@example.com --email-verified --balance 50',
    )
    .action(
      async (
        o: DbOpts & {
          email: string;
          password?: string;
          fullName: string;
          emailVerified?: boolean;
          admin?: boolean;
          phone?: string;
          legacyTfa?: boolean;
          team?: string;
          balance: string;
        },
      ) =>
        adminAction(async () => {
          const [{ createUser }, { systemClock }] = await Promise.all([
            import('../server/modules/accounts/accounts.service.js'),
            import('../server/clock.js'),
          ]);
          return withStore(o, (store) =>
            createUser(
              { store, clock: systemClock },
              {
                email: o.email,
                password: o.password ?? null,
                fullName: o.fullName,
                emailVerified: !!o.emailVerified,
                admin: !!o.admin,
                phone: o.phone ?? null,
                legacyTfa: !!o.legacyTfa,
                team: o.team ?? null,
                balanceUsd: Number(o.balance),
              },
            ),
          );
        }),
    );

  dbOptions(admin.command('flag-sms-fraud'))
    .description('set (or --clear) the SMS-fraud flag of an account; prints {id, sms_fraud}')
    .requiredOption('--email <email>', 'e-mail address')
    .option('--clear', 'clear the flag instead of setting it')
    .action(async (o: DbOpts & { email: string; clear?: boolean }) =>
      adminAction(async () => {
        const { setSmsFraud } = await import('../server/modules/accounts/accounts.service.js');
        return withStore(o, (store) => setSmsFraud({ db: store.db }, o.email, !o.clear));
      }),
    );

  registerAdminMarket(admin);
  registerAdminBilling(admin);
  return admin;
}
