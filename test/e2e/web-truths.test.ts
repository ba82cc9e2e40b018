// What the console says is true, in headless Chromium against a real `openrig serve`: a host
// driven through the agent protocol by the test itself (so that each state is reached exactly: an
// instance that failed to start, one running with published ports, a host gone offline), its
// machine said to run instances as host processes. The instance card names the failure with the
// host's reason and offers Start and Destroy; says what is known of an offline host; lists each
// published port with its address; gives the SSH command with the key file the server knows;
// shows a maintenance window on the machine; says "no isolation". The rent dialog offers
// templates, checks for an SSH key first, and keeps its errors in sight; the search hides
// unverified machines by default like the CLI, badges them, and shows CUDA, DLPerf and driver
// columns on request; the ledger sums the meter's rows per instance and hour in UTC; the TOTP key
// wraps between its groups; at 390 px the active account tab shows and the audit log pages.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { callApi, waitFor, type Proc } from '../helpers/process.js';
import {
  launchBrowser,
  noBrowserReason,
  startConsoleServe,
  unlabelledControls,
  type Browser,
  type ConsoleServe,
} from '../helpers/browser.js';

const ENV = {
  OPENRIG_SECRET_KEY: 'fb'.repeat(32),
  OPENRIG_METER_INTERVAL_MS: '500',
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
};
const reason = noBrowserReason();
if (reason) console.log(`skipping the web console truth tests: ${reason}`);

