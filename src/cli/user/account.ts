// login | logout | show user | set account.
import type { Command } from 'commander';
import type { AccountSettingsBody, User } from '../../contract/api-types.js';
import { act, CliFailure, common, UsageError, type Ctx } from './context.js';
import { OpenrigClient } from '../../client/client.js';
import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { configPath, removeConfig, updateConfig } from '../config-file.js';
import { askHidden } from '../prompt.js';
import { fmtUsd, keyValues, relativeTime, str } from '../output.js';
import { identityCandidates, inSshDir, matchIdentity, tildePath } from './ssh-identity.js';

export function registerAccountCommands(program: Command, show: Command, set: Command): void {
  common(
    program
      .command('login')
      .option('--no-verify', 'store without asking the server whether the key works')
      .option('--email <email>', 'sign in with e-mail, password and 2FA, and store a fresh API key')
      .option('--password-stdin', 'with --email: read the password from standard input')
      .option('--method <method>', 'with --email: the 2FA method, totp, email or sms (default: the primary)')
      .option('--code <code>', 'with --email: the 2FA code (asked for on a terminal otherwise)')
      .option('--backup-code <code>', 'with --email: sign in with a backup code instead')
      .description('store the server URL and API key in ~/.config/openrig/ (mode 0600)'),
    'openrig login --url https://openrig.example.com --api-key or_abc123…\nopenrig login --url https://openrig.example.com --email me@example.com',
  ).action(
    act(
      async (ctx, _a, o) => {
        let who = '';
        let apiKey = ctx.apiKey ?? undefined;
        if (typeof o.email === 'string') {
          const r = await signInForKey(ctx, o.email, o);
          apiKey = r.key;
          who = ` as ${o.email}; new API key ${r.id} stored`;
        } else if (!apiKey) {
          throw new UsageError('login needs --api-key KEY, or --email E to sign in with a password');
        } else if (o.verify !== false) {
          // A typo should fail here, not at the next command.
          const u = await ctx.client.currentUser();
          who = ` as ${u.email}`;
        }
        // A registered key found outside ~/.ssh (the demo key of a `serve --demo` started here) is
        // remembered, so `openrig ssh` finds it from any directory.
        const found = o.verify === false || ctx.raw ? null : await registeredIdentity(ctx, apiKey);
        const p = updateConfig(
          {
            url: ctx.url,
            api_key: apiKey,
            session_key: undefined,
            session_url: undefined,
            session_api_key_sha256: undefined,
            ssh_identity: found && !inSshDir(found, ctx.env) ? found : undefined,
          },
          ctx.env,
          (e) => ctx.err(`openrig: warning: ${e.message.replace(/; fix it.*$/, '')}; replacing it\n`),
        );
        if (ctx.raw) return ctx.printRaw();
        ctx.out(`Logged in to ${ctx.url}${who}. Saved to ${p} (mode 0600).\n`);
        if (found)
          ctx.out(`openrig ssh logs in with ${tildePath(found, ctx.env)} (registered on the account).\n`);
      },
      { needsKey: false, brokenConfigOk: true },
    ),
  );

  common(
    program
      .command('logout')
      .option('--everywhere', 'end every session of the account on the server (CLI and browser) first')
      .description('end the stored 2FA session on the server and forget the stored URL, API key and session'),
    'openrig logout\nopenrig logout --everywhere',
  ).action(
    act(
      async (ctx, _a, o) => {
        if (o.everywhere) {
          if (!ctx.apiKey) throw new CliFailure('--everywhere needs a credential: pass --api-key KEY');
          const r = await ctx.client.logoutEverywhere();
          ctx.out(`Ended ${r.sessions_ended} session${r.sessions_ended === 1 ? '' : 's'} on ${ctx.url}.\n`);
        } else if (ctx.client.usingSession) {
          // The stored session ends on the server too; forgetting it locally is not enough.
          await ctx.client.logout().catch((e: unknown) => {
            ctx.err(`openrig: warning: the server did not end the session: ${(e as Error).message}\n`);
          });
        }
        const removed = removeConfig(ctx.env);
        ctx.out(removed ? `Removed ${configPath(ctx.env)}.\n` : 'Nothing stored.\n');
      },
      { needsKey: false, brokenConfigOk: true },
    ),
  );

  common(show.command('user').description('show your account'), 'openrig show user').action(
    act(async (ctx) => {
      const u = await ctx.client.currentUser();
      if (ctx.raw) return ctx.printRaw();
      ctx.out(userDetail(u, ctx.now()));
    }),
  );

  let account = set
    .command('account')
    .option('--fullname <name>', 'your name ("" clears it)')
    .option('--balance-threshold <usd>', 'the balance.low alert: at or below this many dollars, or off');
  for (const [flag, what] of BILLING_FLAGS)
    account = account.option(`--${flag} <text>`, `${what} ("" clears it)`);
  common(
    account
      .description(
        'change your name, billing address or balance alert (the e-mail address, phone number and password are not changed here)',
      )
      .addHelpText(
        'after',
        '\nOnly what is given changes. The balance alert is the balance.low event (webhooks and\n' +
          '`show events`); no e-mail is sent for it.',
      ),
    'openrig set account --fullname "Ada Lovelace" --billing-city London --billing-country GB\nopenrig set account --balance-threshold 10\nopenrig set account --balance-threshold off',
  ).action(
    act(async (ctx, _a, o) => {
      const r = await ctx.client.updateAccount(accountSettingsBody(o as Record<string, string | undefined>));
      if (ctx.raw) return ctx.printRaw();
      ctx.out(`${r.msg}\n${userDetail(r.user, ctx.now())}`);
    }),
  );
}

