// The web console in headless Chromium (playwright-core with the system's Chromium) against a real
// `openrig serve`: the console is the built dist/web that serve hands out at `/`, and every step
// goes through the page as a person would (labels, buttons), reading codes where a person reads
// them (the e-mail outbox file, an authenticator computed from the key the page shows).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as OTPAuth from 'otpauth';
import * as jsqrModule from 'jsqr';
import { callApi, runCli, startServe, waitFor, type Proc } from '../helpers/process.js';
import {
  launchBrowser,
  noBrowserReason,
  screenshot,
  unlabelledControls,
  type Browser,
} from '../helpers/browser.js';

const ENV = {
  OPENRIG_SECRET_KEY: 'be'.repeat(32),
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
};
const PASSWORD = 'a long enough password';
// jsqr is CommonJS: its function is the default export at run time.
const jsQR = ((jsqrModule as any).default ?? jsqrModule) as (
  data: Uint8ClampedArray,
  width: number,
  height: number,
) => { data: string } | null;
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
  const call = (method: string, p: string, key: string, body?: unknown) =>
    callApi(serve.url, method, p, key, body);
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

    // By keyboard alone: type, Tab to the next field, Enter submits.
    const page = b.page;
    await page.goto(`${serve.url}/`);
    expect(await unlabelledControls(page)).toEqual([]);
    await page.getByLabel('E-mail').focus();
    await page.keyboard.type(email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Two-factor verification' }).waitFor();
    expect(await unlabelledControls(page)).toEqual([]);
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
  it('creates a scoped API key shown once, which works within its scope, and revokes it', async () => {
    const email = 'keys@example.com';
    await createUser(email);
    await b.context.clearCookies();
    await signIn(email);
    const page = b.page;
    await page.getByRole('heading', { name: 'Search offers' }).waitFor();
    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByLabel('Name').fill('ci-bot');
    await page.getByRole('radio', { name: 'Choose per area' }).check();
    await page.getByLabel('Access to instances').selectOption('write');
    await page.getByLabel('Access to offers').selectOption('read');
    expect(await unlabelledControls(page)).toEqual([]);
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByRole('dialog', { name: 'Your new API key' });
    const key = (await shown.getByTestId('new-key').textContent())!.trim();
    expect(key).toMatch(/^or_[A-Za-z0-9_-]{43}$/);
    // Within its scope it works; outside it is refused.
    expect(
      (await fetch(`${serve.url}/api/v0/instances/`, { headers: { authorization: `Bearer ${key}` } })).status,
    ).toBe(200);
    const mint = await fetch(`${serve.url}/api/v0/auth/apikeys/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(mint.status).toBe(403);
    await shown.getByRole('button', { name: 'Done' }).click();
    // Shown once: the list has only its prefix.
    const row = page.getByRole('row').filter({ hasText: 'ci-bot' });
    await expect.poll(() => row.textContent()).toContain('instances: write, offers: read');
    expect(await page.content()).not.toContain(key);

    await row.getByRole('button', { name: /Revoke key/ }).click();
    await page
      .getByRole('dialog', { name: 'Revoke this key?' })
      .getByRole('button', { name: 'Revoke key' })
      .click();
    await row.waitFor({ state: 'detached' });
    const after = await fetch(`${serve.url}/api/v0/instances/`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(after.status).toBe(401);
  });

  it('turns TOTP on from the QR code, downloads the backup codes, signs in with one, and turns 2FA off', async () => {
    const email = 'qr@example.com';
    const u = await createUser(email);
    await b.context.clearCookies();
    await signIn(email);
    const page = b.page;
    await page.getByRole('heading', { name: 'Search offers' }).waitFor();
    await page.goto(`${serve.url}/account/security`);
    await expect.poll(() => page.getByTestId('tfa-state').textContent()).toBe('Off');
    await page.getByRole('button', { name: 'Add authenticator app' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add an authenticator app' });
    // The add-method authorization: the first method is authorized by an e-mailed code.
    const mailed = mails().filter((m) => m.to === email).length;
    await dialog.getByRole('button', { name: 'E-mail me a code' }).click();
    await dialog.getByLabel('Code', { exact: true }).fill(await codeFor(email, mailed));
    await dialog.getByRole('button', { name: 'Authorize' }).click();
    // The QR code drawn in the page, read back from its pixels as an authenticator app would.
    const canvas = dialog.getByRole('img', { name: 'QR code for your authenticator app' });
    await expect.poll(() => dialog.getByTestId('totp-secret').textContent()).not.toBe('…');
    const pixels = await canvas.evaluate((c: any) => {
      const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height);
      return { w: d.width, h: d.height, data: Array.from(d.data) };
    });
    const qr = jsQR(Uint8ClampedArray.from(pixels.data), pixels.w, pixels.h);
    expect(qr?.data).toMatch(/^otpauth:\/\/totp\//);
    const secret = new URL(qr!.data).searchParams.get('secret')!;
    expect((await dialog.getByTestId('totp-secret').textContent())!.replace(/\s/g, '')).toBe(secret);
    expect(await unlabelledControls(page)).toEqual([]);
    await screenshot(page, 'security-totp');
    await dialog.getByLabel('Code from the app').fill(totpCode(secret));
    await dialog.getByRole('button', { name: 'Turn on' }).click();

    // Ten backup codes, shown once, downloaded as a text file.
    const codesDialog = page.getByRole('dialog', { name: 'Your backup codes' });
    await codesDialog.getByTestId('backup-codes').locator('li').first().waitFor();
    const listed = (await codesDialog.getByTestId('backup-codes').locator('li').allTextContents()).map((c) =>
      c.trim(),
    );
    expect(listed).toHaveLength(10);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      codesDialog.getByRole('button', { name: 'Download .txt' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('openrig-backup-codes.txt');
    const file = readFileSync(await download.path(), 'utf8');
    expect(file.match(/\b[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}\b/g)).toEqual(listed);
    await codesDialog.getByRole('button', { name: 'I saved them' }).click();
    await expect.poll(() => page.getByTestId('tfa-state').textContent()).toBe('On');

    // Sign out, and in again with a backup code from the file.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(email);
    await page.getByRole('heading', { name: 'Two-factor verification' }).waitFor();
    await page.getByRole('radio', { name: 'Backup code' }).check();
    await page.getByRole('textbox', { name: 'Backup code' }).fill(listed[3]!);
    await page.getByRole('button', { name: 'Verify and sign in' }).click();
    await page.getByRole('heading', { name: 'Search offers' }).waitFor();
    const status = await call('GET', '/api/v0/tfa/status/', u.api_key);
    expect(status.body.backup_codes_remaining).toBe(9);

    // Off again, confirmed with the authenticator.
    await page.goto(`${serve.url}/account/security`);
    await page.getByRole('button', { name: 'Disable 2FA' }).click();
    const off = page.getByRole('dialog', { name: 'Disable two-factor authentication?' });
    await off.getByLabel('Code from your authenticator app').fill(totpCode(secret, 1));
    await off.getByRole('button', { name: 'Disable 2FA' }).click();
    await expect.poll(() => page.getByTestId('tfa-state').textContent()).toBe('Off');
    const final = await call('GET', '/api/v0/tfa/status/', u.api_key);
    expect(final.body.tfa_enabled).toBe(false);
    expect(final.body.methods).toEqual([]);
  });
  it('shows how long a method stays locked after too many wrong codes', async () => {
    const email = 'locked@example.com';
    const u = await createUser(email);
    const auth = await call('POST', '/api/v0/tfa/authorize-new-method/', u.api_key, {});
    const code = await codeFor(email, 0);
    await call('PUT', '/api/v0/tfa/authorize-new-method/', u.api_key, { code, secret: auth.body.secret });
    const setup = await call('POST', '/api/v0/tfa/totp-setup/', u.api_key);
    await call('POST', '/api/v0/tfa/confirm-new/', u.api_key, {
      tfa_method: 'totp',
      code: totpCode(setup.body.secret),
      secret: setup.body.secret,
    });
    await b.context.clearCookies();
    await signIn(email);
    const page = b.page;
    await page.getByRole('heading', { name: 'Two-factor verification' }).waitFor();
    const alert = page.getByRole('alert');
    const wrong = totpCode(setup.body.secret, 5) === '000000' ? '111111' : '000000';
    for (let i = 0; i < 8; i++) {
      await page.getByLabel('Code from your authenticator app').fill(wrong);
      await page.getByRole('button', { name: 'Verify and sign in' }).click();
      await alert.waitFor();
      if (/Locked for/.test((await alert.textContent()) ?? '')) break;
      await page.waitForTimeout(100);
    }
    // The server's own message, then the time left from its locked_until (15 minutes here).
    await expect.poll(() => alert.textContent()).toMatch(/Locked for 1[45]:\d\d min more\./);
    const status = await call('GET', '/api/v0/tfa/status/', u.api_key);
    expect(status.body.methods[0].locked_until).toBeGreaterThan(Date.now() / 1000 + 800);
  });
});
