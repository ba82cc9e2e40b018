// Host commands: show machines | list machine | unlist machine | delete machine | show earnings |
// schedule maint | show maints | cancel maint (docs/maintenance.md).
import type { Command } from 'commander';
import type {
  Machine,
  MachineEarnings,
  MaintBatchBody,
  MaintBatchEntry,
  MaintenanceCategory,
} from '../../contract/api-types.js';
import { ApiError } from '../../client/client.js';
import { act, CliFailure, common, confirm, idList, intArg, numArg, UsageError } from './context.js';
import { machinesTable, maintsTable } from './views.js';
import { visibilityLines } from '../visibility.js';
import { fmtUsd, str, table } from '../output.js';

export const CATEGORIES: MaintenanceCategory[] = ['power', 'internet', 'disk', 'gpu', 'software', 'other'];

export function registerMachineCommands(v: {
  show: Command;
  list: Command;
  unlist: Command;
  schedule: Command;
  cancel: Command;
  del: Command;
}): void {
  common(
    v.show.command('machines').description('list your machines (as a host)'),
    'openrig show machines',
  ).action(
    act(async (ctx) => {
      const { machines, verification_rule: rule } = await ctx.client.machines();
      if (ctx.raw) return ctx.printRaw();
      if (machines.length === 0)
        return ctx.out(
          'No machines. Start an agent on a host: OPENRIG_API_KEY=KEY openrig agent --url URL (docs/agent.md)\n',
        );
      ctx.out(machinesTable(machines, ctx.now(), ctx.width));
      // Unverified machines: that renters' default searches leave them out, and what changes it.
      const unverified = machines.filter((m) => m.verification === 'unverified').map((m) => m.id);
      if (unverified.length > 0)
        ctx.out(
          visibilityLines(unverified, new Map(unverified.map((id) => [id, 'unverified' as const])), rule),
        );
    }),
  );

  common(
    v.list
      .command('machine')
      .argument('<id>', 'machine ID')
      .requiredOption('--price-gpu <dph>', 'on-demand price per GPU in $/hour')
      .option('--price-disk <usd>', 'disk price in $ per GB-month')
      .option(
        '--min-bid <dph>',
        "lowest bid for interruptible rentals per GPU, $/hour (0: no bids); the machine's is it × its GPUs",
      )
      .option('--end-date <epoch>', 'offer the machine until this time (epoch seconds)')
      .description('offer a machine for rent'),
    'openrig list machine 7 --price-gpu 0.45 --price-disk 0.15',
  ).action(
    act(async (ctx, [id], o) => {
      const machine = intArg(id, 'machine ID');
      const prices = {
        price_gpu: positive(o.priceGpu, '--price-gpu'),
        price_disk: o.priceDisk === undefined ? undefined : positive(o.priceDisk, '--price-disk', true),
        price_min_bid: o.minBid === undefined ? undefined : positive(o.minBid, '--min-bid', true),
        end_date: o.endDate === undefined ? undefined : intArg(o.endDate, '--end-date'),
      };
      const r = (await ctx.client.listMachine(machine, prices)) as {
        machine?: Partial<Machine>;
        verification_rule?: string;
      };
      if (ctx.raw) return ctx.printRaw();
      const v = r.machine?.verification;
      const known = v === 'verified' || v === 'unverified' ? v : undefined;
      ctx.out(
        `machine ${machine}: listed at $${prices.price_gpu}/hr per GPU\n` +
          visibilityLines([machine], new Map(known ? [[machine, known]] : []), r.verification_rule),
      );
    }),
  );

  common(
    v.unlist
      .command('machine')
      .argument('<id>', 'machine ID')
      .description('stop offering a machine for rent'),
    'openrig unlist machine 7',
  ).action(
    act(async (ctx, [id]) => {
      const machine = intArg(id, 'machine ID');
      await ctx.client.unlistMachine(machine);
      if (ctx.raw) return ctx.printRaw();
      ctx.out(`machine ${machine}: unlisted\n`);
    }),
  );

  common(
    v.del
      .command('machine')
      .argument('<id>', 'machine ID')
      .option('--yes', 'do not ask for confirmation (needed without a terminal)')
      .description(
        'delete one of your machines for good: refused while a client has a live instance on it; your own instances on it are destroyed, its maintenance cancelled, and its agent refused',
      ),
    'openrig delete machine 7\nopenrig delete machine 7 --yes',
  ).action(
    act(async (ctx, [id], o) => {
      const machine = intArg(id, 'machine ID');
      if (!o.yes) {
        const answer = await confirm(
          `Delete machine ${machine}? Your own instances on it are destroyed, its maintenance windows cancelled and its agent refused; this cannot be undone. [y/N] `,
        );
        if (answer === null)
          throw new CliFailure(
            `deleting machine ${machine} cannot be undone: pass --yes to delete it without a terminal`,
          );
        if (!answer) return ctx.out('Nothing deleted.\n');
      }
      const r = await ctx.client.deleteMachine(machine);
      if (ctx.raw) return ctx.printRaw();
      ctx.out(`${r.msg ?? `Machine ${machine} deleted`}\n`);
    }),
  );

  common(
    v.show
      .command('earnings')
      .option(
        '--from <when>',
        'first UTC day: a date like 2026-11-01, an ISO time, epoch seconds, today or yesterday (default: the first of this month, or the --to day)',
      )
      .option('--to <when>', 'last UTC day, included (default: today)')
      .option('--machine <id>', 'only this machine (default: all your machines)')
      .description('what renters paid for your machines, per UTC day and per machine (as a host)')
      .addHelpText(
        'after',
        '\nWith neither --from nor --to the report is the current period: this month (UTC) through\n' +
          'today. --from alone runs through today; --to alone is that one day. A report covers at most\n' +
          '366 days. Amounts are in USD: compute is GPU time, disk is storage; a charge counts on the\n' +
          'day its billed period ended.',
      ),
    'openrig show earnings\nopenrig show earnings --from 2026-11-01\nopenrig show earnings --from 2026-11-01 --to 2026-11-30 --machine 7',
  ).action(
    act(async (ctx, _a, o) => {
      const days = earningsDays(
        {
          from: o.from === undefined ? undefined : String(o.from),
          to: o.to === undefined ? undefined : String(o.to),
        },
        ctx.now(),
      );
      const machine = o.machine === undefined ? undefined : intArg(o.machine, '--machine');
      const r = await ctx.client.machineEarnings({ ...days, machine });
      if (ctx.raw) return ctx.printRaw();
      ctx.out(earningsReport(r, ctx.width));
    }),
  );

  common(
    v.schedule
      .command('maint')
      .requiredOption('--machines <ids>', 'machine IDs, comma-separated (1 to 100)')
      .requiredOption('--sdate <when>', 'start: epoch seconds, or a date like 2026-12-01T10:00Z')
      .option('--duration <hours>', 'hours (at least 1; default 1)')
      .option('--category <c>', `one of ${CATEGORIES.join(', ')} (default other)`)
      .description('schedule a maintenance window on several machines at once; renters are e-mailed'),
    'openrig schedule maint --machines 1,2,3 --sdate 2026-12-01T10:00Z --duration 2 --category gpu',
  ).action(
    act(async (ctx, _args, o) => {
      const body: MaintBatchBody = {
        machine_ids: idList(o.machines, '--machines'),
        sdate: parseWhen(String(o.sdate)),
      };
      if (o.duration !== undefined) body.duration = numArg(o.duration, '--duration');
      if (o.category !== undefined) body.maintenance_category = String(o.category) as MaintenanceCategory;
      let results: MaintBatchEntry[];
      try {
        results = (await ctx.client.scheduleMaintenanceBatch(body)).results ?? [];
      } catch (err) {
        // No machine was the caller's: the 400 still lists why, entry by entry.
        const b = err instanceof ApiError ? (err.body as { results?: MaintBatchEntry[] }) : undefined;
        if (!ctx.raw && Array.isArray(b?.results)) ctx.out(resultsTable(b.results, ctx.width));
        throw err;
      }
      if (ctx.raw) ctx.printRaw();
      else ctx.out(resultsTable(results, ctx.width));
      const failed = results.filter((r) => !r.success).length;
      if (failed > 0) {
        ctx.err(`openrig: ${failed} of ${results.length} machines were not scheduled\n`);
        process.exitCode = 1;
      }
    }),
  );

  common(
    v.show
      .command('maints')
      .option('--machines <ids>', 'only these machine IDs, comma-separated')
      .description('list scheduled maintenance windows'),
    'openrig show maints\nopenrig show maints --machines 1,2',
  ).action(
    act(async (ctx, _a, o) => {
      const rows = await ctx.client.listMaintenances(
        o.machines === undefined ? undefined : idList(o.machines, '--machines'),
      );
      if (ctx.raw) return ctx.printRaw();
      if (rows.length === 0) return ctx.out('No maintenance scheduled.\n');
      ctx.out(maintsTable(rows, ctx.now(), ctx.width));
      // The first column is the window's own ID; cancelling names the machine.
      ctx.out(
        'Cancel a window with: openrig cancel maint MACHINE_ID (the Machine column, not the window ID)\n',
      );
    }),
  );

  common(
    v.cancel
      .command('maint')
      .argument('<machine-ids...>', 'machine IDs')
      .description('cancel the scheduled maintenance of machines'),
    'openrig cancel maint 7\nopenrig cancel maint 7 8 9',
  ).action(
    act(async (ctx, [ids]) => {
      const list = (ids as string[]).flatMap((x) => idList(x, 'machine ID'));
      if (list.length === 1) {
        const r = await ctx.client.cancelMaintenance(list[0]!);
        if (ctx.raw) return ctx.printRaw();
        return ctx.out(
          `machine ${list[0]}: ${typeof r.canceled === 'number' ? `${r.canceled} maintenance window(s) cancelled` : 'maintenance cancelled'}\n`,
        );
      }
      let results: CancelEntry[];
      try {
        results =
          ((await ctx.client.cancelMaintenanceBatch(list)) as { results?: CancelEntry[] }).results ?? [];
      } catch (err) {
        const b = err instanceof ApiError ? (err.body as { results?: CancelEntry[] }) : undefined;
        if (!ctx.raw && Array.isArray(b?.results)) ctx.out(cancelTable(b.results, ctx.width));
        throw err;
      }
      if (ctx.raw) return ctx.printRaw();
      ctx.out(cancelTable(results, ctx.width));
      const failed = results.filter((r) => !r.success).length;
      if (failed > 0) {
        ctx.err(`openrig: ${failed} of ${results.length} machines failed\n`);
        process.exitCode = 1;
      }
    }),
  );
}

