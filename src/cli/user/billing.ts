// Billing history: show invoices [--from WHEN] [--to WHEN] [--charges | --credits] (docs/cli.md).
import type { Command } from 'commander';
import type { InvoiceItem, Invoices } from '../../contract/api-types.js';
import { act, common, UsageError } from './context.js';
import { parseDay, parseWhen } from './machines.js';
import { DASH, fmtNum, fmtUsd, str, table, utcTime } from '../output.js';

const DAY_S = 86_400;
const DAY_FORMS = /^\s*(\d{4}-\d{2}-\d{2}|today|yesterday)\s*$/i;

/**
 * The unix seconds a --from or --to names: a time as `parseWhen` reads it (an ISO time, epoch
 * seconds); a whole day (a date, today, yesterday) starts at its midnight for --from and runs to
 * the next midnight for --to, so `--to 2026-11-30` includes the 30th.
 */
export function invoiceBound(s: string, what: '--from' | '--to', nowMs: number): number {
  if (DAY_FORMS.test(s)) {
    const day = parseDay(s, what, nowMs);
    return (what === '--from' ? day : day + 1) * DAY_S;
  }
  try {
    return parseWhen(s, what);
  } catch {
    throw new UsageError(
      `${what}: "${s}" is not a time: give a date like 2026-11-01, an ISO time like 2026-11-01T10:00Z, epoch seconds, today or yesterday`,
    );
  }
}

/** The range to ask for: what the flags name; the server's defaults (the 30 days up to now) for the rest. */
export function invoiceRange(
  o: { from?: string; to?: string },
  nowMs: number,
): { sdate?: number; edate?: number } {
  const sdate = o.from === undefined ? undefined : invoiceBound(o.from, '--from', nowMs);
  const edate = o.to === undefined ? undefined : invoiceBound(o.to, '--to', nowMs);
  if (sdate !== undefined && edate !== undefined && sdate >= edate)
    throw new UsageError(`--from "${o.from}" is not before --to "${o.to}"`);
  return { sdate, edate };
}

/** Charges are small and add up: four decimals; credits are money in, with a plus. */
const amount = (x: InvoiceItem) => (x.type === 'payment' ? `+${fmtUsd(x.amount, 2)}` : fmtUsd(x.amount, 4));

/**
 * The items as a table (a charge per instance, UTC day and kind; a credit per line), then the
 * totals of the range and the line for today and the balance.
 */
export function invoicesReport(r: Invoices, only: 'charges' | 'credits' | null, maxWidth?: number): string {
  const items = r.invoices.filter((x) => only === null || (only === 'charges') === (x.type === 'charge'));
  const period = `${utcTime(r.sdate)} to ${utcTime(r.edate)}`;
  const what = only === 'charges' ? 'charges' : only === 'credits' ? 'credits' : 'charges or credits';
  const body =
    items.length === 0
      ? `No ${what} from ${period}.\n`
      : table(
          items,
          [
            {
              header: 'When (UTC)',
              // A charge is a day's sum; a credit has its moment.
              get: (x) =>
                x.type === 'charge'
                  ? utcTime(x.timestamp - 1).slice(0, 10)
                  : utcTime(x.timestamp).slice(0, 16),
            },
            { header: 'Type', get: (x) => (x.type === 'payment' ? 'credit' : str(x.kind)) },
            { header: 'Instance', get: (x) => str(x.instance_id), align: 'right' },
            {
              header: 'Hours',
              get: (x) => (x.type === 'charge' ? fmtNum(x.quantity, 3) : DASH),
              align: 'right',
              drop: 2,
            },
            {
              header: 'Rate',
              get: (x) => (x.type === 'charge' ? `${fmtUsd(x.rate, 4)}/h` : DASH),
              align: 'right',
              drop: 1,
            },
            { header: 'Amount', get: amount, align: 'right' },
          ],
          maxWidth,
        );
  const totals = [
    only !== 'credits' ? `charges ${fmtUsd(r.totals.charges, 4)}` : null,
    only !== 'charges' ? `credits ${fmtUsd(r.totals.credits, 2)}` : null,
  ].filter((x) => x !== null);
  const c = r.current;
  return (
    `${body}\nTotal ${period}: ${totals.join(', ')}\n` +
    `Today (UTC) so far: charges ${fmtUsd(c.charges, 4)}; balance ${fmtUsd(c.credit, 2)}\n`
  );
}

export function registerBillingCommands(show: Command): void {
  common(
    show
      .command('invoices')
      .option(
        '--from <when>',
        'start: a date like 2026-11-01 (its midnight, UTC), an ISO time, epoch seconds, today or yesterday (default: 30 days before --to)',
      )
      .option(
        '--to <when>',
        'end: a date (through its end), an ISO time, epoch seconds, today (default: now)',
      )
      .option('--charges', 'only the charges')
      .option('--credits', 'only the credits')
      .description('your billing history: credits, and charges per instance and UTC day')
      .addHelpText(
        'after',
        '\nCharges are summed per instance, UTC day and kind (compute, disk), with the hours billed and\n' +
          "the instance's rate; a charge counts on the day its billed period ended. Credits are what was\n" +
          'added to the account. A history covers at most 366 days. Amounts are in USD.',
      ),
    'openrig show invoices\nopenrig show invoices --from 2026-11-01 --to 2026-11-30\nopenrig show invoices --from yesterday --charges',
  ).action(
    act(async (ctx, _a, o) => {
      if (o.charges && o.credits) throw new UsageError('--charges and --credits exclude each other');
      const range = invoiceRange(
        {
          from: o.from === undefined ? undefined : String(o.from),
          to: o.to === undefined ? undefined : String(o.to),
        },
        ctx.now(),
      );
      const r = await ctx.client.invoices({ ...range, creditsOnly: !!o.credits });
      if (ctx.raw) return ctx.printRaw();
      ctx.out(invoicesReport(r, o.charges ? 'charges' : o.credits ? 'credits' : null, ctx.width));
    }),
  );
}