describe.skipIf(!!reason)('web console, what it says is true', () => {
  let c: ConsoleServe;
  let serve: Proc & { url: string };
  let b: Browser;
  let host: { id: number; api_key: string };
  let renter: { id: number; api_key: string };
  let keyFile: string;
  let agents = 0;

  const api = async (method: string, p: string, key: string, body?: unknown) => {
    const r = await callApi(serve.url, method, p, key, body);
    expect(r.status, `${method} ${p}: ${JSON.stringify(r.body)}`).toBeLessThan(300);
    return r.body;
  };

  /** A machine registered through the agent protocol by the test (the process runtime), listed. */
  async function machine(
    gpu: string,
    runtime: 'process' | 'docker' = 'process',
  ): Promise<{ uid: string; id: number }> {
    const uid = `web-truths-${process.pid}-${++agents}`;
    const r = await api('POST', '/api/agent/v1/register', host.api_key, {
      agent_uid: uid,
      runtime,
      price_gpu: 0.3,
      public_host: '127.0.0.1',
      machines: [
        {
          slot: 0,
          hostname: `h${agents}`,
          gpu_name: gpu,
          num_gpus: 1,
          gpu_ram: 24564,
          cpu_ram: 64000,
          disk_space: 500,
        },
      ],
    });
    return { uid, id: r.machines[0].machine_id };
  }
  const sync = (m: { uid: string; id: number }, instances: unknown[]) =>
    api('POST', '/api/agent/v1/sync', host.api_key, { agent_uid: m.uid, machine_ids: [m.id], instances });
  const rentOn = async (m: { id: number }, body: Record<string, unknown> = {}) => {
    const offers = (await api('POST', '/api/v0/bundles/', renter.api_key, { machine_id: { eq: m.id } }))
      .offers;
    expect(offers).toHaveLength(1);
    const r = await api('PUT', `/api/v0/asks/${offers[0].id}/`, renter.api_key, {
      image: 'ubuntu:22.04',
      disk: 5,
      runtype: 'ssh',
      ...body,
    });
    return r.new_contract as number;
  };
  const card = (page: Page, id: number) => page.locator(`li[data-instance="${id}"]`);

  beforeAll(async () => {
    c = await startConsoleServe('web-truths', ENV);
    ({ serve } = c);
    host = await c.user('host@example.com', '0');
    renter = await c.user('renter@example.com', '50');
    keyFile = await c.sshKey(renter.api_key);
    // Offers to rent in the dialog tests (the other machines are rented by then).
    for (const gpu of ['RTX 4000', 'RTX 4000']) await machine(gpu);
    b = await launchBrowser({ width: 390, height: 844 });
    await b.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: serve.url });
  });
  afterAll(async () => {
    await b?.close();
    await c?.stop();
  });

  it('an instance whose host could not start it reads "Failed to start" in red with the host\'s reason, and offers Start and Destroy', async () => {
    const m = await machine('RTX 3090');
    const id = await rentOn(m, { image: 'no-such/image:latest' });
    await sync(m, [{ id, state: 'loading' }]);
    await sync(m, [
      { id, state: 'exited', status_msg: 'image pull failed: manifest for no-such/image not found' },
    ]);
    const page = b.page;
    await c.signIn(b, page, 'renter@example.com');
    await page.goto(`${serve.url}/instances`);
    const k = card(page, id);
    const status = k.locator('[data-status]');
    await expect.poll(() => status.getAttribute('data-status')).toBe('failed');
    expect(await status.textContent()).toBe('Failed to start');
    expect(await status.getAttribute('class')).toContain('status-bad');
    expect(await k.getByTestId('host-reason').textContent()).toContain(
      'manifest for no-such/image not found',
    );
    // Its reason is in sight, not folded away.
    expect(await k.getByTestId('host-reason').isVisible()).toBe(true);
    await k.getByRole('button', { name: 'Start' }).waitFor();
    await k.getByRole('button', { name: 'Destroy' }).waitFor();
    // Unlabelled: "Instance #8", not "Instance 8 #8".
    expect((await k.locator('h2').textContent())!.trim()).toBe(`Instance #${id}`);
    // The host process runtime is said on the card and above the list.
    await k.getByText('host process, no isolation').waitFor();
    await page.getByText('No isolation.').waitFor();
  }, 60_000);

  it('a running instance lists each published port with its address, and the SSH command carries -i with the key file the server knows', async () => {
    // The key the renter registered, named by the path of its private file (as the demo does).
    const pub = readFileSync(`${keyFile}.pub`, 'utf8').trim().split(/\s+/);
    const keys = await api('GET', '/api/v0/ssh/', renter.api_key);
    const mine = (Array.isArray(keys) ? keys : keys.ssh_keys).find((k: { public_key: string }) =>
      k.public_key.includes(pub[1]!),
    );
    await api('PUT', `/api/v0/ssh/${mine.id}/`, renter.api_key, {
      ssh_key: `${pub[0]} ${pub[1]} ${keyFile}`,
    });
    // A container host: it publishes ports besides SSH's.
    const m = await machine('L40S', 'docker');
    const id = await rentOn(m, { env: { '-p 8080:8080': '1' }, label: 'with ports' });
    await sync(m, [
      {
        id,
        state: 'running',
        ssh_port: 40022,
        ports: {
          '22/tcp': [{ HostIp: '0.0.0.0', HostPort: '40022' }],
          '8080/tcp': [{ HostIp: '0.0.0.0', HostPort: '40973' }],
        },
      },
    ]);
    const page = b.page;
    await page.goto(`${serve.url}/instances`);
    const k = card(page, id);
    await k.locator('[data-status="running"]').waitFor();
    const port = k.locator('li[data-port="8080/tcp"]');
    expect((await port.textContent())!.replace(/\s+/g, ' ')).toContain('8080 → 40973');
    await port.getByRole('button', { name: 'Copy address of port 8080' }).click();
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe('127.0.0.1:40973');
    await k.getByRole('button', { name: 'Copy SSH command' }).click();
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(
      `ssh -i ${keyFile} -p 40022 root@127.0.0.1`,
    );
    expect(await unlabelledControls(page)).toEqual([]);
    // A label is shown with the id beside it.
    expect((await k.locator('h2').textContent())!.replace(/\s+/g, ' ').trim()).toBe(`with ports #${id}`);
  }, 60_000);

  it('shows a maintenance window scheduled on the machine on the instance card: when, how long, what kind', async () => {
    const m = await machine('A100 SXM4');
    const id = await rentOn(m);
    await sync(m, [{ id, state: 'running', ssh_port: 40023 }]);
    const start = Math.floor(Date.now() / 1000) + 2 * 86_400;
    const r = await api('POST', '/api/v0/machines/maintenances/batch', host.api_key, {
      machine_ids: [m.id],
      sdate: start,
      duration: 3,
      maintenance_category: 'power',
    });
    expect(r.results?.[0]?.success ?? true).toBe(true);
    const page = b.page;
    await page.goto(`${serve.url}/instances`);
    const note = card(page, id).getByTestId('maintenance');
    await note.waitFor();
    const text = (await note.textContent())!;
    const local = new Date(start * 1000).toLocaleString('en-US', {
      dateStyle: 'medium',
      timeStyle: 'short',
      timeZone: 'Europe/Berlin',
    });
    // Spaces as spaces: ICU puts a narrow no-break space before AM/PM.
    expect(text.replace(/\s/g, ' ')).toContain(local.replace(/\s/g, ' '));
    expect(text).toContain('for 3 h 0 min');
    expect(text).toContain('(power)');
  }, 60_000);

  it('a host gone offline: says since when, that it resumes if the host returns, and what is billed, not "destroy it"', async () => {
    const m = await machine('RTX A6000');
    const id = await rentOn(m);
    await sync(m, [{ id, state: 'running', ssh_port: 40024 }]);
    await api('POST', '/api/agent/v1/shutdown', host.api_key, { agent_uid: m.uid, machine_ids: [m.id] });
    const page = b.page;
    await page.goto(`${serve.url}/instances`);
    const k = card(page, id);
    await k.locator('[data-status="offline"]').waitFor();
    const meaning = (await k.locator('.meaning').textContent())!;
    expect(meaning).toMatch(/resumes/);
    expect(meaning).toMatch(/Compute is not billed meanwhile; disk is, until you destroy it/);
    expect(meaning).not.toMatch(/destroy it and rent another/i);
    expect(await k.getByTestId('last-seen').textContent()).toMatch(
      /^Last heard from its host \w{3} \d+, \d{4}/,
    );
  }, 60_000);

  it('the rent dialog offers templates, fills the form from one and rents with it', async () => {
    await api('POST', '/api/v0/template/', renter.api_key, {
      name: 'console-tpl',
      image: 'python',
      tag: '3.12-slim',
      env: '-e STAGE=tpl -p 8888:8888',
      onstart: 'echo from-template',
      runtype: 'ssh',
    });
    const m = await machine('RTX 2080', 'docker');
    const page = b.page;
    await page.goto(`${serve.url}/search`);
    await page.getByLabel('Verified machines only').uncheck();
    await page.getByLabel('GPU model').selectOption('RTX 2080');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page
      .locator(`tr[data-offer]`)
      .first()
      .getByRole('button', { name: /Rent offer/ })
      .click();
    const dialog = page.getByRole('dialog', { name: /Rent 1× RTX 2080/ });
    await dialog.getByLabel('Template').selectOption({ label: 'console-tpl (python:3.12-slim)' });
    expect(await dialog.getByLabel('Image').inputValue()).toBe('python:3.12-slim');
    expect(await dialog.getByLabel('On-start script').inputValue()).toBe('echo from-template');
    expect(await dialog.getByLabel('Environment').inputValue()).toBe('STAGE=tpl');
    expect(await dialog.getByLabel('Ports').inputValue()).toBe('8888');
    await dialog.getByRole('button', { name: /^Rent for/ }).click();
    await page.waitForURL(/\/instances\?new=\d+/);
    const id = Number(new URL(page.url()).searchParams.get('new'));
    const row = (await api('GET', `/api/v0/instances/${id}/`, renter.api_key)).instances;
    expect(row.machine_id).toBe(m.id);
    expect(row.template_name).toBe('console-tpl');
    expect(row.image_uuid).toBe('python:3.12-slim');
  }, 60_000);

  it('the rent dialog says before renting that there is no SSH key, links to adding one, and keeps an error in sight', async () => {
    await c.user('nokey@example.com', '20');
    const page = b.page;
    await c.signIn(b, page, 'nokey@example.com');
    await page.getByLabel('Verified machines only').uncheck();
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page
      .locator('tr[data-offer]')
      .first()
      .getByRole('button', { name: /Rent offer/ })
      .click();
    const dialog = page.getByRole('dialog');
    const warn = dialog.getByTestId('no-ssh-key');
    await warn.waitFor();
    expect(await warn.textContent()).not.toMatch(/\/api\//);
    expect(await warn.getByRole('link', { name: 'Add an SSH key' }).getAttribute('href')).toBe(
      '/account/ssh',
    );
    expect(await dialog.getByRole('button', { name: /^Rent for/ }).isDisabled()).toBe(true);
    await dialog.getByRole('button', { name: 'Close' }).click();

    // An error the server answers is in sight without scrolling, at 390 px.
    await c.signIn(b, page, 'renter@example.com');
    await page.getByLabel('Verified machines only').uncheck();
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page
      .locator('tr[data-offer]')
      .first()
      .getByRole('button', { name: /Rent offer/ })
      .click();
    const d = page.getByRole('dialog');
    await d.getByLabel('Image').fill('not a valid image reference!!');
    await d.getByRole('button', { name: /^Rent for/ }).click();
    const err = d.getByRole('alert');
    await err.waitFor();
    // Within the 844 px high viewport, top to bottom.
    await expect
      .poll(async () => {
        const r = await err.boundingBox();
        return !!r && r.y >= 0 && r.y + r.height <= 844;
      })
      .toBe(true);
    await d.getByRole('button', { name: 'Close' }).click();
  }, 60_000);

  it('search hides unverified machines by default, as the CLI does, badges them when shown, and shows CUDA, DLPerf and driver columns on request', async () => {
    const page = b.page;
    await page.goto(`${serve.url}/search`);
    const rows = page.locator('tr[data-offer]');
    // Every machine of this test is new, so unverified: none shows by default.
    await page.getByText(/offers? on verified machines/).waitFor();
    expect(await rows.count()).toBe(0);
    expect(await page.getByLabel('Verified machines only').isChecked()).toBe(true);
    await page.getByLabel('Verified machines only').uncheck();
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await expect.poll(() => rows.count()).toBeGreaterThan(0);
    await rows.first().locator('.badge', { hasText: 'unverified' }).waitFor();
    // One CPU core is "1 core".
    const cpu = await rows.locator('td[data-label="CPU"]').allTextContents();
    for (const t of cpu) expect(t).not.toMatch(/^1 cores$/);
    for (const col of ['CUDA', 'DLPerf', 'Driver']) {
      expect(await page.locator(`td[data-label="${col}"]`).count()).toBe(0);
      await page.getByLabel(col, { exact: true }).check();
      await expect.poll(() => page.locator(`td[data-label="${col}"]`).count()).toBeGreaterThan(0);
    }
  }, 60_000);

  it('the ledger sums the meter rows per instance, kind and UTC hour, with times in UTC like the history', async () => {
    const page = b.page;
    await page.goto(`${serve.url}/account/billing`);
    const ledger = page.getByRole('table', { name: 'Ledger' });
    const compute = ledger.locator('tr[data-kind="compute"]');
    await expect.poll(() => compute.count()).toBeGreaterThan(0);
    // The meter wrote a row every half second for each running instance: they are one line each.
    const ids = await compute.locator('td[data-label="Instance"]').allTextContents();
    expect(new Set(ids).size).toBe(ids.length);
    expect(Number(await compute.first().getAttribute('data-rows'))).toBeGreaterThan(1);
    const when = compute.first().locator('td').first();
    expect(await when.textContent()).toMatch(/^\d{4}-\d\d-\d\d \d\d:00–\d\d:00 UTC$/);
    expect(await when.getAttribute('data-label')).toBe('When (UTC)');
  }, 60_000);

  it('at 390 px the active account tab is in sight, the audit log pages, and the TOTP key wraps between its groups', async () => {
    const page = b.page;
    await c.signIn(b, page, 'renter@example.com');
    // Enough audited writes for more than one page.
    for (let n = 0; n < 25; n++) await api('PUT', '/api/v0/users/', renter.api_key, { fullname: `R ${n}` });
    await page.goto(`${serve.url}/account/security`);
    await page.getByRole('heading', { name: 'Account' }).waitFor();

    const active = page.locator('.tabs [aria-current="page"]');
    await expect.poll(() => active.textContent()).toBe('Security');
    const box = (await active.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(390);
    const audit = page.getByRole('table', { name: 'Audit log' });
    await expect.poll(() => audit.locator('tbody tr').count()).toBe(20);
    const pager = page.getByRole('navigation', { name: 'Audit log pages' });
    expect(await pager.textContent()).toMatch(/Page 1 of \d+/);
    const firstRow = await audit.locator('tbody tr').first().getAttribute('data-audit');
    await pager.getByRole('button', { name: 'Next' }).click();
    await expect.poll(() => pager.textContent()).toMatch(/Page 2 of/);
    expect(await audit.locator('tbody tr').first().getAttribute('data-audit')).not.toBe(firstRow);

    // The authenticator app's key: each line of the box ends between groups of four.
    await page.getByRole('button', { name: 'Add authenticator app' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add an authenticator app' });
    // The add-method authorization first: an e-mailed code.
    const mailFile = path.join(c.dir, 'mail.jsonl');
    const mails = () =>
      existsSync(mailFile) ? readFileSync(mailFile, 'utf8').trim().split('\n').filter(Boolean).length : 0;
    const before = mails();
    await dialog.getByRole('button', { name: 'E-mail me a code' }).click();
    const code = await waitFor(() => {
      const all = existsSync(mailFile)
        ? readFileSync(mailFile, 'utf8').trim().split('\n').filter(Boolean)
        : [];
      return all.length > before ? /\b(\d{6})\b/.exec(JSON.parse(all.at(-1)!).text)?.[1] : null;
    }, 'the e-mailed code');
    await dialog.getByLabel('Code', { exact: true }).fill(code);
    await dialog.getByRole('button', { name: 'Authorize' }).click();
    const secret = dialog.getByTestId('totp-secret');
    await expect.poll(() => secret.textContent()).not.toBe('…');
    // The text of each rendered line, from the boxes of its characters.
    const lines = await page.evaluate<string[]>(`(() => {
      const el = document.querySelector('[data-testid="totp-secret"]');
      const range = document.createRange();
      const byTop = new Map();
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const t = node.textContent || '';
        for (let i = 0; i < t.length; i++) {
          range.setStart(node, i);
          range.setEnd(node, i + 1);
          const r = range.getBoundingClientRect();
          if (r.width === 0) continue;
          const top = Math.round(r.top);
          byTop.set(top, (byTop.get(top) || '') + t[i]);
        }
      }
      return [...byTop.entries()].sort((a, b) => a[0] - b[0]).map(([, s]) => s.trim());
    })()`);
    expect(lines.length).toBeGreaterThan(1);
    for (const l of lines) expect(l).toMatch(/^([A-Z2-7]{4} )*[A-Z2-7]{1,4}$/);
    await dialog.getByRole('button', { name: 'Close' }).click();
  }, 60_000);
});
