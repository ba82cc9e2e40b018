// openrig quotas show|set|clear|keys|key-budget (docs/quotas.md): a team's limits and each
// member's (GPUs and $/hour running at once, a month budget), and the month budgets of your API
// keys; `transfer credit RECIPIENT USD` and `show subaccounts`, as the official CLI has them.
import type { Command } from 'commander';
import type { FromSchema } from 'json-schema-to-ts';
import type * as C from '../../contract/schemas/quotas.js';
import { DASH, table } from '../output.js';
import { act, common, intArg, numArg, UsageError, type Ctx, type OptValue } from './context.js';

type QuotasReply = FromSchema<typeof C.quotasReply>;
type KeyLimitsReply = FromSchema<typeof C.keyLimitsReply>;
type Scope = NonNullable<QuotasReply['team']>;

const V0 = '/api/v0';
const money = (n: number | null | undefined) => (n === null || n === undefined ? DASH : `$${n.toFixed(2)}`);
const limit = (n: number | null | undefined, fmt: (v: number) => string) =>
  n === null || n === undefined ? DASH : fmt(n);

/** The team's row then one per member: each limit beside what is used against it. */
export function quotasTable(r: QuotasReply, maxWidth?: number): string {
  const rows: { who: string; s: Scope }[] = [{ who: `team ${r.team_id ?? ''}`.trim(), s: r.team ?? {} }];
  for (const m of r.members ?? []) rows.push({ who: `${m.email ?? m.user_id} (${m.role ?? ''})`, s: m });
  return table(
    rows,
    [
      { header: 'Who', get: (x) => x.who, shrink: true },
      {
        header: 'GPUs',
        get: (x) => `${x.s.running_gpus ?? 0} / ${limit(x.s.max_gpus, String)}`,
        align: 'right',
      },
      {
        header: '$/h',
        get: (x) => `${money(x.s.running_dph)} / ${limit(x.s.max_dph, (v) => money(v))}`,
        align: 'right',
      },
      {
        header: 'Month',
        get: (x) => `${money(x.s.month_spend)} / ${limit(x.s.month_budget, (v) => money(v))}`,
        align: 'right',
      },
    ],
    maxWidth,
  );
}

/** "none" (or "null") clears a limit; else a number, at least 0. */
function limitArg(v: OptValue, what: string, whole = false): number | null | undefined {
  if (v === undefined) return undefined;
  const s = String(v).trim().toLowerCase();
  if (s === 'none' || s === 'null') return null;
  const n = whole ? intArgOrZero(s, what) : numArg(s, what);
  if (n < 0) throw new UsageError(`${what} must be 0 or more, or none`);
  return n;
}

function intArgOrZero(s: string, what: string): number {
  return s === '0' ? 0 : intArg(s, what);
}

/** --member: an id or an e-mail. */
function memberFields(v: OptValue): { user_id?: number; email?: string } {
  if (v === undefined) return {};
  const s = String(v).trim();
  return /^\d+$/.test(s) ? { user_id: intArg(s, '--member') } : { email: s };
}

function teamField(v: OptValue): { team_id?: number } {
  return v === undefined ? {} : { team_id: intArg(v, '--team') };
}

function printQuotas(ctx: Ctx, r: QuotasReply): void {
  if (ctx.raw) return ctx.printRaw();
  if (r.msg) ctx.out(`${r.msg}\n`);
  ctx.out(`Team ${r.team_id} ${r.team_name ? `(${r.team_name}) ` : ''}in ${r.month}: used / limit\n`);
  ctx.out(quotasTable(r, ctx.width));
}

function printKeys(ctx: Ctx, r: KeyLimitsReply): void {
  if (ctx.raw) return ctx.printRaw();
  if (r.msg) ctx.out(`${r.msg}\n`);
  ctx.out(
    table(
      r.keys ?? [],
      [
        { header: 'Key', get: (k) => String(k.api_key_id), align: 'right' },
        { header: 'Name', get: (k) => k.name || DASH, shrink: true },
        { header: `Spent (${r.month})`, get: (k) => money(k.month_spend), align: 'right' },
        { header: 'Budget', get: (k) => money(k.month_budget), align: 'right' },
      ],
      ctx.width,
    ),
  );
}

