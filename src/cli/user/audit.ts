// show audit-log [--limit N] and show ipaddrs (docs/security.md, "The audit log" and "Login
// addresses"): the account's recorded actions and sign-ins, and the addresses that used it.
import type { Command } from 'commander';
import type { AuditLogRow, IpAddrsReply } from '../../contract/api-types.js';
import { DASH, relativeTime, str, table } from '../output.js';
import { act, common, intArg, UsageError } from './context.js';

/** The most rows the server returns at once. */
const AUDIT_MAX = 1000;

/** `2026-11-23 14:00:05 UTC`: an audit trail is read to the second. */
export function utcSeconds(epochS: unknown): string {
  if (typeof epochS !== 'number' || !Number.isFinite(epochS)) return DASH;
  return new Date(epochS * 1000).toISOString().slice(0, 19).replace('T', ' ') + ' UTC';
}

const CREDENTIALS: Record<AuditLogRow['credential'], string> = {
  api_key: 'API key',
  instance_key: 'instance key',
  session_key: 'CLI session',
  browser_session: 'browser',
  password: 'password sign-in',
  login_secret: '2FA sign-in',
};

/** How the row's request was authenticated: `API key 12`, `CLI session`, `password sign-in`. */
export function credentialText(r: AuditLogRow): string {
  const name = CREDENTIALS[r.credential] ?? str(r.credential);
  return r.api_key_id === null ? name : `${name} ${r.api_key_id}`;
}

/** The args on one line: path parameters, `?query`, and the body's field names in braces. */
export function argsText(a: AuditLogRow['args'] | null | undefined): string {
  if (!a) return DASH;
  const parts: string[] = [];
  for (const [k, v] of Object.entries(a.path ?? {})) parts.push(`${k}=${v}`);
  const q = Object.entries(a.query ?? {}).flatMap(([k, v]) =>
    (Array.isArray(v) ? v : [v]).map((x) => `${k}=${x}`),
  );
  if (q.length) parts.push(`?${q.join('&')}`);
  if (a.body?.length) parts.push(`{${a.body.join(', ')}}`);
  return parts.length ? parts.join(' ') : DASH;
}

export function auditTable(rows: AuditLogRow[], maxWidth?: number): string {
  return table(
    rows,
    [
      { header: 'Time', get: (r) => utcSeconds(r.created_at) },
      { header: 'Address', get: (r) => str(r.ip_address), drop: 2 },
      { header: 'Credential', get: credentialText, drop: 1 },
      { header: 'Request', get: (r) => str(r.api_route), shrink: true },
      { header: 'Status', get: (r) => str(r.status), align: 'right' },
      { header: 'Args', get: (r) => argsText(r.args), shrink: true },
    ],
    maxWidth,
  );
}

export function ipaddrsTable(rows: IpAddrsReply['results'], nowMs: number, maxWidth?: number): string {
  return table(
    rows,
    [
      { header: 'Address', get: (r) => str(r.ip) },
      { header: 'First seen', get: (r) => utcSeconds(r.first_seen) },
      { header: 'Last seen', get: (r) => relativeTime(r.last_seen, nowMs) },
    ],
    maxWidth,
  );
}

export function registerAuditCommands(show: Command): void {
  common(
    show
      .command('audit-log')
      .option('--limit <n>', `the latest N entries (1 to ${AUDIT_MAX}; default ${AUDIT_MAX})`)
      .description("your account's actions and sign-ins, newest first (values sent are never kept)"),
    'openrig show audit-log --limit 20',
  ).action(
    act(async (ctx, _a, opts) => {
      let limit: number | undefined;
      if (opts.limit !== undefined) {
        limit = intArg(opts.limit, '--limit');
        if (limit > AUDIT_MAX) throw new UsageError(`--limit must be at most ${AUDIT_MAX}, not ${limit}`);
      }
      const rows = await ctx.client.auditLogs(limit);
      if (ctx.raw) return ctx.printRaw();
      ctx.out(Array.isArray(rows) && rows.length ? auditTable(rows, ctx.width) : 'No audit log entries\n');
    }),
  );
  common(
    show.command('ipaddrs').description('the addresses that signed in to your account or used its keys'),
    'openrig show ipaddrs',
  ).action(
    act(async (ctx) => {
      const r = await ctx.client.ipAddresses();
      if (ctx.raw) return ctx.printRaw();
      const rows = Array.isArray(r.results) ? r.results : [];
      ctx.out(rows.length ? ipaddrsTable(rows, ctx.now(), ctx.width) : 'No addresses recorded\n');
    }),
  );
}