/** The billing address flags of `set account`, each with the field it sets. */
const BILLING_FLAGS: [string, string, keyof AccountSettingsBody][] = [
  ['billing-line1', 'billing address, first line', 'billaddress_line1'],
  ['billing-line2', 'billing address, second line', 'billaddress_line2'],
  ['billing-city', 'billing address, city', 'billaddress_city'],
  ['billing-zip', 'billing address, postal code', 'billaddress_zip'],
  ['billing-country', 'billing address, country', 'billaddress_country'],
  ['billing-taxinfo', 'tax number (VAT ID) printed with the billing address', 'billaddress_taxinfo'],
];

const camel = (flag: string) => flag.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

/** The body of `set account` from its options; a usage error when none is given or one is bad. */
export function accountSettingsBody(o: Record<string, string | undefined>): AccountSettingsBody {
  const body: AccountSettingsBody = {};
  if (o.fullname !== undefined) body.fullname = o.fullname;
  for (const [flag, , field] of BILLING_FLAGS) {
    const v = o[camel(flag)];
    if (v !== undefined) (body as Record<string, unknown>)[field] = v === '' ? null : v;
  }
  if (o.balanceThreshold !== undefined) {
    const v = o.balanceThreshold.trim();
    if (/^(off|none)$/i.test(v)) body.balance_threshold_enabled = false;
    else {
      const n = Number(v.replace(/^\$/, ''));
      if (v === '' || !Number.isFinite(n) || n < 0)
        throw new UsageError(
          `--balance-threshold must be a number of dollars (0 or more) or off, not "${v}"`,
        );
      body.balance_threshold_enabled = true;
      body.balance_threshold = n;
    }
  }
  if (Object.keys(body).length === 0)
    throw new UsageError(
      `nothing to change: give --fullname, --balance-threshold or ${BILLING_FLAGS.map(([f]) => `--${f}`).join(', ')}`,
    );
  return body;
}

/** The private key (file) whose public half is registered on the account, or null. */
async function registeredIdentity(ctx: Ctx, apiKey: string): Promise<string | null> {
  const candidates = identityCandidates(ctx.env);
  if (candidates.length === 0) return null;
  try {
    const c = new OpenrigClient({ url: ctx.url, apiKey });
    const keys = (await c.listSshKeys()).map((k) => String(k.ssh_key ?? k.public_key ?? ''));
    return matchIdentity(candidates, keys)?.file ?? null;
  } catch {
    return null; // a key without the permission to list SSH keys still logs in
  }
}

