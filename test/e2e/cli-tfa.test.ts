// TOTP enrolment and 2FA login through the built CLI against a real `serve`: authorize by e-mail
// code (read from the mail outbox file), totp-setup draws a QR code and prints the secret (and
// --raw gives the server's JSON), activate returns backup codes, regenerating them retires the
// whole old set, a backup code removes the last method, `tfa login` stores the session_key which then is the Bearer (users/current echoes
// the credential), and the CLI falls back to the API key on "Invalid user key" and on
// "Session expired. Please log in again.".
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/process.js';
import { cli, createUser, makeHome, startWorld, type CliWorld } from './cli-harness.js';

const SESSION_TTL_S = 25;
let w: CliWorld;
let home: string;
let apiKey: string;
const email = 'tfa-cli@example.com';
const PASSWORD = 'correct horse battery staple';
/** When `tfa login` ran: it used the code of the step after that moment's. */
let tfaLoginAt = 0;
const run = (args: string[]) => cli(home, args);
const cfgFile = () => path.join(home, '.config', 'openrig', 'config.json');
const cfg = () => JSON.parse(readFileSync(cfgFile(), 'utf8')) as Record<string, string>;

/** The newest verification code e-mailed to the user after `since` mails. */
async function mailedCode(since: number): Promise<string> {
  return waitFor(() => {
    let lines: string[];
    try {
      lines = readFileSync(path.join(w.data, 'mail-outbox.jsonl'), 'utf8').trim().split('\n');
    } catch {
      return undefined;
    }
    const mails = lines
      .map((l) => JSON.parse(l) as { to: string; subject: string; text: string })
      .filter((m) => m.to.includes(email));
    const fresh = mails.slice(since).filter((m) => /verification code/i.test(m.subject));
    return fresh.length > 0 ? /\b(\d{6})\b/.exec(fresh[fresh.length - 1]!.text)?.[1] : undefined;
  }, 'the e-mailed code');
}

