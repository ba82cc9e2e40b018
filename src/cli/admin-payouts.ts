// `openrig admin payouts …`: the operator's side of host payouts (docs/payouts.md). `list` and
// `mark` print JSON; `csv` prints the payouts as CSV for a batch upload; `run` makes the payouts
// of the last finished period now (the server does it by itself once an hour).
import type { Command } from 'commander';
import { adminAction, dbOptions, withStore, type DbOpts } from './admin-store.js';

const STATUSES = ['pending', 'paid', 'failed'];

function checkStatus(s: string | undefined): string | undefined {
  if (s !== undefined && !STATUSES.includes(s))
    throw new Error(`--status must be one of ${STATUSES.join(', ')}, not ${JSON.stringify(s)}`);
  return s;
}

export function registerAdminPayouts(admin: Command): void {
  const payouts = admin
    .command('payouts')
    .description('host payouts: list, export as CSV, mark paid or failed, run now');

  dbOptions(payouts.command('list'))
    .description('list payouts, oldest first (all, or of one status)')
    .option('--status <status>', 'pending, paid or failed')
    .action(async (o: DbOpts & { status?: string }) =>
      adminAction(async () => {
        const status = checkStatus(o.status);
        const { listPayouts } = await import('../server/modules/billing/billing.payouts.js');
        return withStore(o, async (store) => ({ payouts: await listPayouts(store.db, { status }) }));
      }),
    );

  dbOptions(payouts.command('csv'))
    .alias('export')
    .description('print payouts as CSV (default: the pending ones); also `export`')
    .option('--status <status>', 'pending (default), paid or failed')
    .action(async (o: DbOpts & { status?: string }) => {
      try {
        const status = checkStatus(o.status ?? 'pending');
        const { payoutsCsv } = await import('../server/modules/billing/billing.payouts.js');
        process.stdout.write(await withStore(o, (store) => payoutsCsv(store.db, { status })));
      } catch (err) {
        process.stderr.write(`openrig: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exitCode = 1;
      }
    });

  dbOptions(payouts.command('mark'))
    .description('mark a pending payout paid or failed (a failed payout is paid again by the next run)')
    .requiredOption('--id <id>', 'the payout id')
    .requiredOption('--status <status>', 'paid or failed')
    .option('--note <text>', "the transfer's reference, or why it failed", '')
    .addHelpText(
      'after',
      '\nExample:\n  openrig admin payouts mark --id 12 --status paid --note "PayPal 5TY0…"',
    )
    .action(async (o: DbOpts & { id: string; status: string; note: string }) =>
      adminAction(async () => {
        const id = Number(o.id);
        if (!Number.isSafeInteger(id) || id < 1)
          throw new Error(`--id must be a payout id, not ${JSON.stringify(o.id)}`);
        if (o.status !== 'paid' && o.status !== 'failed')
          throw new Error(`--status must be paid or failed, not ${JSON.stringify(o.status)}`);
        const to = o.status;
        const [{ markPayout }, { systemClock }] = await Promise.all([
          import('../server/modules/billing/billing.payouts.js'),
          import('../server/clock.js'),
        ]);
        return withStore(o, (store) => markPayout({ store, clock: systemClock }, id, to, o.note));
      }),
    );

  dbOptions(payouts.command('run'))
    .description('make the payouts of the last finished period now')
    .action(async (o: DbOpts) =>
      adminAction(async () => {
        const [{ runPayouts, payoutView }, { systemClock }, { loadConfig }] = await Promise.all([
          import('../server/modules/billing/billing.payouts.js'),
          import('../server/clock.js'),
          import('../server/config.js'),
        ]);
        const config = loadConfig(process.env, { dataDir: o.data, databaseUrl: o.databaseUrl });
        return withStore(o, async (store) => ({
          payouts: (await runPayouts({ store, clock: systemClock, config })).map(payoutView),
        }));
      }),
    );
}
