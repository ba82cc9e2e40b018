// tfa status|totp-setup|auth-new|activate|login|send-sms|send-email|delete|update|regen-codes
// (docs/two-factor.md). `tfa login` stores the returned session_key,
// which the client then sends as Bearer, falling back to the API key when the server says the
// session is gone (docs/api.md, "Authentication").
import { lazyRequire } from '../../contract/lazy-require.js';
import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import type { TfaMethodName, TfaVerification } from '../../contract/api-types.js';
import { OpenrigClient } from '../../client/client.js';
import { act, common, intArg, sha256, UsageError, type Ctx, type Opts, type OptValue } from './context.js';
import { configPath, updateConfig } from '../config-file.js';
import { keyValues, str } from '../output.js';
import { tfaMethodsTable } from './views.js';

// Loaded when a QR code is drawn, not by every command.
const qrcode = lazyRequire<{
  generate(text: string, opts: { small: boolean }, cb: (qr: string) => void): void;
}>('qrcode-terminal');

/** The provisioning URI as a QR code drawn with block characters (the service returns no image). */
export function qrText(uri: string): string {
  let out = '';
  qrcode().generate(uri, { small: true }, (qr) => (out = qr));
  return out.endsWith('\n') ? out : out + '\n';
}

const METHODS: TfaMethodName[] = ['sms', 'totp', 'email'];

function method(v: OptValue, allowed: readonly string[] = METHODS): TfaMethodName | undefined {
  if (v === undefined) return undefined;
  const s = String(v).toLowerCase();
  if (!allowed.includes(s)) throw new UsageError(`--method must be one of ${allowed.join(', ')}`);
  return s as TfaMethodName;
}

/** --method / --method-id / --secret / --backup-code: how a 2FA-protected call is verified. */
function verifyOpts(cmd: Command): Command {
  return cmd
    .argument('[code]', '6-digit code (authenticator app, SMS or e-mail)')
    .option('--method <m>', 'sms, totp or email: which method the code is from')
    .option('--method-id <id>', 'method ID (when you have several of one type; see tfa status)')
    .option('--secret <secret>', 'the secret printed by send-sms / send-email (SMS and e-mail codes)')
    .option('--backup-code <code>', 'a backup code (XXXX-XXXX-XXXX) instead of a code');
}

function verification(code: OptValue, o: Opts, defaultMethod?: TfaMethodName): TfaVerification {
  if (code === undefined && o.backupCode === undefined)
    throw new UsageError('give the 6-digit CODE, or --backup-code');
  const v: TfaVerification = {
    code: code === undefined ? undefined : String(code),
    backup_code: o.backupCode === undefined ? undefined : String(o.backupCode),
    secret: o.secret === undefined ? undefined : String(o.secret),
    tfa_method_id: o.methodId === undefined ? undefined : intArg(o.methodId, '--method-id'),
    tfa_method: method(o.method),
  };
  // A code without --secret can only be a TOTP code; with --secret the server's default (sms) holds.
  if (
    v.code !== undefined &&
    v.tfa_method === undefined &&
    v.secret === undefined &&
    v.tfa_method_id === undefined
  )
    v.tfa_method = defaultMethod;
  return v;
}

function printBackupCodes(ctx: Ctx, codes: string[] | undefined): void {
  if (!codes || codes.length === 0) return;
  ctx.out(
    `\nBackup codes (each works once; they are shown only now, store them safely):\n${codes.map((c) => `  ${c}`).join('\n')}\n`,
  );
}

