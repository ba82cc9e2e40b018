// `openrig admin add-credit` (operator contract): adds credit to an account, the balance and a
// ledger row of kind `credit` together; prints {ledger_id, user_id, email, amount, balance}.
import type { Command } from 'commander';
import { adminAction, dbOptions, withStore, type DbOpts } from './admin-store.js';

export function registerAdminBilling(admin: Command): void {
  dbOptions(admin.command('add-credit'))
    .description("add credit (USD) to an account's balance; it shows in the account's invoices")
    .requiredOption('--email <email>', 'e-mail of the account')
    .requiredOption('--amount <usd>', 'USD to add, e.g. 25 or 12.50')
    .addHelpText('after', '\nExample:\n  openrig admin add-credit --email alice@example.com --amount 25')
    .action(async (o: DbOpts & { email: string; amount: string }) =>
      adminAction(async () => {
        const amount = Number(o.amount);
        if (o.amount.trim() === '' || !Number.isFinite(amount) || amount <= 0)
          throw new Error(`--amount must be a positive amount of USD, not ${JSON.stringify(o.amount)}`);
        const [{ addCredit }, { findUserByEmail }, { systemClock }] = await Promise.all([
          import('../server/modules/billing/billing.service.js'),
          import('../server/modules/accounts/accounts.repo.js'),
          import('../server/clock.js'),
        ]);
        return withStore(o, async (store) => {
          const user = await findUserByEmail(store.db, o.email);
          if (!user) throw new Error(`no account with the e-mail ${JSON.stringify(o.email)}`);
          const credit = await addCredit({ store, clock: systemClock }, user.id, amount);
          return { ...credit, email: user.email };
        });
      }),
    );
}
