// The console's account basics in headless Chromium against a real `openrig serve` with sign-up
// switched on: create an account, follow the e-mailed link to confirm it, sign in, see the
// operator's text on getting credit, change the password on the Security tab, then ask for a reset
// link, follow it, choose a new password and sign in with it. At $0 the billing tab shows the
// operator's text on getting credit. The links are read from the e-mail
// outbox file, in its format ({"at", "to", "subject", "text"} per line).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/process.js';
import {
  launchBrowser,
  noBrowserReason,
  startConsoleServe,
  type Browser,
  type ConsoleServe,
} from '../helpers/browser.js';

const CREDIT = 'Pay by bank transfer to the lab: see the wiki page "GPU credit"';
const EMAIL = 'newcomer@example.com';
const reason = noBrowserReason();
if (reason) console.log(`skipping the web console sign-up tests: ${reason}`);

describe.skipIf(!!reason)('web console: sign up, confirm, change and reset the password', () => {
  let c: ConsoleServe;
  let b: Browser;

  /** The token of the newest link to `page` in an e-mail to EMAIL. */
  const linkToken = (page: string) =>
    waitFor(() => {
      let lines: string[] = [];
      try {
        lines = readFileSync(path.join(c.dir, 'mail.jsonl'), 'utf8').trim().split('\n');
      } catch {
        return undefined;
      }
      const mails = lines
        .map((l) => JSON.parse(l) as { to: string; text: string })
        .filter((m) => m.to === EMAIL);
      for (const m of mails.reverse()) {
        const t = new RegExp(`/${page}\\?token=([A-Za-z0-9_-]+)`).exec(m.text)?.[1];
        if (t) return t;
      }
      return undefined;
    }, `an e-mail with a ${page} link`);

  beforeAll(async () => {
    c = await startConsoleServe('web-signup', {
      OPENRIG_SIGNUP: 'on',
      OPENRIG_CREDIT_HELP: CREDIT,
      OPENRIG_RATE_LIMITS: 'off',
      OPENRIG_LOG_LEVEL: 'warn',
    });
    b = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await b?.close();
    await c?.stop();
  });

  it(
    'signs up, confirms by the link, signs in, changes the password, resets it by a link',
    { timeout: 120_000 },
    async () => {
      const page = b.page;
      await page.goto(`${c.serve.url}/`);
      await page.getByRole('button', { name: 'Create an account' }).click();
      await page.getByLabel('E-mail').fill(EMAIL);
      await page.getByLabel(/^Password/).fill('first password 1');
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.getByText('a link to confirm it is on its way').waitFor();

      await page.goto(`${c.serve.url}/verify-email?token=${await linkToken('verify-email')}`);
      await page.getByRole('button', { name: 'Confirm and create my account' }).click();
      await page.getByText('account created').waitFor();
      await page.getByRole('button', { name: 'Sign in' }).click();

      await page.getByLabel('E-mail').fill(EMAIL);
      await page.getByLabel('Password').fill('first password 1');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Search offers' }).waitFor();
      const me = await page.evaluate(() => fetch('/api/v0/users/current').then((r) => r.json()));
      expect(me).toMatchObject({ email: EMAIL, email_verified: true, credit_help: CREDIT });
      // At $0 the billing tab says how to get credit here, in the operator's words.
      await page.goto(`${c.serve.url}/account/billing`);
      await page.getByText(CREDIT).waitFor();
      expect(await page.getByText('Your balance is $0.').count()).toBe(1);

      await page.goto(`${c.serve.url}/account/security`);
      const form = page.getByRole('form', { name: 'Change password' });
      await form.getByLabel('Current password').fill('first password 1');
      await form.getByLabel(/^New password/).fill('second password 2');
      await form.getByRole('button', { name: 'Change password' }).click();
      await page.getByText('Password changed').waitFor();

      await b.context.clearCookies();
      await page.goto(`${c.serve.url}/`);
      await page.getByRole('button', { name: 'Forgot your password?' }).click();
      await page.getByLabel('E-mail').fill(EMAIL);
      await page.getByRole('button', { name: 'E-mail me a reset link' }).click();
      await page.getByText('a link to reset its password is on its way').waitFor();
      await page.goto(`${c.serve.url}/reset-password?token=${await linkToken('reset-password')}`);
      await page.getByLabel(/^New password/).fill('third password 3');
      await page.getByRole('button', { name: 'Set password' }).click();
      await page.getByText('Your password is reset').waitFor();
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByLabel('E-mail').fill(EMAIL);
      await page.getByLabel('Password').fill('third password 3');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Search offers' }).waitFor();
    },
  );
});