export function registerTfaCommands(tfa: Command): void {
  common(
    tfa.command('status').description('show your 2FA methods and backup codes'),
    'openrig tfa status',
  ).action(
    act(async (ctx) => {
      const s = await ctx.client.tfaStatus();
      if (ctx.raw) return ctx.printRaw();
      ctx.out(
        keyValues([
          ['2FA', s.tfa_enabled ? 'enabled' : 'disabled'],
          ['Backup codes left', str(s.backup_codes_remaining)],
          [
            'May add a method',
            s.new_method_authorized ? 'yes (authorized)' : 'no (run: openrig tfa auth-new)',
          ],
        ]),
      );
      if (s.methods.length > 0) ctx.out('\n' + tfaMethodsTable(s.methods, ctx.now(), ctx.width));
    }),
  );

  common(
    tfa
      .command('totp-setup')
      .description('start adding an authenticator app: shows a QR code and the secret'),
    'openrig tfa totp-setup',
  ).action(
    act(async (ctx) => {
      const r = await ctx.client.tfaTotpSetup();
      if (ctx.raw) return ctx.printRaw();
      ctx.out('Scan this QR code with your authenticator app:\n\n');
      ctx.out(qrText(r.provisioning_uri));
      ctx.out(`\nOr enter the secret by hand: ${r.secret}\nURI: ${r.provisioning_uri}\n\n`);
      ctx.out(`Then confirm with a code from the app:\n  openrig tfa activate CODE --secret ${r.secret}\n`);
      ctx.out('(Adding a method needs a fresh authorization first: openrig tfa auth-new)\n');
    }),
  );

  common(
    tfa
      .command('auth-new')
      .argument('[code]', 'the code, to finish the authorization (with --secret)')
      .option('--method <m>', 'sms, totp or email: verify with this method (e-mail when you have none)')
      .option('--method-id <id>', 'method ID, when you have several of one type')
      .option('--secret <secret>', 'the secret printed by the first step')
      .option('--backup-code <code>', 'authorize with a backup code at once')
      .description('authorize adding a 2FA method (valid 30 minutes): sends a code, then checks it'),
    'openrig tfa auth-new                       # sends a code, prints SECRET\nopenrig tfa auth-new 123456 --secret SECRET',
  ).action(
    act(async (ctx, [code], o) => {
      if (code !== undefined) {
        if (o.secret === undefined)
          throw new UsageError('finishing needs --secret (printed by the first step)');
        const r = await ctx.client.tfaAuthorizeNewConfirm({ code: String(code), secret: String(o.secret) });
        if (ctx.raw) return ctx.printRaw();
        return ctx.out(authorizedLine(r.msg));
      }
      const r = await ctx.client.tfaAuthorizeNew({
        tfa_method: method(o.method),
        tfa_method_id: o.methodId === undefined ? undefined : intArg(o.methodId, '--method-id'),
        backup_code: o.backupCode === undefined ? undefined : String(o.backupCode),
      });
      if (ctx.raw) return ctx.printRaw();
      if (!r.secret) return ctx.out(authorizedLine(r.msg));
      ctx.out(
        `${r.msg ? `${r.msg}\n` : ''}Secret: ${r.secret}\nFinish with the code you received (or from your authenticator app):\n  openrig tfa auth-new CODE --secret ${r.secret}\n`,
      );
      const typed = await prompt('Code (or Enter to finish later): ');
      if (typed) {
        const c = await ctx.client.tfaAuthorizeNewConfirm({ code: typed, secret: r.secret });
        ctx.out(authorizedLine(c.msg));
      }
    }),
  );

  common(
    tfa
      .command('activate')
      .argument('<code>', 'a current code from the new method')
      .requiredOption(
        '--secret <secret>',
        'TOTP: the base32 secret from totp-setup; SMS: the secret from send-sms',
      )
      .option('--method <m>', 'totp or sms', 'totp')
      .option('--phone <e164>', 'SMS: the phone number, e.g. +15551234567')
      .option('--label <label>', 'a name for the method (at most 30 characters)')
      .description('add the 2FA method you set up (needs tfa auth-new within 30 minutes)'),
    'openrig tfa activate 123456 --secret JBSWY3DPEHPK3PXP --label phone',
  ).action(
    act(async (ctx, [code], o) => {
      const m = method(o.method, ['sms', 'totp']) as 'sms' | 'totp';
      if (m === 'sms' && o.phone === undefined) throw new UsageError('--method sms needs --phone');
      const r = await ctx.client.tfaConfirmNew({
        tfa_method: m,
        code: String(code),
        secret: String(o.secret),
        phone_number: o.phone === undefined ? undefined : String(o.phone),
        label: o.label === undefined ? undefined : String(o.label),
      });
      if (ctx.raw) return ctx.printRaw();
      ctx.out(`${str(r.msg ?? 'Method added')}\n`);
      printBackupCodes(ctx, r.backup_codes);
    }),
  );

  common(
    verifyOpts(tfa.command('login'))
      .option('--admin', 'request an admin session')
      .description('complete a 2FA login; later commands use the session'),
    'openrig tfa login 123456\nopenrig tfa send-email && openrig tfa login 654321 --method email --secret SECRET',
  ).action(
    act(async (ctx, [code], o) => {
      // The CLI flow: the API key itself is the Bearer, so the reply carries a session_key.
      const client = new OpenrigClient({ url: ctx.url, apiKey: ctx.apiKey });
      const v = verification(code, o, 'totp');
      const u = await client.tfaLogin({ ...v, admin: o.admin ? true : undefined });
      if (u.session_key && ctx.apiKey) {
        updateConfig(
          { session_key: u.session_key, session_url: ctx.url, session_api_key_sha256: sha256(ctx.apiKey) },
          ctx.env,
        );
      }
      if (ctx.raw) return ctx.out(client.lastRaw + '\n');
      ctx.out(
        `Logged in as ${u.email} with 2FA.${u.session_key ? ` The session is stored in ${configPath(ctx.env)} and used from now on.` : ''}\n`,
      );
      if (!u.session_key) ctx.err('openrig: warning: the server returned no session_key\n');
      if (u.backup_codes_remaining !== undefined) ctx.out(`${u.backup_codes_remaining} backup codes left.\n`);
      if (u.legacy_tfa_user)
        ctx.out('This account uses legacy 2FA: run openrig tfa regen-codes to get backup codes.\n');
    }),
  );

  common(
    tfa
      .command('send-sms')
      .option('--phone <e164>', 'phone number (when none is on the account)')
      .option('--method-id <id>', 'send to this SMS method')
      .option('--resend', 'send the code again (after an earlier send-sms)')
      .option('--secret <secret>', 'with --resend: the secret of the earlier send')
      .description('send a 2FA code by SMS; prints the secret to pass back with the code'),
    'openrig tfa send-sms\nopenrig tfa send-sms --resend',
  ).action(
    act(async (ctx, _a, o) => {
      const b = {
        phone_number: o.phone === undefined ? undefined : String(o.phone),
        tfa_method_id: o.methodId === undefined ? undefined : intArg(o.methodId, '--method-id'),
      };
      const r = o.resend
        ? await ctx.client.tfaResendSms({
            ...b,
            secret: o.secret === undefined ? undefined : String(o.secret),
          })
        : await ctx.client.tfaSendSms(b);
      if (ctx.raw) return ctx.printRaw();
      ctx.out(
        `${str(r.msg ?? 'Code sent')}\nSecret: ${r.secret}\n(pass it back with --secret ${r.secret})\n`,
      );
    }),
  );

  common(
    tfa
      .command('send-email')
      .description('send a 2FA code by e-mail; prints the secret to pass back with the code'),
    'openrig tfa send-email',
  ).action(
    act(async (ctx) => {
      const r = await ctx.client.tfaSendEmail();
      if (ctx.raw) return ctx.printRaw();
      ctx.out(
        `${str(r.msg ?? 'Code sent')}\nSecret: ${r.secret}\n(pass it back with --method email --secret ${r.secret})\n`,
      );
    }),
  );

  common(
    verifyOpts(tfa.command('delete'))
      .option('--target-id <id>', 'the method to remove (default: the one you verify with)')
      .description('remove a 2FA method (the last one disables 2FA)'),
    'openrig tfa delete 123456\nopenrig tfa delete --backup-code ABCD-EFGH-IJKL --target-id 3',
  ).action(
    act(async (ctx, [code], o) => {
      const v = verification(code, o, 'totp');
      const r = await ctx.client.tfaDelete({
        ...v,
        target_id: o.targetId === undefined ? undefined : intArg(o.targetId, '--target-id'),
      });
      if (ctx.raw) return ctx.printRaw();
      ctx.out(
        `${str(r.msg ?? 'Removed')}${r.remaining_methods !== undefined ? ` (${r.remaining_methods} methods left)` : ''}\n`,
      );
    }),
  );

  common(
    tfa
      .command('update')
      .option('--method-id <id>', 'the method to change')
      .option('--method <m>', 'sms or totp, when you have exactly one of that type')
      .option('--label <label>', 'new label (at most 30 characters)')
      .option('--primary', 'make it the primary method')
      .description('rename a 2FA method or make it primary'),
    'openrig tfa update --method-id 3 --label "work phone" --primary',
  ).action(
    act(async (ctx, _a, o) => {
      if (o.methodId === undefined && o.method === undefined)
        throw new UsageError('give --method-id or --method');
      if (o.label === undefined && !o.primary)
        throw new UsageError('nothing to change: give --label and/or --primary');
      const r = await ctx.client.tfaUpdate({
        tfa_method_id: o.methodId === undefined ? undefined : intArg(o.methodId, '--method-id'),
        tfa_method: method(o.method, ['sms', 'totp']) as 'sms' | 'totp' | undefined,
        label: o.label === undefined ? undefined : String(o.label),
        is_primary: o.primary ? true : undefined,
      });
      if (ctx.raw) return ctx.printRaw();
      ctx.out(`${str(r.msg ?? 'Updated')}\n`);
    }),
  );

  common(
    verifyOpts(tfa.command('regen-codes')).description('replace all backup codes with 10 new ones'),
    'openrig tfa regen-codes 123456',
  ).action(
    act(async (ctx, [code], o) => {
      const r = await ctx.client.tfaRegenBackupCodes(verification(code, o, 'totp'));
      if (ctx.raw) return ctx.printRaw();
      ctx.out(`${str(r.msg ?? 'New backup codes')}\n`);
      printBackupCodes(ctx, r.backup_codes);
    }),
  );
}

/** Asks on a terminal; returns '' at once when stdin is not one (scripts, tests). */
async function prompt(q: string): Promise<string> {
  if (!process.stdin.isTTY || !process.stdout.isTTY) return '';
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return (await rl.question(q)).trim();
  } finally {
    rl.close();
  }
}

/** What an authorization to add a method says: the server's message, else how long it lasts. */
export function authorizedLine(msg: unknown): string {
  return typeof msg === 'string' && msg !== ''
    ? `${msg}\n`
    : 'Authorized. You may add a method for the next 30 minutes.\n';
}
