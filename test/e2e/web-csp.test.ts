// The web console under its Content-Security-Policy, in headless Chromium against a real `openrig
// serve`: the policy is sent and enforced (an inline script is refused and reported), and no page
// of the console breaks it: signing in, search, instances, hosting, every account tab, the QR code
// of a new authenticator app, signing out. A violation is caught twice: as the page's
// `securitypolicyviolation` event and as Chromium's console message about the policy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { callApi, waitFor } from '../helpers/process.js';
import {
  launchBrowser,
  noBrowserReason,
  startConsoleServe,
  type Browser,
  type ConsoleServe,
} from '../helpers/browser.js';

const ENV = {
  OPENRIG_SECRET_KEY: 'c5'.repeat(32),
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
};
const reason = noBrowserReason();
if (reason) console.log(`skipping the console CSP tests: ${reason}`);

// Recorded in the page from its first script on, for every document it loads.
const RECORD_VIOLATIONS = `
  window.__cspViolations = [];
  document.addEventListener('securitypolicyviolation', (e) => {
    window.__cspViolations.push(e.violatedDirective + ' ' + (e.blockedURI || '') + ' ' + (e.sample || ''));
  });
`;

describe.skipIf(!!reason)('web console under its Content-Security-Policy', () => {
  let c: ConsoleServe;
  let b: Browser;
  const consoleMessages: string[] = [];

  const violations = async (page: Page): Promise<string[]> => [
    ...(await page.evaluate<string[]>('window.__cspViolations || []')),
    ...consoleMessages.filter((m) => /Content Security Policy|Content-Security-Policy/i.test(m)),
  ];
  const clearViolations = async (page: Page) => {
    consoleMessages.length = 0;
    await page.evaluate('window.__cspViolations = []');
  };
  const mails = (): { to: string; text: string }[] => {
    const f = path.join(c.dir, 'mail.jsonl');
    if (!existsSync(f)) return [];
    return readFileSync(f, 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  };

  beforeAll(async () => {
    c = await startConsoleServe('web-csp', ENV);
    await c.user('host@example.com', '0');
    const renter = await c.user('renter@example.com', '50');
    await c.sshKey(renter.api_key);
    // A listed machine (no agent): the search shows an offer, and a rental shows an instance.
    await c.admin(
      'create-machines',
      '--owner-email',
      'host@example.com',
      '--gpu-name',
      'RTX 3090',
      '--num-gpus',
      '1',
      '--count',
      '1',
      '--price-gpu',
      '0.2',
    );
    const offers = (
      await callApi(c.serve.url, 'POST', '/api/v0/bundles/', renter.api_key, { rentable: { eq: true } })
    ).body.offers;
    const rented = await callApi(c.serve.url, 'PUT', `/api/v0/asks/${offers[0].id}/`, renter.api_key, {
      image: 'ubuntu:22.04',
      disk: 5,
      runtype: 'ssh',
      label: 'csp-check',
    });
    expect(rented.status, JSON.stringify(rented.body)).toBe(200);
    b = await launchBrowser();
    await b.context.addInitScript({ content: RECORD_VIOLATIONS });
    b.page.on('console', (m) => consoleMessages.push(m.text()));
  }, 60_000);
  afterAll(async () => {
    await b?.close();
    await c?.stop();
  });

  it('sends the policy with the page and enforces it: an inline script is refused and reported', async () => {
    const page = b.page;
    const res = await page.goto(`${c.serve.url}/`);
    const csp = res!.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    await page.getByLabel('E-mail').waitFor();
    await clearViolations(page);
    await page.evaluate(`(() => {
      const s = document.createElement('script');
      s.textContent = 'window.__inlineRan = true';
      document.body.appendChild(s);
    })()`);
    await expect
      .poll(() => violations(page))
      .toEqual(expect.arrayContaining([expect.stringMatching(/^script-src/)]));
    expect(await page.evaluate('window.__inlineRan === true')).toBe(false);
    await clearViolations(page);
  });

  it('another site cannot frame the console', async () => {
    const page = await b.context.newPage();
    try {
      await page.setContent(`<iframe src="${c.serve.url}/" width="400" height="300"></iframe>`);
      const frame = page.frames()[1]!;
      expect(frame).toBeDefined();
      // The frame never holds the console: Chromium shows its error page instead.
      await page.waitForTimeout(1500);
      const framed = await frame.evaluate('document.title').catch((e: Error) => e.message);
      expect(framed).not.toBe('openrig console');
    } finally {
      await page.close();
    }
  });

  it('no page of the console breaks the policy', async () => {
    const page = b.page;
    await c.signIn(b, page, 'renter@example.com');
    await page.getByRole('table').first().waitFor(); // the offers
    expect(await violations(page)).toEqual([]);

    const visits: [string, () => Promise<unknown>][] = [
      ['/instances', () => page.getByText('csp-check').first().waitFor()],
      ['/hosting', () => page.getByRole('heading', { name: 'Hosting' }).waitFor()],
      ['/account', () => page.getByRole('button', { name: 'Create key' }).waitFor()],
      ['/account/ssh', () => page.getByText('renter@laptop').first().waitFor()],
      ['/account/env', () => page.getByRole('button', { name: 'Add variable' }).waitFor()],
      ['/account/settings', () => page.getByLabel('Full name').waitFor()],
      ['/account/billing', () => page.getByRole('link', { name: 'Billing' }).waitFor()],
      ['/account/security', () => page.getByTestId('tfa-state').waitFor()],
    ];
    for (const [to, ready] of visits) {
      // Both ways in: a fresh load of the address, and the app's own navigation back to it.
      await page.goto(`${c.serve.url}${to}`);
      await ready();
      await page.waitForLoadState('networkidle');
      expect(await violations(page), to).toEqual([]);
    }
    for (const name of ['Search', 'Instances', 'Hosting', 'Account']) {
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name }).click();
      await page.waitForLoadState('networkidle');
      expect(await violations(page), name).toEqual([]);
    }

    // A cookie-authenticated write and the QR code drawn on a canvas.
    await page.goto(`${c.serve.url}/account/security`);
    await page.getByRole('button', { name: 'Add authenticator app' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add an authenticator app' });
    const before = mails().filter((m) => m.to === 'renter@example.com').length;
    await dialog.getByRole('button', { name: 'E-mail me a code' }).click();
    const code = await waitFor(() => {
      const mine = mails().filter((m) => m.to === 'renter@example.com');
      return mine.length > before ? /\b(\d{6})\b/.exec(mine.at(-1)!.text)?.[1] : null;
    }, 'the e-mailed code');
    await dialog.getByLabel('Code', { exact: true }).fill(code);
    await dialog.getByRole('button', { name: 'Authorize' }).click();
    await dialog.getByRole('img', { name: 'QR code for your authenticator app' }).waitFor();
    await expect.poll(() => dialog.getByTestId('totp-secret').textContent()).not.toBe('…');
    expect(await violations(page)).toEqual([]);

    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('E-mail').waitFor();
    expect(await violations(page)).toEqual([]);
  }, 90_000);
});
