// The web console in headless Chromium against a real `openrig serve`, where what a page shows must
// agree with what it does: the search page's Min VRAM keeps every offer shown with at least that
// many GB; a legacy-2FA account (SMS to the number on file, no methods) signs in with a text
// message; and long unbroken text a user chose (instance labels, SSH key comments, API key names,
// environment variable names, template names) wraps instead of widening the page at 390 and 1440 px.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { callApi, waitFor, type Proc } from '../helpers/process.js';
import {
  CONSOLE_PASSWORD,
  launchBrowser,
  noBrowserReason,
  startConsoleServe,
  type Browser,
  type ConsoleServe,
} from '../helpers/browser.js';

const ENV = {
  OPENRIG_SECRET_KEY: 'f1'.repeat(32),
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
};
const LABEL = 'finetune_llama3_8b_lora_rank64_lr2e-4_seed42_dataset_openhermes_v2_5_run007';
/** As long as the server takes an instance label, without a place to break it. */
const HUGE_LABEL = 'x'.repeat(1024);
const WIDTHS = [390, 1440] as const;
const reason = noBrowserReason();
if (reason) console.log(`skipping the web console fit tests: ${reason}`);

describe.skipIf(!!reason)('web console, filters, legacy 2FA sign-in and long names', () => {
  let c: ConsoleServe;
  let dir: string;
  let serve: Proc & { url: string };
  let b: Browser;
  let renter: { id: number; api_key: string };
  const api = (method: string, p: string, body?: unknown) =>
    callApi(serve.url, method, p, renter.api_key, body);
  const machines = (gpu: string, count: string) =>
    c.admin(
      'create-machines',
      '--owner-email',
      'host@example.com',
      '--gpu-name',
      gpu,
      '--num-gpus',
      '1',
      '--count',
      count,
      '--price-gpu',
      '0.3',
    );
  const sms = (): { to: string; body: string }[] => {
    const f = path.join(dir, 'sms-outbox.jsonl');
    return existsSync(f)
      ? readFileSync(f, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l))
      : [];
  };
  /** How far the page, and the widest table in it, is wider than the space it is shown in (0 when it fits). */
  const overflow = (page: Page) =>
    page.evaluate<{ page: number; tables: number }>(`({
      page: Math.max(0, document.documentElement.scrollWidth - window.innerWidth),
      tables: Math.max(0, ...Array.from(document.querySelectorAll('.table-scroll'), (t) => t.scrollWidth - t.clientWidth)),
    })`);

  /** The open dialog is no wider than its box (then closed). */
  const fitsDialog = async (page: Page, what: string) => {
    const d = page.getByRole('dialog');
    await d.waitFor();
    expect.soft(await d.evaluate((el) => el.scrollWidth - el.clientWidth), what).toBe(0);
    await d.getByRole('button', { name: 'Close' }).click();
    await d.waitFor({ state: 'hidden' });
  };

  beforeAll(async () => {
    c = await startConsoleServe('web-fit', ENV);
    ({ dir, serve } = c);
    await c.user('host@example.com', '0');
    renter = await c.user('renter@example.com', '50');
    // Per-GPU memory of 24564 MB (RTX 4090) and 24576 MB (RTX 3090) are both shown as 24 GB.
    for (const gpu of ['RTX 4090', 'RTX 3090', 'L40S', 'A100 SXM4']) await machines(gpu, '1');
    await machines('RTX A6000', '2');
    b = await launchBrowser();
  });
  afterAll(async () => {
    await b?.close();
    await c?.stop();
  });

  it('keeps every offer shown with at least the Min VRAM asked for, and only those', async () => {
    const page = b.page;
    await c.signIn(b, page, 'renter@example.com');
    const rows = page.locator('tr[data-offer]');
    const shown = async () => {
      const gpus = await rows.locator('td[data-label="GPU"]').allTextContents();
      const vram = await rows.locator('td[data-label="VRAM"]').allTextContents();
      return gpus.map((g, i) => `${g} ${vram[i]}`).sort();
    };
    await expect.poll(() => rows.count()).toBeGreaterThan(0);
    const all = await shown();
    // The GPU cell may end with a "verified" badge: only its start is compared.
    for (const gpu of ['RTX 4090', 'RTX 3090'])
      expect(all.filter((r) => r.startsWith(`1× ${gpu}`) && r.endsWith(' 24 GB'))).toHaveLength(1);
    for (const min of ['24', '25', '45', '46', '80', '81']) {
      await page.getByLabel('Min VRAM (GB)').fill(min);
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      const want = all.filter((r) => Number(/(\d+) GB$/.exec(r)![1]) >= Number(min));
      await expect.poll(shown, { message: `Min VRAM ${min}` }).toEqual(want);
    }
  });

  it('offers a legacy-2FA account a text message to the number on file and signs it in with the code', async () => {
    await c.admin(
      'create-user',
      '--email',
      'leg@x.test',
      '--password',
      CONSOLE_PASSWORD,
      '--email-verified',
      '--legacy-tfa',
      '--phone',
      '+15555550177',
    );
    const page = b.page;
    await b.context.clearCookies();
    await page.goto(`${serve.url}/`);
    await page.getByLabel('E-mail').fill('leg@x.test');
    await page.getByLabel('Password').fill(CONSOLE_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const choice = page.getByRole('radio', { name: 'Text message (number on file)' });
    await choice.waitFor();
    // The account's own second factor comes first; it has no backup codes to offer.
    expect(await choice.isChecked()).toBe(true);
    expect(await page.locator('fieldset.choices label').allTextContents()).toEqual([
      'Text message (number on file)',
      'E-mail code',
    ]);
    const before = sms().length;
    await page.getByRole('button', { name: 'Text me a code' }).click();
    const text = await waitFor(() => sms().slice(before).at(-1), 'a text message');
    expect(text.to).toBe('+15555550177');
    await page.getByLabel('Code', { exact: true }).fill(/\b(\d{6})\b/.exec(text.body)![1]!);
    await page.getByRole('button', { name: 'Verify and sign in' }).click();
    await page.getByRole('heading', { name: 'Search offers' }).waitFor();
    expect((await b.context.cookies()).map((k) => k.name)).toContain('openrig_session');
  });

  it('wraps long labels and names, so that no page is wider than the screen, at 390 and 1440 px', async () => {
    const long = (n: number) => 'n'.repeat(n);
    const keyFile = path.join(dir, 'id_long');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `me@${long(300)}`, '-f', keyFile]);
    const key = await api('POST', '/api/v0/ssh/', { ssh_key: readFileSync(`${keyFile}.pub`, 'utf8').trim() });
    expect(key.status, JSON.stringify(key.body)).toBe(200);
    // Two instances with long labels (machines without an agent: they stay provisioning).
    const offers = (
      await api('POST', '/api/v0/bundles/', { gpu_name: { eq: 'RTX A6000' }, rentable: { eq: true } })
    ).body.offers;
    expect(offers.length).toBe(2);
    for (const [i, label] of [LABEL, HUGE_LABEL].entries()) {
      const r = await api('PUT', `/api/v0/asks/${offers[i].id}/`, {
        image: 'ubuntu:22.04',
        disk: 5,
        runtype: 'ssh',
        label,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    for (const [p, body] of [
      ['/api/v0/auth/apikeys/', { name: `key_${long(96)}`, permissions: 'read_only' }],
      ['/api/v0/secrets/', { key: `VAR_${long(124)}`, value: 'v' }],
      ['/api/v0/template/', { name: `tpl_${long(196)}`, image: 'ubuntu', tag: '22.04' }],
    ] as const) {
      const r = await api('POST', p, body);
      expect(r.status, `${p} ${JSON.stringify(r.body)}`).toBe(200);
    }

    const page = b.page;
    await c.signIn(b, page, 'renter@example.com');
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${serve.url}/instances`);
      const card = page.locator('li[data-instance]').filter({ hasText: LABEL });
      await card.locator('[data-status]').waitFor();
      await page.locator('li[data-instance]').filter({ hasText: HUGE_LABEL }).waitFor();
      expect.soft(await overflow(page), `/instances at ${width} px`).toEqual({ page: 0, tables: 0 });
      // The status and the buttons stay on the screen.
      for (const el of [card.locator('[data-status]'), card.getByRole('button', { name: 'Destroy' })]) {
        const box = (await el.boundingBox())!;
        expect.soft(box.x + box.width, `/instances at ${width} px`).toBeLessThanOrEqual(width);
      }
      // The update dialog lists the template by its name.
      await card.getByRole('button', { name: 'Update' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByRole('option', { name: /^tpl_n+/ }).waitFor({ state: 'attached' });
      await fitsDialog(page, `update dialog at ${width} px`);

      // Each table with a long name, and the dialog that names it (its title or its text).
      for (const [url, text, button] of [
        ['/account/ssh', `me@${long(300)}`, null],
        ['/account', `key_${long(96)}`, `Revoke key key_${long(96)}`],
        ['/account/env', `VAR_${long(124)}`, `Delete VAR_${long(124)}`],
      ] as const) {
        await page.goto(`${serve.url}${url}`);
        await page
          .locator('td')
          .filter({ hasText: new RegExp(`^${text}$`) })
          .waitFor();
        expect.soft(await overflow(page), `${url} at ${width} px`).toEqual({ page: 0, tables: 0 });
        if (!button) continue;
        await page.getByRole('button', { name: button }).click();
        await fitsDialog(page, `${button} at ${width} px`);
      }
    }
  });
});