interface CancelEntry {
  success: boolean;
  machine_id: number;
  canceled?: number;
  error?: string;
  msg?: string;
}

function cancelTable(rows: CancelEntry[], maxWidth?: number): string {
  return table(
    rows,
    [
      { header: 'Machine', get: (r) => str(r.machine_id), align: 'right' },
      { header: 'Result', get: (r) => (r.success ? 'cancelled' : `failed: ${str(r.error)}`) },
      { header: 'Windows', get: (r) => (r.success ? str(r.canceled ?? '-') : '-'), align: 'right' },
      { header: 'Message', get: (r) => str(r.msg ?? ''), shrink: true },
    ],
    maxWidth,
  );
}

function positive(v: unknown, what: string, zeroOk = false): number {
  const n = numArg(v, what);
  if (n < 0 || (!zeroOk && n === 0))
    throw new UsageError(`${what} must be ${zeroOk ? '0 or more' : 'positive'}`);
  return n;
}

/**
 * What a time may be written as: epoch seconds, a date, or a date and time with an optional zone
 * (Z or ±HH:MM; none is UTC). Date.parse alone would also take text like "-5" or "Jan 15 2027"
 * as some date in the local zone.
 */
const WHEN_FORMS = /^(\d+(\.\d+)?|\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2})?(Z|[+-]\d{2}:\d{2})?)?)$/;

