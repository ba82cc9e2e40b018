// 2FA with real processes: `openrig admin create-user`, `openrig serve` with the
// e-mail outbox file and the SMS outbox file, then an SMS method added over HTTP, the three
// login flows (logged-out UI by cookie, CLI by session_key), a legacy account, and the
// `admin flag-sms-fraud` switch. Codes are read where a person would read them: the files.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCli, startServe, waitFor, type Proc } from '../helpers/process.js';

const ENV = { OPENRIG_SECRET_KEY: 'cd'.repeat(32), OPENRIG_RATE_LIMITS: 'off', OPENRIG_LOG_LEVEL: 'warn' };
const PASSWORD = 'a long enough password';

describe('2FA end to end', () => {
  let dir: string;
  let serve: Proc & { url: string };
  let env: Record<string, string>;
  const mailFile = () => path.join(dir, 'mail.jsonl');
  const smsFile = () => path.join(dir, 'sms.jsonl');

  const call = async (
    method: string,
    p: string,
    opts: { key?: string; body?: unknown; cookie?: string } = {},
  ) => {
    const headers: Record<string, string> = {};
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    if (opts.cookie) headers.cookie = opts.cookie;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${serve.url}${p}`, {
      method,
      headers,
      body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as any, setCookie: res.headers.get('set-cookie') };
  };
  const lines = (file: string) =>
    existsSync(file)
      ? readFileSync(file, 'utf8')
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l))
      : [];
  /** Waits for a new line to `to` in an outbox file and returns the six-digit code in it. */
  const codeFrom = async (file: string, field: 'text' | 'body', to: string, after: number) =>
    waitFor(() => {
      const mine = lines(file).filter((l) => l.to === to);
      return mine.length > after ? /\b(\d{6})\b/.exec(mine.at(-1)[field])?.[1] : null;
    }, `a code to ${to}`);
  const count = (file: string, to: string) => lines(file).filter((l) => l.to === to).length;
  const admin = async (...args: string[]) => {
    const r = await runCli(['admin', ...args, '--data', dir, '--json'], env);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout);
  };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-tfa-e2e-'));
    env = { ...ENV, OPENRIG_MAIL_OUTBOX: mailFile(), OPENRIG_SMS_OUTBOX: smsFile() };
    serve = await startServe(['--data', dir], env);
  });
  afterAll(async () => {
    serve?.child.kill('SIGTERM');
    await serve?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  it('adds an SMS method, then logs in by cookie (logged-out UI) and by session_key (CLI)', async () => {
    const user = await admin(
      'create-user',
      '--email',
      'tfa-e2e@example.com',
      '--password',
      PASSWORD,
      '--email-verified',
    );
    const key = user.api_key as string;
    const phone = '+14155550901';

    // Authorize (a user with no methods: forced to e-mail), then add the SMS method.
    const mails = count(mailFile(), user.email);
    const a = await call('POST', '/api/v0/tfa/authorize-new-method/', { key, body: { tfa_method: 'sms' } });
    expect(a.status).toBe(200);
    const put = await call('PUT', '/api/v0/tfa/authorize-new-method/', {
      key,
      body: { code: await codeFrom(mailFile(), 'text', user.email, mails), secret: a.body.secret },
    });
    expect(put.body.success).toBe(true);
    const s = await call('POST', '/api/v0/tfa/sms/', { key, body: { phone_number: phone } });
    expect(s.status).toBe(200);
    const add = await call('POST', '/api/v0/tfa/confirm-new/', {
      key,
      body: {
        tfa_method: 'sms',
        code: await codeFrom(smsFile(), 'body', phone, 0),
        secret: s.body.secret,
        phone_number: phone,
        label: 'mobile',
      },
    });
    expect(add.status).toBe(200);
    expect(add.body.backup_codes).toHaveLength(10);
    // The user was told by e-mail that a method was added.
    await waitFor(
      () => lines(mailFile()).some((l) => l.to === user.email && /was added/.test(l.text)),
      'the method-added e-mail',
    );

    // Logged-out UI: password, then the SMS code with the tfa_secret alone; a cookie session.
    const login = await call('POST', '/api/v0/users/login/', {
      body: { email: user.email, password: PASSWORD },
    });
    expect(login.body).toMatchObject({
      tfa_required: true,
      methods: [{ method: 'sms', label: 'mobile', is_primary: true }],
    });
    const sent = count(smsFile(), phone);
    expect((await call('POST', '/api/v0/tfa/sms/', { body: { secret: login.body.tfa_secret } })).status).toBe(
      200,
    );
    const done = await call('POST', '/api/v0/tfa/', {
      body: {
        tfa_method: 'sms',
        code: await codeFrom(smsFile(), 'body', phone, sent),
        secret: login.body.tfa_secret,
      },
    });
    expect(done.status).toBe(200);
    expect(done.body.session_key).toBeUndefined();
    const cookie = done.setCookie!.split(';')[0]!;
    expect(cookie).toMatch(/^openrig_session=/);
    expect((await call('GET', '/api/v0/users/current', { cookie })).body.id).toBe(user.id);

    // CLI: Bearer API key and a backup code; session_key back, then used as the Bearer.
    const cli = await call('POST', '/api/v0/tfa/', { key, body: { backup_code: add.body.backup_codes[0] } });
    expect(cli.status).toBe(200);
    expect(cli.body).toMatchObject({
      tfa_status: 'enabled',
      backup_codes_remaining: 9,
      session_key: expect.any(String),
    });
    const me = await call('GET', '/api/v0/users/current', { key: cli.body.session_key });
    expect(me.body.id).toBe(user.id);
    const st = await call('GET', '/api/v0/tfa/status/', { key: cli.body.session_key });
    expect(st.body).toMatchObject({
      tfa_enabled: true,
      backup_codes_remaining: 9,
      methods: [{ method: 'sms', phone_number: '***0901', label: 'mobile' }],
    });
  });

  it('a legacy account logs in by SMS to the number on file; admin flag-sms-fraud stops SMS', async () => {
    const phone = '+14155550902';
    const user = await admin(
      'create-user',
      '--email',
      'legacy-e2e@example.com',
      '--email-verified',
      '--phone',
      phone,
      '--legacy-tfa',
    );
    const key = user.api_key as string;
    const s = await call('POST', '/api/v0/tfa/sms/', { key, body: {} });
    expect(s.status).toBe(200);
    const login = await call('POST', '/api/v0/tfa/', {
      key,
      body: { code: await codeFrom(smsFile(), 'body', phone, 0), secret: s.body.secret },
    });
    expect(login.status).toBe(200);
    expect(login.body).toMatchObject({ tfa_status: 'legacy', legacy_tfa_user: true });
    expect(await admin('flag-sms-fraud', '--email', user.email)).toEqual({ id: user.id, sms_fraud: true });
    const refused = await call('POST', '/api/v0/tfa/sms/resend/', { key, body: {} });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('sms_fraud_detected');
  });
});
