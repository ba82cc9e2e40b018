// The console's volumes page in headless Chromium against a real `openrig serve` and a real
// `openrig agent` (process runtime, two machines): a volume listed with its status, cloned from
// the page into an offer on the other machine (its status cloning, then ready once the agent
// copied it), its files on the host.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
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
  OPENRIG_SECRET_KEY: 'd0'.repeat(32),
  OPENRIG_HEARTBEAT_S: '0.5',
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
};
const reason = noBrowserReason();
if (reason) console.log(`skipping the volumes page test: ${reason}`);

describe.skipIf(!!reason)('web console, volumes page', () => {
  let c: ConsoleServe;
  let agent: Proc;
  let b: Browser;
  let host: { id: number; api_key: string };
  let renter: { id: number; api_key: string };
  let machines: number[];
  const api = (method: string, p: string, key: string, body?: unknown) =>
    callApi(c.serve.url, method, p, key, body);

  beforeAll(async () => {
    c = await startConsoleServe('web-volumes', ENV);
    host = await c.user('host@example.com', '0');
    renter = await c.user('renter@example.com', '20');
    agent = startProc(
      processAgentArgs(c.serve.url, c.stateDir, { gpus: 'RTX 4090x1', extra: ['--machines', '2'] }),
      {
        ...c.env,
        OPENRIG_LOG_LEVEL: 'info',
        OPENRIG_API_KEY: host.api_key,
      },
    );
    machines = await waitRegistered(agent);
    b = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    await b?.close();
    await c?.stop(agent);
  });

  it('shows each volume with its status and clones one into an offer on another machine', async () => {
    const offers: number[] = [];
    for (const m of machines) {
      const l = await api('POST', '/api/v0/volumes/', host.api_key, {
        size: 20,
        machine: m,
        price_disk: 0.1,
      });
      expect(l.status, JSON.stringify(l.body)).toBe(200);
      offers.push(l.body.volume_asks[0].id);
    }
    const made = await api('PUT', '/api/v0/volumes/', renter.api_key, {
      size: 5,
      id: offers[0],
      name: 'ckpt',
    });
    const src = made.body.volume_id as number;
    const data = (id: number) => path.join(c.stateDir, 'volumes', String(id), 'data');
    mkdirSync(data(src), { recursive: true });
    writeFileSync(path.join(data(src), 'weights.txt'), 'w1\n');

    const page = b.page;
    await c.signIn(b, page, 'renter@example.com');
    await page.goto(`${c.serve.url}/volumes`);
    const table = page.getByRole('table', { name: 'Your volumes' });
    const row = (id: number) => table.locator(`tr[data-volume="${id}"]`);
    await row(src).waitFor();
    expect(await row(src).locator('td[data-label="Status"]').textContent()).toBe('ready');

    await page.getByLabel('Volume', { exact: true }).selectOption(String(src));
    await page.getByLabel('Into offer').fill(String(offers[1]));
    await page.getByRole('button', { name: 'Clone volume' }).click();
    await page.getByText(/Cloning volume \d+ into volume \d+/).waitFor();
    const vols = (await api('GET', '/api/v0/volumes?owner=me', renter.api_key)).body.volumes as {
      id: number;
    }[];
    const dst = Math.max(...vols.map((v) => v.id));
    expect(dst).not.toBe(src);
    // The page reads the status again while it clones: ready once the agent copied it.
    await expect
      .poll(() => row(dst).locator('td[data-label="Status"]').textContent(), { timeout: 30_000 })
      .toBe('ready');
    expect(await row(dst).locator('td[data-label="Machine"]').textContent()).toBe(String(machines[1]));
    await waitFor(
      () => readFileSync(path.join(data(dst), 'weights.txt'), 'utf8') === 'w1\n',
      'the clone on the host',
    );
    expect(await unlabelledControls(page)).toEqual([]);
  }, 90_000);
});