/** Epoch seconds as typed, or an ISO date/time (a date without a zone is UTC). */
export function parseWhen(s: string, what = '--sdate'): number {
  if (/^\d+(\.\d+)?$/.test(s.trim())) return Number(s);
  let iso = s.trim();
  if (!WHEN_FORMS.test(iso))
    throw new UsageError(`${what}: "${s}" is neither epoch seconds nor a date like 2026-12-01T10:00Z`);
  if (/^\d{4}-\d{2}-\d{2}$/.test(iso)) iso += 'T00:00Z';
  else if (/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2})?$/.test(iso)) iso = iso.replace(' ', 'T') + 'Z';
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms))
    throw new UsageError(`${what}: "${s}" is neither epoch seconds nor a date like 2026-12-01T10:00Z`);
  return Math.floor(ms / 1000);
}

function resultsTable(rows: MaintBatchEntry[], maxWidth?: number): string {
  return table(
    rows,
    [
      { header: 'Machine', get: (r) => str(r.machine_id), align: 'right' },
      { header: 'Result', get: (r) => (r.success ? 'scheduled' : `failed: ${str(r.error)}`) },
      {
        header: 'Renters notified',
        get: (r) => (r.success ? str(r.notifications_sent ?? 0) : '-'),
        align: 'right',
      },
      { header: 'Message', get: (r) => str(r.msg ?? ''), shrink: true },
    ],
    maxWidth,
  );
}