export function userDetail(u: User, nowMs: number): string {
  const pairs: [string, string][] = [
    ['ID', str(u.id)],
    ['Email', str(u.email) + (u.email_verified === false ? ' (not verified)' : '')],
    ['Name', str(u.full_name)],
    ['Balance', fmtUsd(u.balance ?? u.credit, 2)],
    ['2FA', str(u.tfa_status)],
  ];
  const address = billingAddress(u);
  if (address) pairs.push(['Billing address', address]);
  if (u.balance_threshold_enabled === true)
    pairs.push(['Balance alert', `at or below ${fmtUsd(u.balance_threshold, 2)}`]);
  else if (u.balance_threshold_enabled === false) pairs.push(['Balance alert', 'off']);
  if (u.team_id) pairs.push(['Team', str(u.team_id)]);
  if (typeof u.created_at === 'number') pairs.push(['Member since', relativeTime(u.created_at, nowMs)]);
  return keyValues(pairs);
}

/** The billing address on one line ("12 St James Sq, London SW1Y 4JH, GB; tax GB123"), or ''. */
export function billingAddress(u: User): string {
  const city = [u.billaddress_city, u.billaddress_zip].filter(Boolean).join(' ');
  const parts = [u.billaddress_line1, u.billaddress_line2, city, u.billaddress_country].filter(Boolean);
  const tax = u.billaddress_taxinfo ? `tax ${u.billaddress_taxinfo}` : '';
  return [parts.join(', '), tax].filter(Boolean).join('; ');
}

/**
 * Password, then the second factor, then a fresh API key made with the browser-style session of
 * that sign-in, which is ended right after: a lost key is never a lock-out.
 */
async function signInForKey(
  ctx: Ctx,
  email: string,
  o: Record<string, unknown>,
): Promise<{ id: number; key: string }> {
  const c = new OpenrigClient({ url: ctx.url });
  const password = o.passwordStdin
    ? readFileSync(0, 'utf8').replace(/\r?\n$/, '')
    : (ctx.env.OPENRIG_PASSWORD ?? (await ask('Password: ')));
  if (!password) throw new UsageError('no password: use --password-stdin, OPENRIG_PASSWORD, or a terminal');
  const first = await c.passwordLogin(email, password);
  if (first.tfa_required) {
    const secret = first.tfa_secret!;
    const methods = first.methods ?? [];
    if (typeof o.backupCode === 'string') {
      await c.request('POST', '/api/v0/tfa/', { body: { backup_code: o.backupCode, secret } });
    } else {
      const chosen =
        (typeof o.method === 'string' ? methods.find((m) => m.method === o.method) : undefined) ??
        methods.find((m) => m.is_primary) ??
        methods[0];
      const kind = typeof o.method === 'string' ? o.method : (chosen?.method ?? 'email');
      let codeSecret = secret;
      if (kind === 'email' || kind === 'sms') {
        const sent = await c.request<{ secret: string }>('POST', `/api/v0/tfa/${kind}/`, {
          body: kind === 'sms' && chosen ? { secret, tfa_method_id: chosen.id } : { secret },
        });
        codeSecret = sent.secret;
        ctx.err(`A code was sent by ${kind === 'email' ? 'e-mail' : 'SMS'}.\n`);
      }
      const code = typeof o.code === 'string' ? o.code : (await ask(`${kind} code: `)).trim();
      if (!code) throw new UsageError('no 2FA code: pass --code CODE or run on a terminal');
      await c.request('POST', '/api/v0/tfa/', {
        body: {
          tfa_method: kind,
          code,
          secret: codeSecret,
          ...(kind === 'totp' && chosen ? { tfa_method_id: chosen.id } : {}),
        },
      });
    }
  }
  const cookie = c.lastCookie;
  if (!cookie) throw new CliFailure('the server did not start a session for this sign-in');
  const headers = c.withCookie(cookie);
  const made = await c.request<{ id: number; key: string }>('POST', '/api/v0/auth/apikeys/', {
    body: { name: `cli ${hostname()} ${new Date().toISOString().slice(0, 10)}` },
    headers,
  });
  await c.request('POST', '/api/v0/users/logout/', { body: {}, headers }).catch(() => undefined);
  return { id: made.id, key: made.key };
}

/** Asks on a terminal without echoing the answer, which is kept exactly as typed; '' without one. */
async function ask(q: string): Promise<string> {
  if (!process.stdin.isTTY || !process.stderr.isTTY) return '';
  return askHidden(q);
}
