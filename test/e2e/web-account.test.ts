// The web console's account features in headless Chromium against a real `openrig serve` and a real
// `openrig agent` (process runtime): environment variables (add, reveal, change, delete), account
// settings kept across a reload, the audit log and login addresses, the billing history (a credit,
// a charge and a volume's charge) and the ledger, updating an instance (its container recreated: loading, then
// running with the new on-start script), and a host deleting a machine (refused while a renter's
// instance is on it, then allowed).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  launchBrowser,
  noBrowserReason,
  startConsoleServe,
  unlabelledControls,
  type Browser,
  type ConsoleServe,
} from '../helpers/browser.js';

const ENV = {
  OPENRIG_SECRET_KEY: 'c0'.repeat(32),
  OPENRIG_HEARTBEAT_S: '0.5',
  OPENRIG_SWEEP_INTERVAL_MS: '200',
  OPENRIG_METER_INTERVAL_MS: '1000',
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
};
const reason = noBrowserReason();
if (reason) console.log(`skipping the web console account tests: ${reason}`);

describe.skipIf(!!reason)('web console, account, billing history, updates and machine deletion', () => {
  let c: ConsoleServe;
  let stateDir: string;
  let serve: Proc & { url: string };
  let agent: Proc;
  let env: Record<string, string>;
  let b: Browser;
  let host: { id: number; api_key: string };
  let renter: { id: number; api_key: string };
  let spare: number;

  const api = (method: string, p: string, key: string, body?: unknown) =>
    callApi(serve.url, method, p, key, body);
  const admin = (...args: string[]) => c.admin(...args);
  const signIn = (page: Page, email: string) => c.signIn(b, page, email);
  const rent = async (gpu: string, body: Record<string, unknown>) => {
    const offers = (
      await api('POST', '/api/v0/bundles/', renter.api_key, { gpu_name: { eq: gpu }, rentable: { eq: true } })
    ).body.offers;
    expect(offers.length).toBeGreaterThan(0);
    const r = await api('PUT', `/api/v0/asks/${offers[0].id}/`, renter.api_key, {
      image: 'ubuntu:22.04',
      disk: 5,
      runtype: 'ssh',
      ...body,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return { id: r.body.new_contract as number, machine: offers[0].machine_id as number };
  };

  beforeAll(async () => {
    c = await startConsoleServe('web-account', ENV);
    ({ stateDir, serve, env } = c);
    host = await c.user('host@example.com', '0');
    renter = await c.user('renter@example.com', '50');
    await c.sshKey(renter.api_key);
    // A machine without an agent: rented, its instance stays provisioning, and live.
    spare = (
      await admin(
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
      )
    ).machine_ids[0];
    agent = startProc(processAgentArgs(serve.url, stateDir), {
      ...env,
      OPENRIG_LOG_LEVEL: 'info',
      OPENRIG_API_KEY: host.api_key,
    });
    await waitRegistered(agent);
    b = await launchBrowser();
  });
  afterAll(async () => {
    await b?.close();
    await c?.stop(agent);
  });

  it('adds an environment variable with its value hidden until revealed, refuses a duplicate with the server message, changes and deletes it', async () => {
    const page = b.page;
    await signIn(page, 'renter@example.com');
    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByRole('link', { name: 'Environment' }).click();
    await expect.poll(() => page.getByLabel('Value', { exact: true }).getAttribute('type')).toBe('password');
    await page.getByLabel('Name').fill('HF_TOKEN');
    await page.getByLabel('Value', { exact: true }).fill('s3cret-value');
    expect(await unlabelledControls(page)).toEqual([]);
    await page.getByRole('button', { name: 'Add variable' }).click();
    const row = page.locator('tr[data-var="HF_TOKEN"]');
    await row.waitFor();
    await expect
      .poll(() => page.getByRole('status').first().textContent())
      .toBe('Environment variable HF_TOKEN created');
    // Hidden: the value is not in the page until it is revealed.
    expect(await page.content()).not.toContain('s3cret-value');
    await row.getByRole('button', { name: 'Show value of HF_TOKEN' }).click();
    await expect.poll(() => row.getByTestId('var-value').textContent()).toBe('s3cret-value');
    await row.getByRole('button', { name: 'Hide value of HF_TOKEN' }).click();
    expect(await page.content()).not.toContain('s3cret-value');

    // A second create of the name: the server's 409 message, as the API gives it.
    await page.getByLabel('Name').fill('HF_TOKEN');
    await page.getByLabel('Value', { exact: true }).fill('other');
    await page.getByRole('button', { name: 'Add variable' }).click();
    const dup = await api('POST', '/api/v0/secrets/', renter.api_key, { key: 'HF_TOKEN', value: 'x' });
    expect(dup.status).toBe(409);
    await expect.poll(() => page.getByRole('alert').locator('strong').textContent()).toBe(dup.body.msg);

    // Change, in a password field of its dialog.
    await row.getByRole('button', { name: 'Change HF_TOKEN' }).click();
    const change = page.getByRole('dialog', { name: 'Change HF_TOKEN' });
    expect(await change.getByLabel('New value').getAttribute('type')).toBe('password');
    await change.getByLabel('New value').fill('new-value');
    await change.getByRole('button', { name: 'Save value' }).click();
    await change.waitFor({ state: 'hidden' });
    await expect
      .poll(async () => (await api('GET', '/api/v0/secrets/', renter.api_key)).body.secrets)
      .toEqual({ HF_TOKEN: 'new-value' });

    // Delete, confirmed.
    await row.getByRole('button', { name: 'Delete HF_TOKEN' }).click();
    const del = page.getByRole('dialog', { name: 'Delete HF_TOKEN?' });
    await del.getByRole('button', { name: 'Delete variable' }).click();
    await row.waitFor({ state: 'detached' });
    expect((await api('GET', '/api/v0/secrets/', renter.api_key)).body.secrets).toEqual({});
  }, 60_000);

  it('saves the account settings, shows them after a reload, and shows the server message of a refused form', async () => {
    const page = b.page;
    await page.goto(`${serve.url}/account/settings`);
    const form = page.getByRole('form', { name: 'Account settings' });
    await form.getByLabel('Full name').waitFor();
    expect(await unlabelledControls(page)).toEqual([]);
    // The alert needs a threshold: the server's 400 is shown and nothing is saved.
    await form.getByLabel('Full name').fill('Ada Renter');
    await form.getByLabel('Alert me when my balance falls below the threshold').check();
    await form.getByRole('button', { name: 'Save settings' }).click();
    const refused = await api('PUT', '/api/v0/users/', renter.api_key, {
      balance_threshold_enabled: true,
      balance_threshold: null,
    });
    expect(refused.status).toBe(400);
    await expect.poll(() => form.getByRole('alert').locator('strong').textContent()).toBe(refused.body.msg);
    expect((await api('GET', '/api/v0/users/current/', renter.api_key)).body.full_name).not.toBe(
      'Ada Renter',
    );

    await form.getByLabel('Threshold ($)').fill('12.5');
    await form.getByLabel('City').fill('Lyon');
    await form.getByLabel('Country').fill('France');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(() => form.getByRole('status').textContent()).toMatch(/^Account updated: /);
    await page.reload();
    await expect.poll(() => form.getByLabel('Full name').inputValue()).toBe('Ada Renter');
    expect(await form.getByLabel('City').inputValue()).toBe('Lyon');
    expect(await form.getByLabel('Country').inputValue()).toBe('France');
    expect(await form.getByLabel('Threshold ($)').inputValue()).toBe('12.5');
    expect(await form.getByLabel('Alert me when my balance falls below the threshold').isChecked()).toBe(
      true,
    );
    const me = (await api('GET', '/api/v0/users/current/', renter.api_key)).body;
    expect(me).toMatchObject({
      full_name: 'Ada Renter',
      billaddress_city: 'Lyon',
      billaddress_country: 'France',
      billaddress_line1: null,
      balance_threshold_enabled: true,
      balance_threshold: 12.5,
    });
  }, 60_000);

  it('shows the audit row of an action just made in the browser, and the sign-in address', async () => {
    const page = b.page;
    await page.goto(`${serve.url}/account/security`);
    const audit = page.getByRole('table', { name: 'Audit log' });
    // The settings saved by the browser session above, newest first, to the second in UTC.
    const row = audit.locator('tbody tr').filter({ hasText: 'PUT /api/v0/users/' }).first();
    await row.waitFor();
    const cells = (await row.locator('td').allTextContents()).map((c) => c.trim());
    expect(cells[0]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    expect(cells[1]).toBe('127.0.0.1');
    expect(cells[2]).toBe('Browser session');
    expect(cells[3]).toContain('fields: fullname');
    expect(cells[4]).toBe('200');
    // The refused save is there too, with its status.
    await audit
      .locator('tbody tr')
      .filter({ hasText: 'PUT /api/v0/users/' })
      .filter({ hasText: '400' })
      .first()
      .waitFor();
    // The completed sign-in recorded its address (written within a second).
    const addrs = page.getByRole('table', { name: 'Sign-in addresses' });
    await waitFor(
      async () => {
        await page.getByRole('button', { name: 'Refresh' }).click();
        return (
          (await addrs.count()) > 0 &&
          (await addrs.locator('tbody tr').filter({ hasText: '127.0.0.1' }).count()) > 0
        );
      },
      'the sign-in address',
      10_000,
      500,
    );
    expect(await unlabelledControls(page)).toEqual([]);
  }, 60_000);

  it('updates an instance: the warning, then the container recreated (loading, then running) with the new on-start script and env', async () => {
    const { id } = await rent('RTX 4090', { onstart: 'echo first-config', env: { STAGE: 'one' } });
    const page = b.page;
    await page.goto(`${serve.url}/instances`);
    const card = page.locator(`li[data-instance="${id}"]`);
    await card.locator('[data-status="running"]').waitFor({ timeout: 60_000 });
    await card.getByRole('button', { name: 'Update' }).click();
    const dialog = page.getByRole('dialog', { name: `Update instance ${id}` });
    await expect
      .poll(() => dialog.getByRole('status').textContent())
      .toMatch(/everything written on the instance's disk is lost/);
    // It starts from the instance's configuration.
    expect(await dialog.getByLabel('Image').inputValue()).toBe('ubuntu:22.04');
    expect(await dialog.getByLabel('Environment').inputValue()).toBe('STAGE=one');
    expect(await dialog.getByLabel('On-start script').inputValue()).toBe('echo first-config');
    expect(await unlabelledControls(page)).toEqual([]);
    await dialog.getByLabel('Environment').fill('STAGE=two');
    await dialog.getByLabel('On-start script').fill('echo updated-from-console $STAGE');
    // Every status the card shows from now on.
    await card.evaluate((el: any) => {
      const seen: string[] = [];
      const w = globalThis as any;
      w.seenStatus = seen;
      new w.MutationObserver(() => {
        const s = el.querySelector('[data-status]')?.getAttribute('data-status');
        if (s && seen.at(-1) !== s) seen.push(s);
      }).observe(el, { subtree: true, attributes: true, childList: true });
    });
    await dialog.getByRole('button', { name: 'Update and recreate' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await waitFor(
      async () => (await page.evaluate<string[]>('window.seenStatus')).at(-1) === 'running',
      'the card to read running again',
      60_000,
      200,
    );
    const seen = await page.evaluate<string[]>('window.seenStatus');
    expect(seen.slice(seen.indexOf('loading'))).toEqual(['loading', 'running']);
    const inst = (await api('GET', `/api/v0/instances/${id}/`, renter.api_key)).body.instances;
    expect(inst.onstart).toBe('echo updated-from-console $STAGE');
    expect(inst.extra_env).toEqual([['STAGE', 'two']]);
    // The new on-start script ran with the new env.
    await card.getByRole('button', { name: 'Logs' }).click();
    await expect
      .poll(() => card.getByTestId('logs').textContent(), { timeout: 40_000 })
      .toContain('updated-from-console two');
  }, 120_000);

  it('shows the billing history (the starting credit and a charge, totals, today) and the ledger with the credit as money in', async () => {
    const page = b.page;
    // The meter has billed the running instance by now.
    await waitFor(
      async () => (await api('GET', '/api/v0/users/me/invoices', renter.api_key)).body.totals.charges > 0,
      'a charge',
    );
    // A volume made and deleted is charged up to its deletion: a line of its own, naming it.
    const agentMachine = (await api('GET', '/api/v0/machines/', host.api_key)).body.machines.find(
      (m: { id: number }) => m.id !== spare,
    ).id as number;
    const ask = await api('POST', '/api/v0/volumes/', host.api_key, {
      size: 20,
      machine: agentMachine,
      price_disk: 50,
    });
    expect(ask.status, JSON.stringify(ask.body)).toBe(200);
    const made = await api('PUT', '/api/v0/volumes/', renter.api_key, {
      size: 10,
      id: ask.body.volume_asks[0].id,
      name: 'ckpt',
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const vol = made.body.volume_id as number;
    await new Promise((r) => setTimeout(r, 1500));
    expect((await api('DELETE', `/api/v0/volumes/?id=${vol}`, renter.api_key)).status).toBe(200);
    await page.goto(`${serve.url}/account/billing`);
    const table = page.getByRole('table', { name: 'Billing history' });
    const volumeLine = table.locator('tr[data-item="charge"]').filter({ hasText: `Volume ${vol} (ckpt)` });
    await volumeLine.waitFor();
    expect(await volumeLine.locator('td[data-label="Kind"]').textContent()).toBe('volume');
    expect(await volumeLine.locator('td[data-label="Item"]').textContent()).toContain(
      '10 GB at $50/GB/month',
    );
    const credit = table.locator('tr[data-item="payment"]');
    await credit.waitFor();
    expect(await credit.locator('td[data-label="Credit"]').textContent()).toBe('$50.00');
    expect(await credit.locator('td[data-label="Item"]').textContent()).toBe('Credit added to the account');
    const charge = table.locator('tr[data-item="charge"]').filter({ hasText: 'compute' }).first();
    await charge.waitFor();
    expect(await charge.locator('td[data-label="Charge"]').textContent()).toMatch(/^\$0\.\d{4}$/);
    expect(await charge.locator('td[data-label="Date (UTC)"]').textContent()).toBe(
      new Date().toISOString().slice(0, 10),
    );
    expect(await page.getByTestId('total-credits').textContent()).toBe('$50.00');
    expect(await page.getByTestId('today-charges').textContent()).toMatch(/^\$0\.\d{4}$/);
    // The default range is the last 30 UTC days, today included.
    const from = new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10);
    expect(await page.getByLabel('From (UTC day)').inputValue()).toBe(from);
    // A range before the account existed has nothing.
    await page.getByLabel('From (UTC day)').fill('2020-01-01');
    await page.getByLabel('To (UTC day)').fill('2020-01-31');
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    await page.getByText('Nothing in this range.').waitFor();
    expect(await page.getByTestId('total-credits').textContent()).toBe('$0.00');

    // The ledger: the starting balance is a credit row, in the Credit column and positive.
    const ledger = page.getByRole('table', { name: 'Ledger' });
    const creditRow = ledger.locator('tr[data-kind="credit"]');
    await creditRow.waitFor();
    expect(await creditRow.locator('td[data-label="Credit"]').textContent()).toBe('$50.00');
    expect(await creditRow.locator('td[data-label="Charge"]').textContent()).toBe('');
    expect(await creditRow.locator('td[data-label="Kind"]').textContent()).toBe('credit added');
    expect(await ledger.locator('tr[data-kind="compute"]').count()).toBeGreaterThan(0);
    expect(await ledger.locator('tr[data-kind="volume"] td[data-label="Instance"]').textContent()).toBe(
      `Volume #${vol}`,
    );
    expect(await unlabelledControls(page)).toEqual([]);
  }, 60_000);

  it("deletes a machine: refused with the server's message while a renter's instance is on it, then deleted", async () => {
    const { id } = await rent('RTX 3090', {});
    const page = b.page;
    await signIn(page, 'host@example.com');
    await page.getByRole('link', { name: 'Hosting' }).click();
    const row = page.locator(`tr[data-machine="${spare}"]`);
    await row.getByRole('button', { name: `Delete machine ${spare}` }).click();
    const dialog = page.getByRole('dialog', { name: `Delete machine #${spare}?` });
    await expect.poll(() => dialog.textContent()).toMatch(/Your own instances on it are destroyed/);
    expect(await unlabelledControls(page)).toEqual([]);
    await dialog.getByRole('button', { name: 'Delete machine' }).click();
    const refused = await api('POST', `/api/v0/machines/${spare}/force_delete/`, host.api_key, {});
    expect(refused.status).toBe(409);
    await expect.poll(() => dialog.getByRole('alert').locator('strong').textContent()).toBe(refused.body.msg);
    await dialog.getByRole('button', { name: 'Keep it' }).click();

    // Once the renter's instance is destroyed, the deletion goes through.
    expect((await api('DELETE', `/api/v0/instances/${id}/`, renter.api_key)).status).toBe(200);
    await row.getByRole('button', { name: `Delete machine ${spare}` }).click();
    await dialog.getByRole('button', { name: 'Delete machine' }).click();
    await row.waitFor({ state: 'detached' });
    await expect
      .poll(() => page.getByRole('status').filter({ hasText: 'deleted' }).textContent())
      .toBe(`Machine #${spare} deleted: 0 of your instances destroyed, 0 maintenance windows cancelled.`);
    const left = (await api('GET', '/api/v0/machines/', host.api_key)).body.machines.map((m: any) => m.id);
    expect(left).not.toContain(spare);
  }, 60_000);
});
