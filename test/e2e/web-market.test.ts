// The web console's market flows in headless Chromium against a real `openrig serve` and a real
// `openrig agent` (process runtime): a renter adds an SSH key, searches, rents, watches the
// instance reach running, copies the SSH command and runs it with OpenSSH, and destroys it; a
// taken offer is reported inline with the next offer to rent; a host schedules maintenance on
// three machines (start in the browser's time zone) and the e-mails land in the outbox.
// With OPENRIG_SCREENSHOTS=1 it also writes the main pages at 390 and 1440 px to docs/screenshots/.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import {
  callApi,
  processAgentArgs,
  startProc,
  waitFor,
  waitRegistered,
  type Proc,
} from '../helpers/process.js';
import {
  SCREENSHOTS,
  launchBrowser,
  noBrowserReason,
  screenshot,
  startConsoleServe,
  unlabelledControls,
  type Browser,
  type ConsoleServe,
} from '../helpers/browser.js';

const ENV = {
  OPENRIG_SECRET_KEY: 'fa'.repeat(32),
  OPENRIG_HEARTBEAT_S: '0.5',
  OPENRIG_SWEEP_INTERVAL_MS: '200',
  OPENRIG_METER_INTERVAL_MS: '1000',
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
};
const reason = noBrowserReason();
if (reason) console.log(`skipping the web console market tests: ${reason}`);