export function registerQuotaCommands(program: Command, show: Command): void {
  const quotas = program
    .command('quotas')
    .description("a team's limits and its members' (GPUs, $/hour, month budget), your keys' budgets");
  common(
    quotas
      .command('show')
      .option('--team <id>', 'the team (default: the team of the key, else the one you own or manage)')
      .description("a team's limits and each member's, beside what runs now and this month's spend"),
    'openrig quotas show --team 3',
  ).action(
    act(async (ctx, _a, opts) => {
      const q = opts.team === undefined ? '' : `?team_id=${intArg(opts.team, '--team')}`;
      printQuotas(ctx, await ctx.client.request<QuotasReply>('GET', `${V0}/quotas/${q}`));
    }),
  );
  common(
    quotas
      .command('set')
      .option('--team <id>', 'the team (default: the team of the key, else the one you own or manage)')
      .option('--member <email-or-id>', "a member's own limits (default: the team's)")
      .option('--max-gpus <n>', 'the most GPUs running at once, or none')
      .option('--max-dph <usd>', 'the most $/hour running at once, or none')
      .option('--month-budget <usd>', 'USD per calendar month (UTC), or none')
      .description("set a team's limits or a member's (owners and managers); the others stay"),
    'openrig quotas set --member bob@example.com --max-gpus 2 --month-budget 500',
  ).action(
    act(async (ctx, _a, opts) => {
      const body = {
        ...teamField(opts.team),
        ...memberFields(opts.member),
        ...dropUndefined({
          max_gpus: limitArg(opts.maxGpus, '--max-gpus', true),
          max_dph: limitArg(opts.maxDph, '--max-dph'),
          month_budget: limitArg(opts.monthBudget, '--month-budget'),
        }),
      };
      if (!('max_gpus' in body || 'max_dph' in body || 'month_budget' in body))
        throw new UsageError('give --max-gpus, --max-dph or --month-budget (none clears one)');
      printQuotas(ctx, await ctx.client.request<QuotasReply>('PUT', `${V0}/quotas/`, { body }));
    }),
  );
  common(
    quotas
      .command('clear')
      .option('--team <id>', 'the team')
      .option('--member <email-or-id>', "a member's limits (default: the team's)")
      .description('remove every limit of a team or of a member (owners and managers)'),
    'openrig quotas clear --member 7',
  ).action(
    act(async (ctx, _a, opts) => {
      const body = { ...teamField(opts.team), ...memberFields(opts.member) };
      printQuotas(ctx, await ctx.client.request<QuotasReply>('DELETE', `${V0}/quotas/`, { body }));
    }),
  );
  common(
    quotas.command('keys').description("your API keys' month budgets and what their instances spent"),
    'openrig quotas keys',
  ).action(
    act(async (ctx) => printKeys(ctx, await ctx.client.request<KeyLimitsReply>('GET', `${V0}/quotas/keys/`))),
  );
  common(
    quotas
      .command('key-budget')
      .argument('<key-id>', 'one of your API keys (openrig quotas keys)')
      .argument('<usd>', 'USD per calendar month, or none')
      .description("set (or with none remove) an API key's month budget"),
    'openrig quotas key-budget 12 100',
  ).action(
    act(async (ctx, args) => {
      const id = intArg(args[0], 'KEY_ID');
      const budget = limitArg(args[1], 'USD');
      printKeys(
        ctx,
        await ctx.client.request<KeyLimitsReply>('PUT', `${V0}/quotas/keys/${id}/`, {
          body: { month_budget: budget ?? null },
        }),
      );
    }),
  );

  common(
    show.command('subaccounts').description('the accounts you made with create subaccount'),
    'openrig show subaccounts',
  ).action(
    act(async (ctx) => {
      const r = await ctx.client.request<{
        users?: { id?: number; email?: string; username?: string; balance?: number; host_only?: boolean }[];
      }>('GET', `${V0}/subaccounts?owner=me`);
      if (ctx.raw) return ctx.printRaw();
      ctx.out(
        table(
          r.users ?? [],
          [
            { header: 'ID', get: (u) => String(u.id), align: 'right' },
            { header: 'E-mail', get: (u) => u.email ?? DASH, shrink: true },
            { header: 'Username', get: (u) => u.username || DASH },
            { header: 'Balance', get: (u) => money(u.balance), align: 'right' },
            { header: 'Host only', get: (u) => (u.host_only ? 'yes' : 'no') },
          ],
          ctx.width,
        ),
      );
    }),
  );
  const transfer = program.command('transfer').description('move credit to another account');
  common(
    transfer
      .command('credit')
      .argument('<recipient>', "the recipient's e-mail or account id")
      .argument('<usd>', 'how much')
      .description('move USD from your balance to another account (irreversible)'),
    'openrig transfer credit bob@example.com 25',
  ).action(
    act(async (ctx, args) => {
      const amount = numArg(args[1], 'USD');
      if (amount <= 0) throw new UsageError('USD must be more than 0');
      const r = await ctx.client.request<{ msg?: string; balance?: number }>(
        'PUT',
        `${V0}/commands/transfer_credit/`,
        { body: { sender: 'me', recipient: String(args[0]), amount } },
      );
      if (ctx.raw) return ctx.printRaw();
      ctx.out(`${r.msg ?? 'Sent'}; your balance is ${money(r.balance)}\n`);
    }),
  );
}

function dropUndefined<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