function mailCount(): number {
  try {
    return readFileSync(path.join(w.data, 'mail-outbox.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .filter((l) => l.includes(email)).length;
  } catch {
    return 0;
  }
}

beforeAll(async () => {
  w = await startWorld({ OPENRIG_SESSION_TTL_S: String(SESSION_TTL_S) });
  apiKey = (await createUser(w, email, ['--password', PASSWORD])).api_key;
  home = makeHome();
  expect((await run(['login', '--url', w.url, '--api-key', apiKey])).code).toBe(0);
}, 60_000);
afterAll(() => w?.stop());

describe('TOTP enrolment and 2FA login', { timeout: 90_000 }, () => {
  let base32: string;
  let backupCodes: string[];

  it('status says disabled and that adding a method needs authorization', async () => {
    const r = await run(['tfa', 'status']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^2FA:\s+disabled$/m);
    expect(r.stdout).toMatch(/^May add a method:\s+no/m);
  });

  it('auth-new sends an e-mail code (no methods yet) and auth-new CODE --secret authorizes', async () => {
    const before = mailCount();
    const r = await run(['tfa', 'auth-new']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Code e-mailed to t\*\*\*@example\.com\n/); // where it went
    const secret = /^Secret: (\S+)$/m.exec(r.stdout)![1]!;
    expect(r.stdout).toContain(`openrig tfa auth-new CODE --secret ${secret}`);
    const wrong = await run(['tfa', 'auth-new', '000000', '--secret', secret]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/^openrig: \S/);
    const ok = await run(['tfa', 'auth-new', await mailedCode(before), '--secret', secret]);
    expect(ok.code).toBe(0);
    // The server's message says how long it lasts; it is printed once, not followed by a second line.
    expect(ok.stdout).toBe('Authorized: you may add a 2FA method within the next 30 minutes\n');
    expect((await run(['tfa', 'status'])).stdout).toMatch(/^May add a method:\s+yes/m);
  }, 60_000);

  it('totp-setup draws the provisioning URI as a QR code and prints the secret', async () => {
    // --raw prints the server's reply: a fresh base32 secret and its otpauth URI, no method added.
    const raw = JSON.parse((await run(['tfa', 'totp-setup', '--raw'])).stdout);
    expect(raw.secret).toMatch(/^[A-Z2-7]+=*$/);
    expect(raw.provisioning_uri).toMatch(/^otpauth:\/\/totp\//);
    const r = await run(['tfa', 'totp-setup']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/[█▀▄]{10,}/);
    base32 = /^Or enter the secret by hand: ([A-Z2-7]+=*)$/m.exec(r.stdout)![1]!;
    expect(r.stdout).toMatch(/^URI: otpauth:\/\/totp\//m);
    expect(r.stdout).toContain(`openrig tfa activate CODE --secret ${base32}`);
  });

  it('activate with a code from the app adds the method and prints 10 backup codes once', async () => {
    const code = new TOTP({ secret: base32 }).generate();
    const r = await run(['tfa', 'activate', code, '--secret', base32, '--label', 'phone']);
    expect(r.code).toBe(0);
    backupCodes = [...r.stdout.matchAll(/^\s+(\S{4}-\S{4}-\S{4})$/gm)].map((m) => m[1]!);
    expect(backupCodes.length).toBe(10);
    const s = await run(['tfa', 'status']);
    expect(s.stdout).toMatch(/^2FA:\s+enabled$/m);
    expect(s.stdout).toMatch(/^Backup codes left:\s+10$/m);
    expect(s.stdout).toMatch(/^\s*\d+\s+totp\s+phone\s+-\s+yes\s+0\s+no\s/m);
    expect(JSON.parse((await run(['tfa', 'status', '--raw'])).stdout)).toMatchObject({
      tfa_enabled: true,
      backup_codes_remaining: 10,
      methods: [{ method: 'totp', label: 'phone', is_primary: true }],
    });
  });

  it('a wrong code: the server msg on stderr, exit 1, nothing stored', async () => {
    const r = await run(['tfa', 'login', '000000']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^openrig: \S/);
    expect(cfg().session_key).toBeUndefined();
  });

  it('tfa login stores the session_key, and later commands send it as the Bearer', async () => {
    // The code of the next 30-second step: the activation's step may not be used twice.
    tfaLoginAt = Date.now();
    const code = new TOTP({ secret: base32 }).generate({ timestamp: tfaLoginAt + 30_000 });
    const r = await run(['tfa', 'login', code]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Logged in as ${email} with 2FA`);
    const c = cfg();
    expect(c.session_key).toMatch(/^ors_/);
    const me = await run(['show', 'user', '--raw']);
    // users/current echoes the credential presented as api_key, which the CLI reads.
    expect(JSON.parse(me.stdout).api_key).toBe(c.session_key);
    // The same code again: refused as a replay, saying when the next code comes; nothing stored.
    const replay = await run(['tfa', 'login', code]);
    expect(replay.code).toBe(1);
    expect(replay.stderr).toMatch(
      /^openrig: This code was already used; the next code of your authenticator app comes in \d+ s\n$/,
    );
    expect(cfg().session_key).toBe(c.session_key);
  });

  it('regen-codes with a backup code prints 10 new codes; the used one is gone', async () => {
    const r = await run(['tfa', 'regen-codes', '--backup-code', backupCodes[0]!]);
    expect(r.code).toBe(0);
    const fresh = [...r.stdout.matchAll(/^\s+(\S{4}-\S{4}-\S{4})$/gm)].map((m) => m[1]!);
    expect(fresh.length).toBe(10);
    for (const old of backupCodes) expect(fresh).not.toContain(old);
    // An unused code of the replaced set is refused like a used one.
    const again = await run(['tfa', 'regen-codes', '--backup-code', backupCodes[1]!]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/invalid|already used/i);
    backupCodes = fresh;
  });

  it('falls back to the API key on 401 "Invalid user key" for a dead session, and forgets it', async () => {
    writeFileSync(cfgFile(), JSON.stringify({ ...cfg(), session_key: 'ors_not_a_session' }), { mode: 0o600 });
    const r = await run(['show', 'user', '--raw']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).api_key).toBe(apiKey);
    expect(r.stderr).toContain('Invalid user key');
    expect(r.stderr).toContain('using the API key');
    expect(cfg().session_key).toBeUndefined();
  });

  it('falls back to the API key on 404 "Session expired. Please log in again."', async () => {
    const r = await run(['tfa', 'login', '--backup-code', backupCodes[0]!]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('9 backup codes left');
    const session = cfg().session_key!;
    expect(JSON.parse((await run(['show', 'user', '--raw'])).stdout).api_key).toBe(session);
    // Wait out the session's life (OPENRIG_SESSION_TTL_S), asking the server directly.
    await waitFor(
      async () =>
        (await fetch(`${w.url}/api/v0/users/current/`, { headers: { authorization: `Bearer ${session}` } }))
          .status === 404,
      'the session to expire',
      (SESSION_TTL_S + 10) * 1000,
      500,
    );
    const after = await run(['show', 'user', '--raw']);
    expect(after.code).toBe(0);
    expect(JSON.parse(after.stdout).api_key).toBe(apiKey);
    expect(after.stderr).toContain('Session expired. Please log in again.');
    expect(cfg().session_key).toBeUndefined();
  }, 90_000);

  it('login --email signs in with the password and a TOTP code and stores a fresh key', async () => {
    // `tfa login` spent the step after its moment's; wait (if the tests before did not) until the
    // clock reaches that step, so the step after it is a fresh code within the accepted window.
    const spent = Math.floor(tfaLoginAt / 30_000) + 1;
    await waitFor(() => Math.floor(Date.now() / 30_000) >= spent, 'the next TOTP step', 40_000, 250);
    const code = new TOTP({ secret: base32 }).generate({ timestamp: Date.now() + 30_000 });
    const h = makeHome();
    const wrong = await cli(h, ['login', '--url', w.url, '--email', email, '--code', '000000'], {
      OPENRIG_PASSWORD: PASSWORD,
    });
    expect(wrong.code).toBe(1);
    const r = await cli(h, ['login', '--url', w.url, '--email', email, '--code', code], {
      OPENRIG_PASSWORD: PASSWORD,
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const stored = JSON.parse(readFileSync(path.join(h, '.config', 'openrig', 'config.json'), 'utf8'));
    expect(stored.api_key).toMatch(/^or_/);
    expect(stored.api_key).not.toBe(apiKey);
    expect(JSON.stringify(stored)).not.toContain(PASSWORD);
    const me = await cli(h, ['show', 'user', '--raw']);
    expect(me.code).toBe(0);
    expect(JSON.parse(me.stdout).email).toBe(email);
  }, 60_000);

  it('delete with a backup code removes the last method and disables 2FA', async () => {
    const id = /^\s*(\d+)\s+totp/m.exec((await run(['tfa', 'status'])).stdout)![1]!;
    const r = await run(['tfa', 'delete', '--backup-code', backupCodes[1]!, '--target-id', id]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('2FA Successfully Disabled');
    expect((await run(['tfa', 'status'])).stdout).toMatch(/^2FA:\s+disabled$/m);
  });
});