describe.skipIf(!!reason)('web console, renting and hosting', () => {
  let c: ConsoleServe;
  let dir: string;
  let stateDir: string;
  let serve: Proc & { url: string };
  let agent: Proc;
  let env: Record<string, string>;
  let b: Browser;
  let host: { id: number; api_key: string };
  let renter: { id: number; api_key: string };
  let other: { id: number; api_key: string };
  let keyFile: string;
  let adminMachines: number[];
  const mailFile = () => path.join(dir, 'mail.jsonl');
  const mails = (): { to: string; subject: string; text: string }[] =>
    existsSync(mailFile())
      ? readFileSync(mailFile(), 'utf8')
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l))
      : [];

  const api = (method: string, p: string, key: string, body?: unknown) =>
    callApi(serve.url, method, p, key, body);
  const admin = (...args: string[]) => c.admin(...args);
  const signIn = (page: Page, email: string) => c.signIn(b, page, email);
  const signOut = async (page: Page) => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  };
  /** The first screen of the page at `url` (scrolled to the top) at both widths, when asked for. */
  const shoot = async (page: Page, name: string, url?: string) => {
    if (!SCREENSHOTS) return;
    if (url) await page.goto(`${serve.url}${url}`);
    await page.evaluate('window.scrollTo(0, 0)');
    await screenshot(page, name);
  };

  beforeAll(async () => {
    c = await startConsoleServe('web-market', ENV);
    ({ dir, stateDir, serve, env } = c);
    host = await c.user('host@example.com', '0');
    renter = await c.user('renter@example.com', '50');
    other = await c.user('other@example.com', '50');
    // A fleet to search: listed machines without an agent (they stay provisioning when rented).
    adminMachines = [];
    for (const [gpu, n, count, price] of [
      ['A100 80GB', '8', '2', '1.10'],
      ['H100 SXM', '8', '2', '2.40'],
      ['RTX 3090', '1', '3', '0.18'],
      ['L40S', '4', '2', '0.80'],
    ] as const) {
      const r = await admin(
        'create-machines',
        '--owner-email',
        'host@example.com',
        '--gpu-name',
        gpu,
        '--num-gpus',
        n,
        '--count',
        count,
        '--price-gpu',
        price,
      );
      adminMachines.push(...r.machine_ids);
    }
    agent = startProc(
      processAgentArgs(serve.url, stateDir),
      // Disk usage measured every second, so that the card shows it within the test.
      { ...env, OPENRIG_LOG_LEVEL: 'info', OPENRIG_API_KEY: host.api_key, OPENRIG_USAGE_INTERVAL_S: '1' },
    );
    await waitRegistered(agent);
    keyFile = await c.sshKey(other.api_key);
    b = await launchBrowser();
    await b.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: serve.url });
  });
  afterAll(async () => {
    await b?.close();
    await c?.stop(agent);
  });

  it('rents an offer, watches it reach running, copies the SSH command and runs it with OpenSSH, destroys it', async () => {
    const page = b.page;
    await signIn(page, 'renter@example.com');
    await shoot(page, 'search');

    // The SSH key first, on the account page.
    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByRole('link', { name: 'SSH keys' }).click();
    await page.getByLabel('Public key').fill(readFileSync(`${keyFile}.pub`, 'utf8').trim());
    await page.getByRole('button', { name: 'Add key' }).click();
    await page.getByRole('table', { name: 'SSH keys' }).getByText('renter@laptop').waitFor();

    await page.getByRole('link', { name: 'Search' }).click();
    // The agent's machine is new, so unverified: hidden until the switch says otherwise.
    await page.getByLabel('Verified machines only').uncheck();
    await page.getByLabel('GPU model').selectOption('RTX 4090');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const row = page.locator('tr[data-offer]');
    await expect.poll(() => row.count()).toBe(1);
    expect(await unlabelledControls(page)).toEqual([]);
    await row.getByRole('button', { name: /Rent offer/ }).click();
    const dialog = page.getByRole('dialog', { name: /Rent 2× RTX 4090/ });
    await dialog.getByLabel('Disk (GB)').fill('8');
    expect(await unlabelledControls(page)).toEqual([]);
    // The price includes the disk: 2 × 0.50 compute + 8 GB at the machine's $/GB-month over 720 h.
    const offer = (
      await api('POST', '/api/v0/bundles/', renter.api_key, {
        gpu_name: { eq: 'RTX 4090' },
        allocated_storage: 8,
      })
    ).body.offers[0];
    await expect
      .poll(() => dialog.getByTestId('rent-price').textContent())
      .toBe(`$${offer.dph_total.toFixed(3)}/hour`);
    await dialog.getByLabel('On-start script').fill('echo started-from-the-console');
    await dialog.getByLabel('Label').fill('training run');
    await dialog.getByRole('button', { name: /^Rent for/ }).click();
    await page.waitForURL(/\/instances\?new=\d+/);
    const id = Number(new URL(page.url()).searchParams.get('new'));
    const card = page.locator(`li[data-instance="${id}"]`);
    await card.waitFor();
    // Live status: the page polls until the agent reports running, without a reload.
    await card.locator('[data-status="running"]').waitFor({ timeout: 60_000 });
    await expect.poll(() => card.locator('.meaning').textContent()).toMatch(/Ready: connect over SSH/);
    // What the host measured of the instance's disk, once its agent has reported it.
    await expect
      .poll(() => card.locator('.instance-head p').textContent(), { timeout: 15_000 })
      .toMatch(/ · \d+(\.\d)? of \d+ GB disk used( · |$)/);
    expect(await unlabelledControls(page)).toEqual([]);

    await card.getByRole('button', { name: 'Copy SSH command' }).click();
    const copied = await page.evaluate<string>('navigator.clipboard.readText()');
    const m = /^ssh -p (\d+) root@(\S+)$/.exec(copied);
    expect(m, copied).not.toBeNull();
    const run = spawnSync(
      'ssh',
      [
        '-i',
        keyFile,
        '-o',
        'StrictHostKeyChecking=no',
        '-o',
        'UserKnownHostsFile=/dev/null',
        '-o',
        'BatchMode=yes',
        '-o',
        'IdentitiesOnly=yes',
        '-o',
        'LogLevel=ERROR',
        ...copied.split(' ').slice(1),
        'echo hello-from-the-console',
      ],
      { encoding: 'utf8', timeout: 15_000 },
    );
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('hello-from-the-console\n');
    // The logs its host sends: the on-start script's output.
    await card.getByRole('button', { name: 'Logs' }).click();
    await expect
      .poll(() => card.getByTestId('logs').textContent(), { timeout: 40_000 })
      .toContain('started-from-the-console');
    // Cost so far counts up from the meter.
    await expect.poll(() => card.getByTestId('cost').textContent(), { timeout: 15_000 }).not.toBe('$0.0000');
    await shoot(page, 'instances');

    await card.getByRole('button', { name: 'Destroy' }).click();
    await page
      .getByRole('dialog', { name: `Destroy instance ${id}?` })
      .getByRole('button', { name: 'Destroy instance' })
      .click();
    await card.waitFor({ state: 'detached' });
    const gone = await api('GET', '/api/v0/instances/', renter.api_key);
    expect(gone.body.instances.map((i: any) => i.id)).not.toContain(id);
    await waitFor(
      () =>
        run.stdout &&
        spawnSync('ssh', [
          '-p',
          m![1]!,
          '-o',
          'BatchMode=yes',
          '-o',
          'ConnectTimeout=2',
          `root@${m![2]}`,
          'true',
        ]).status !== 0,
      'the SSH server to close',
    );
  }, 150_000);

  it('says inline that an offer was taken and rents the next one from the same dialog', async () => {
    const page = b.page;
    await page.goto(`${serve.url}/search`);
    await page.getByLabel('GPU model').selectOption('RTX 3090');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const rows = page.locator('tr[data-offer]');
    await expect.poll(() => rows.count()).toBe(3);
    const first = Number(await rows.first().getAttribute('data-offer'));
    await rows
      .first()
      .getByRole('button', { name: /Rent offer/ })
      .click();
    const dialog = page.getByRole('dialog', { name: /Rent 1× RTX 3090/ });
    await dialog.getByLabel('Disk (GB)').fill('5');
    // Someone else rents it while the dialog is open.
    const theirs = await api('PUT', `/api/v0/asks/${first}/`, other.api_key, {
      image: 'ubuntu:22.04',
      disk: 5,
    });
    expect(theirs.status).toBe(200);
    await dialog.getByRole('button', { name: /^Rent for/ }).click();
    const alert = dialog.getByRole('alert');
    await alert.waitFor();
    const taken = await api('PUT', `/api/v0/asks/${first}/`, renter.api_key, {
      image: 'ubuntu:22.04',
      disk: 5,
    });
    expect(await alert.locator('strong').textContent()).toBe(taken.body.msg);
    await alert.getByRole('button', { name: /Rent the next offer/ }).click();
    await dialog.getByRole('button', { name: /^Rent for/ }).click();
    await page.waitForURL(/\/instances\?new=\d+/);
    const id = Number(new URL(page.url()).searchParams.get('new'));
    const mine = (await api('GET', `/api/v0/instances/${id}/`, renter.api_key)).body.instances;
    expect(mine.machine_id).not.toBe(first);
    expect(mine.gpu_name).toBe('RTX 3090');
    await signOut(page);
  });

  it('schedules maintenance on three machines in local time, shows each result as returned, and the e-mails go out', async () => {
    const page = b.page;
    await signIn(page, 'host@example.com');
    await page.getByRole('link', { name: 'Hosting' }).click();
    const machines = (await api('GET', '/api/v0/machines/', host.api_key)).body.machines as any[];
    // Three machines, two of them with the renter's and the other user's instances on them.
    const rented = machines.filter((m) => m.current_rentals_running > 0 || m.rented).map((m) => m.id);
    const pick = [...rented, ...machines.map((m) => m.id).filter((x) => !rented.includes(x))].slice(0, 3);
    expect(pick).toHaveLength(3);
    for (const id of pick) await page.getByLabel(`Select machine ${id}`, { exact: true }).check();
    // 09:30 on 15 January next year in Europe/Berlin (the browser's zone) is 08:30 UTC.
    const year = new Date().getUTCFullYear() + 1;
    await page.getByLabel(/^Start \(Europe\/Berlin\)$/).fill(`${year}-01-15T09:30`);
    await page.getByLabel('Duration (hours)').fill('3');
    await page.getByLabel('Category').selectOption('gpu');
    const before = mails().length;
    const replyP = page.waitForResponse((r) => r.url().endsWith('/api/v0/machines/maintenances/batch'));
    await page.getByRole('button', { name: 'Schedule on 3 machines' }).click();
    const reply = await (await replyP).json();
    expect(reply.success).toBe(true);
    const table = page.getByRole('table', { name: 'Maintenance results' });
    await table.waitFor();
    expect(await unlabelledControls(page)).toEqual([]);
    // Each row shows what the server returned for that machine, notifications_sent as is.
    const shown = await table
      .locator('tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr: any) => Array.from(tr.querySelectorAll('td')).map((td: any) => td.textContent)),
      );
    expect(shown).toEqual(
      reply.results.map((r: any) => [
        `#${r.machine_id}`,
        r.success ? 'scheduled' : r.error,
        String(r.notifications_sent ?? '—'),
        r.msg ?? '',
      ]),
    );
    const sent = reply.results.reduce((s: number, r: any) => s + (r.notifications_sent ?? 0), 0);
    expect(sent).toBeGreaterThanOrEqual(2);
    const windows = (await api('GET', '/api/v0/machines/maintenances', host.api_key)).body;
    expect(windows.map((w: any) => w.start_time)).toEqual(
      pick.map(() => Date.UTC(year, 0, 15, 8, 30) / 1000),
    );
    expect(windows.map((w: any) => w.duration_hours)).toEqual([3, 3, 3]);
    // The outbox: one e-mail per notified client plus one confirmation to the host.
    const fresh = await waitFor(() => {
      const all = mails().slice(before);
      return all.length >= sent + 1 ? all : null;
    }, 'the maintenance e-mails');
    expect(fresh.filter((m) => m.to === 'host@example.com')).toHaveLength(1);
    expect(fresh.filter((m) => m.to === 'renter@example.com' || m.to === 'other@example.com')).toHaveLength(
      sent,
    );
    await shoot(page, 'hosting');

    // Upcoming windows, with cancel.
    const up = page.getByRole('table', { name: 'Upcoming maintenance' });
    await expect.poll(() => up.locator('tbody tr').count()).toBe(3);
    await up.getByRole('button', { name: `Cancel maintenance of machine ${pick[2]}` }).click();
    await expect.poll(() => up.locator('tbody tr').count()).toBe(2);
    const left = (await api('GET', '/api/v0/machines/maintenances', host.api_key)).body;
    expect(left.map((w: any) => w.machine_id).sort()).toEqual(pick.slice(0, 2).sort());
    await signOut(page);
  }, 60_000);

  it.runIf(!!SCREENSHOTS)('screenshots of the account pages and the sign-in page', async () => {
    const page = b.page;
    await signIn(page, 'renter@example.com');
    await shoot(page, 'account-keys', '/account');
    await shoot(page, 'billing', '/account/billing');
    await shoot(page, 'security', '/account/security');
    // The dark theme, as a browser set to dark shows it.
    await page.emulateMedia({ colorScheme: 'dark' });
    await shoot(page, 'search-dark', '/search');
    await page.emulateMedia({ colorScheme: 'light' });
    await signOut(page);
    await shoot(page, 'signin');
  });
});
