// The web console in headless Chromium (playwright-core with the system's Chromium) against a real
// `openrig serve`: the console is the built dist/web that serve hands out at `/`, and every step
// goes through the page as a person would (labels, buttons), reading codes where a person reads
// them (the e-mail outbox file, an authenticator computed from the key the page shows).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as OTPAuth from 'otpauth';
import { runCli, startServe, waitFor, type Proc } from '../helpers/process.js';
import { launchBrowser, noBrowserReason, type Browser } from '../helpers/browser.js';

const ENV = {
  OPENRIG_SECRET_KEY: 'be'.repeat(32),
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
};
const PASSWORD = 'a long enough password';
const reason = noBrowserReason();
if (reason) console.log(`skipping the web console tests: ${reason}`);

describe.skipIf(!!reason)('web console, sign-in and account', () => {
  let dir: string;
  let serve: Proc & { url: string };
  let env: Record<string, string>;
  let b: Browser;
  const mailFile = () => path.join(dir, 'mail.jsonl');

  const mails = (): { to: string; subject: string; text: string }[] =>
    existsSync(mailFile())
      ? readFileSync(mailFile(), 'utf8')
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l))
      : [];
  const codeFor = (to: string, after: number) =>
    waitFor(() => {
      const mine = mails().filter((m) => m.to === to);
      return mine.length > after ? /\b(\d{6})\b/.exec(mine.at(-1)!.text)?.[1] : null;
    }, `an e-mailed code to ${to}`);
  const call = async (method: string, p: string, key: string, body?: unknown) => {
    const res = await fetch(`${serve.url}${p}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const createUser = async (email: string) => {
    const r = await runCli(
      ['admin', 'create-user', '--data', dir, '--email', email, '--password', PASSWORD, '--email-verified'],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as { id: number; api_key: string };
  };
  /** A code `ahead` 30-second steps from now: the server takes one step of drift, never a step twice. */
  const totpCode = (secret: string, ahead = 0) =>
    new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) }).generate({
      timestamp: Date.now() + ahead * 30_000,
    });
  const signIn = async (email: string) => {
    const page = b.page;
    await page.goto(`${serve.url}/`);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
  };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-web-e2e-'));
    env = { ...ENV, OPENRIG_MAIL_OUTBOX: path.join(dir, 'mail.jsonl') };
    serve = await startServe(['--data', dir], env);
    b = await launchBrowser();
  });
  afterAll(async () => {
    await b?.close();
    serve?.child.kill('SIGTERM');
    await serve?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  it('signs in with a TOTP code as the second step (HttpOnly, SameSite=Strict cookie), then signs out on the server', async () => {
    const email = 'totp-signin@example.com';
    const u = await createUser(email);
    // TOTP turned on over the API: the add-method authorization by e-mailed code, then confirm-new.
    const auth = await call('POST', '/api/v0/tfa/authorize-new-method/', u.api_key, {});
    expect(auth.status).toBe(200);
    const code = await codeFor(email, 0);
    expect(
      (await call('PUT', '/api/v0/tfa/authorize-new-method/', u.api_key, { code, secret: auth.body.secret }))
        .status,
    ).toBe(200);
    const setup = await call('POST', '/api/v0/tfa/totp-setup/', u.api_key);
    const confirm = await call('POST', '/api/v0/tfa/confirm-new/', u.api_key, {
      tfa_method: 'totp',
      code: totpCode(setup.body.secret),
      secret: setup.body.secret,
    });
    expect(confirm.status, JSON.stringify(confirm.body)).toBe(200);

    await signIn(email);
    const page = b.page;
    await page.getByRole('heading', { name: 'Two-factor verification' }).waitFor();
    // A wrong code shows the server's message and keeps the form.
    await page.getByRole('radio', { name: 'Authenticator app' }).check();
    await page.getByLabel('Code from your authenticator app').fill('000000');
    await page.getByRole('button', { name: 'Verify and sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/\S/);
    await page.getByLabel('Code from your authenticator app').fill(totpCode(setup.body.secret, 1));
    await page.getByRole('button', { name: 'Verify and sign in' }).click();
    await page.getByRole('heading', { name: 'Search offers' }).waitFor();
    expect(page.url()).toBe(`${serve.url}/search`);
    await expect.poll(() => page.locator('.who-email').textContent()).toBe(email);
    const cookies = await b.context.cookies(serve.url);
    const session = cookies.find((c) => c.name === 'openrig_session');
    expect(session?.sameSite).toBe('Strict');
    expect(session?.httpOnly).toBe(true);

    // Sign out ends the session on the server: the old cookie no longer authenticates.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    const after = await fetch(`${serve.url}/api/v0/users/current`, {
      headers: { cookie: `openrig_session=${session!.value}` },
    });
    expect(after.status).toBe(401);
  });
});
