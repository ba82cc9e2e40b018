// `openrig admin …`: direct database access that works while
// `serve` runs (SQLite WAL + busy timeout, or PostgreSQL). Prints one JSON object.
import type { Command } from 'commander';
import { registerAdminMarket } from './admin-market.js';
import { registerAdminBilling } from './admin-billing.js';
import { registerAdminPayouts } from './admin-payouts.js';
import { adminAction, dbOptions, withStore, type DbOpts } from './admin-store.js';

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
  registerAdminPayouts(admin);
  return admin;
}