const DAY_S = 86_400;

/** A UTC day number (days since 1970-01-01) as YYYY-MM-DD. */
export function dayDate(day: number): string {
  return new Date(day * DAY_S * 1000).toISOString().slice(0, 10);
}

/**
 * The UTC day (days since 1970-01-01) that a WHEN falls in: `today`, `yesterday`, a date, an ISO
 * time or epoch seconds (as `parseWhen` reads them).
 */
export function parseDay(s: string, what: string, nowMs: number): number {
  const today = Math.floor(nowMs / 1000 / DAY_S);
  const word = s.trim().toLowerCase();
  if (word === 'today') return today;
  if (word === 'yesterday') return today - 1;
  const notADay = () =>
    new UsageError(
      `${what}: "${s}" is not a day: give a date like 2026-11-01, an ISO time, epoch seconds, today or yesterday`,
    );
  let epochS: number;
  try {
    epochS = parseWhen(s, what);
  } catch {
    throw notADay();
  }
  const day = Math.floor(epochS / DAY_S);
  if (day < 0) throw new UsageError(`${what}: "${s}" is before 1970-01-01`);
  return day;
}

/**
 * The days an earnings report covers: with neither flag, the current period (this UTC month
 * through today, as the server has it: a host who started today sees today, not an empty
 * yesterday); --from alone runs through today; --to alone is that one day.
 */
export function earningsDays(o: { from?: string; to?: string }, nowMs: number): { from: number; to: number } {
  const today = Math.floor(nowMs / 1000 / DAY_S);
  const from = o.from === undefined ? undefined : parseDay(o.from, '--from', nowMs);
  const to = o.to === undefined ? undefined : parseDay(o.to, '--to', nowMs);
  const now = new Date(nowMs);
  const monthStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1) / 1000 / DAY_S;
  const range = {
    from: from ?? to ?? monthStart,
    to: to ?? today,
  };
  if (range.from > range.to)
    throw new UsageError(
      `--from ${dayDate(range.from)} is after ${to === undefined ? 'today' : '--to'} ${dayDate(range.to)}`,
    );
  return range;
}

/** Amounts earned are money, not rates: whole cents. */
const money = (n: unknown) => fmtUsd(n, 2);

/** A per-day table, a per-machine table, then the total line (compute is GPU time, disk storage). */
export function earningsReport(r: MachineEarnings, maxWidth?: number): string {
  const days = table(
    r.per_day ?? [],
    [
      { header: 'Day (UTC)', get: (d) => str(d.date) },
      { header: 'Compute', get: (d) => money(d.gpu_earn), align: 'right' },
      { header: 'Disk', get: (d) => money(d.sto_earn), align: 'right' },
      { header: 'Total', get: (d) => money(d.earn), align: 'right' },
    ],
    maxWidth,
  );
  const machines =
    (r.per_machine ?? []).length === 0
      ? 'No machines.\n'
      : table(
          r.per_machine,
          [
            { header: 'Machine', get: (m) => str(m.machine_id), align: 'right' },
            { header: 'Compute', get: (m) => money(m.gpu_earn), align: 'right' },
            { header: 'Disk', get: (m) => money(m.sto_earn), align: 'right' },
            { header: 'Total', get: (m) => money(m.earn), align: 'right' },
          ],
          maxWidth,
        );
  const s = r.summary;
  const period = r.sday === r.eday ? dayDate(r.sday) : `${dayDate(r.sday)} to ${dayDate(r.eday)}`;
  const total = `Total ${period}: ${money(s.total_earn)} (compute ${money(s.total_gpu)}, disk ${money(s.total_stor)})`;
  return `${days}\n${machines}\n${total}\n`;
}
