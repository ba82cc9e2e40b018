// `openrig reports MACHINE_ID` (hosts: renters' reports about one of your machines, as the official
// CLI's `reports ID`) and `openrig report MACHINE_ID --problem P [--message M]` (renters: report a
// problem with a machine you rented). The rules are the server's (docs/trust.md): one report a
// machine a UTC day, only from a renter of it; its refusal is printed as it says it.
import type { Command } from 'commander';
import { REPORT_PROBLEMS, type ReportProblem } from '../../client/client.js';
import { DASH, table, utcTime } from '../output.js';
import { act, common, intArg, UsageError } from './context.js';

/** The most characters of a report's message the server keeps. */
export const MAX_MESSAGE = 1000;

export function problemArg(v: unknown): ReportProblem {
  const p = typeof v === 'string' ? v.trim().toLowerCase() : '';
  if (!(REPORT_PROBLEMS as readonly string[]).includes(p))
    throw new UsageError(`--problem must be one of ${REPORT_PROBLEMS.join(', ')}`);
  return p as ReportProblem;
}

export function registerReportCommands(program: Command): void {
  common(
    program
      .command('reports')
      .argument('<machine-id>', 'one of your machines')
      .description("renters' reports of problems with one of your machines, newest first (hosts)"),
    'openrig reports 12',
  ).action(
    act(async (ctx, args) => {
      const id = intArg(args[0], 'MACHINE_ID');
      const rows = await ctx.client.machineReports(id);
      if (ctx.raw) return ctx.printRaw();
      if (rows.length === 0) return ctx.out(`No reports about machine ${id}.\n`);
      ctx.out(
        table(
          rows,
          [
            { header: 'ID', get: (r) => String(r.id), align: 'right' },
            { header: 'When (UTC)', get: (r) => utcTime(r.created_at).replace(' UTC', '') },
            { header: 'Problem', get: (r) => r.problem },
            ...(rows.some((r) => r.reporter_id !== undefined)
              ? [{ header: 'Reporter', get: (r: (typeof rows)[number]) => String(r.reporter_id ?? DASH) }]
              : []),
            { header: 'Message', get: (r) => r.message || DASH, shrink: true },
          ],
          ctx.width,
        ),
      );
    }),
  );
  common(
    program
      .command('report')
      .argument(
        '<machine-id>',
        'a machine you rent or rented in the last 30 days (show instance ID: machine)',
      )
      .requiredOption('--problem <p>', REPORT_PROBLEMS.join(', '))
      .option('--message <text>', `what happened, plain text (at most ${MAX_MESSAGE} characters)`)
      .description('report a problem with a machine you rented (renters; one report a machine a day)'),
    'openrig report 12 --problem gpu --message "nvidia-smi shows 1 GPU of the 2 rented"',
  ).action(
    act(async (ctx, args, opts) => {
      const id = intArg(args[0], 'MACHINE_ID');
      const problem = problemArg(opts.problem);
      const message = typeof opts.message === 'string' ? opts.message : '';
      if ([...message].length > MAX_MESSAGE)
        throw new UsageError(`--message is at most ${MAX_MESSAGE} characters`);
      const r = await ctx.client.reportMachine(id, problem, message);
      if (ctx.raw) return ctx.printRaw();
      ctx.out(
        `Report ${r.report.id} about machine ${r.report.machine_id} sent (${r.report.problem}, ${utcTime(r.report.created_at)}). Its host sees it, not who sent it.\n`,
      );
    }),
  );
}
