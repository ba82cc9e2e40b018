// The console's charts in headless Chromium against a real `openrig serve`: each chart's points
// (the data the chart drew, read from its figure's data-plotted) are the numbers the API answers
// when asked directly — an instance's usage history (Instances), a renter's spend per day and per
// instance (Billing), a host's earnings per day and per machine (Hosting) — and each chart fits a
// phone's 390 px as well as a 1440 px screen. The host's "agent" is this test, talking the agent
// protocol over HTTP; older usage samples are written into the database as a day of use would.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Page } from 'playwright-core';
import { callApi, waitFor, type Proc } from '../helpers/process.js';
import {
  launchBrowser,
  noBrowserReason,
  startConsoleServe,
  type Browser,
  type ConsoleServe,
} from '../helpers/browser.js';

const ENV = {
  OPENRIG_SECRET_KEY: 'c7'.repeat(32),
  OPENRIG_METER_INTERVAL_MS: '500',
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
};
const AGENT = '/api/agent/v1';
const DAY_S = 86_400;
const GB = 1e9;
const WIDTHS = [1440, 390] as const;
const reason = noBrowserReason();
if (reason) console.log(`skipping the web console chart tests: ${reason}`);

const machine = (slot: number) => ({
  slot,
  hostname: `chart-host-${slot}`,
  gpu_name: 'RTX 4090',
  num_gpus: 1,
  gpu_ram: 24564,
  cpu_ram: 64000,
  disk_space: 500,
});

describe.skipIf(!!reason)('web console charts', () => {
  let c: ConsoleServe;
  let serve: Proc & { url: string };
  let b: Browser;
  let host: { id: number; api_key: string };
  let renter: { id: number; api_key: string };
  let machines: number[];
  /** The instance whose usage is charted (kept), and the one destroyed after it was billed. */
  let kept: number;
  let billed: number;
  const api = (key: string, method: string, p: string, body?: unknown) =>
    callApi(serve.url, method, p, key, body);
  const sync = (instances: unknown[]) =>
    api(host.api_key, 'POST', `${AGENT}/sync`, {
      agent_uid: 'chart-agent',
      machine_ids: machines,
      instances,
    });
  const running = (id: number, i: number, usage: { gpu_util: number; disk_usage_bytes: number }) => ({
    id,
    state: 'running',
    ssh_port: 40022 + i,
    ...usage,
  });

  /** The data a chart drew, once drawn: [x, ...series] for a time chart, [[key, value]…] for a bar list. */
  const plotted = async (page: Page, name: string): Promise<any> => {
    const fig = page.locator(`figure[data-chart="${name}"]:is([data-state="drawn"], [data-state="empty"])`);
    await fig.waitFor();
    return JSON.parse((await fig.getAttribute('data-plotted'))!);
  };
  /** The page and every chart on it fit the window's width. */
  const fits = async (page: Page, width: number) => {
    const r = await page.evaluate<{ page: number; charts: number[] }>(`({
      page: document.documentElement.scrollWidth - window.innerWidth,
      charts: Array.from(document.querySelectorAll('figure.chart'), (f) => Math.ceil(f.getBoundingClientRect().right)),
    })`);
    expect(r.page, `page overflow at ${width} px`).toBeLessThanOrEqual(0);
    expect(r.charts.length).toBeGreaterThan(0);
    for (const right of r.charts)
      expect(right, `a chart's right edge at ${width} px`).toBeLessThanOrEqual(width);
    // A drawn time chart's canvas has a width (it follows its box).
    const canvases = await page
      .locator('figure.chart .chart-box canvas')
      .evaluateAll((cs) => cs.map((x) => x.getBoundingClientRect().width));
    for (const w of canvases) {
      expect(w).toBeGreaterThan(100);
      expect(w).toBeLessThanOrEqual(width);
    }
  };

  beforeAll(async () => {
    c = await startConsoleServe('web-charts', ENV);
    serve = c.serve;
    host = await c.user('host@example.com', '0');
    renter = await c.user('renter@example.com', '50');
    await c.sshKey(renter.api_key);
    const reg = await api(host.api_key, 'POST', `${AGENT}/register`, {
      agent_uid: 'chart-agent',
      machines: [machine(0), machine(1)],
      price_gpu: 2.5,
    });
    expect(reg.status, JSON.stringify(reg.body)).toBe(200);
    machines = reg.body.machines.map((m: { machine_id: number }) => m.machine_id);
    const rent = async (mid: number) => {
      const r = await api(renter.api_key, 'PUT', `/api/v0/asks/${mid}/`, { image: 'ubuntu', disk: 10 });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.new_contract as number;
    };
    kept = await rent(machines[0]!);
    billed = await rent(machines[1]!);
    const s = await sync([
      running(kept, 0, { gpu_util: 42, disk_usage_bytes: 3 * GB }),
      running(billed, 1, { gpu_util: 90, disk_usage_bytes: 1 * GB }),
    ]);
    expect(s.status, JSON.stringify(s.body)).toBe(200);
    // A day of use before this one: hourly samples two and three days back, minutes of the last hour.
    const db = new Database(path.join(c.dir, 'openrig.db'));
    db.pragma('busy_timeout = 5000');
    const now = Date.now();
    const hour = Math.floor(now / 3_600_000) * 3_600_000;
    const minute = Math.floor(now / 60_000) * 60_000;
    const ins = db.prepare(
      'insert into usage_samples (instance_id, span_s, t, gpu_util, gpu_mem_bytes, disk_usage_bytes) values (?, ?, ?, ?, ?, ?)',
    );
    for (let h = 72; h >= 48; h -= 1)
      ins.run(kept, 3600, hour - h * 3_600_000, (h * 7) % 100, null, (1 + (h % 5)) * GB);
    for (let m = 50; m >= 5; m -= 5) ins.run(kept, 60, minute - m * 60_000, m, null, 2 * GB + m * 1e6);
    db.close();
    // Billed for a few meter ticks, then destroyed: its charges stay as they are from then on.
    await waitFor(async () => {
      const h = await api(renter.api_key, 'GET', '/api/v0/users/me/invoices?owner=me');
      return h.body.invoices?.some(
        (i: { instance_id: number; amount: number }) => i.instance_id === billed && i.amount > 0,
      );
    }, 'a charge of the billed instance');
    expect((await api(renter.api_key, 'DELETE', `/api/v0/instances/${billed}/`)).status).toBe(200);
    b = await launchBrowser();
  });
  afterAll(async () => {
    await b?.close();
    await c?.stop();
  });

  it('draws an instance’s GPU utilisation, GPU memory and disk use as the usage-history API answers, at 1440 and 390 px', async () => {
    const page = b.page;
    await c.signIn(b, page, 'renter@example.com');
    const direct = await api(renter.api_key, 'GET', `/api/v0/instances/${kept}/usage-history/`);
    expect(direct.status).toBe(200);
    const samples = direct.body.samples as {
      t: number;
      span_s: number;
      gpu_util: number | null;
      gpu_mem_bytes: number | null;
      disk_usage_bytes: number | null;
    }[];
    // 25 hours, 10 minutes written above, and the minute the sync wrote.
    expect(samples.filter((s) => s.span_s === 3600)).toHaveLength(25);
    expect(samples.filter((s) => s.span_s === 60).length).toBe(11);
    expect(samples.at(-1)).toMatchObject({ gpu_util: 42, disk_usage_bytes: 3 * GB });
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${serve.url}/instances`);
      const card = page.locator(`li[data-instance="${kept}"]`);
      await card.locator('summary', { hasText: 'Usage over time' }).click();
      const x = samples.map((s) => s.t);
      expect(await plotted(page, 'gpu-util')).toEqual([x, samples.map((s) => s.gpu_util)]);
      expect(await plotted(page, 'disk')).toEqual([
        x,
        samples.map((s) => (s.disk_usage_bytes === null ? null : s.disk_usage_bytes / GB)),
      ]);
      // No agent reports GPU memory yet: the chart says so instead of drawing nothing.
      expect(await plotted(page, 'gpu-mem')).toEqual([]);
      await card.getByText("Not reported by this host's agent.").waitFor();
      await fits(page, width);
    }
  });

  it('draws the renter’s spend per day and per instance as the billing history answers, at 1440 and 390 px', async () => {
    const page = b.page;
    await c.signIn(b, page, 'renter@example.com');
    // The kept instance is billed still: it is destroyed now, so that the numbers hold still.
    expect((await api(renter.api_key, 'DELETE', `/api/v0/instances/${kept}/`)).status).toBe(200);
    // The page's range: the last 30 UTC days, today included.
    const today = Math.floor(Date.now() / 1000 / DAY_S) * DAY_S;
    const sdate = today - 29 * DAY_S;
    const edate = today + DAY_S;
    const h = await api(
      renter.api_key,
      'GET',
      `/api/v0/users/me/invoices?owner=me&sdate=${sdate}&edate=${edate}`,
    );
    expect(h.status).toBe(200);
    const charges = (
      h.body.invoices as { type: string; instance_id: number; amount: number; start: number }[]
    ).filter((i) => i.type === 'charge');
    const days = Array.from({ length: 30 }, (_, i) => sdate + i * DAY_S);
    const micros = (n: number) => Math.round(n * 1e6);
    const perDay = days.map(
      (d) =>
        charges
          .filter((i) => Math.floor(i.start / DAY_S) * DAY_S === d)
          .reduce((s, i) => s + micros(i.amount), 0) / 1e6,
    );
    // Every charge is today's, and the days add up to the history's own total.
    expect(perDay.at(-1)).toBeGreaterThan(0);
    expect(perDay.reduce((s, v) => s + v, 0)).toBeCloseTo(h.body.totals.charges, 6);
    const perInstance = [kept, billed]
      .map((id) => [
        id,
        charges.filter((i) => i.instance_id === id).reduce((s, i) => s + micros(i.amount), 0) / 1e6,
      ])
      .sort((a, b) => b[1]! - a[1]! || String(a[0]).localeCompare(String(b[0])));
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${serve.url}/account/billing`);
      expect(await plotted(page, 'spend-per-day')).toEqual([days, perDay]);
      expect(await plotted(page, 'spend-per-instance')).toEqual(perInstance);
      await fits(page, width);
    }
  });

  it('draws the host’s earnings per day and per machine as the earnings API answers, at 1440 and 390 px', async () => {
    const page = b.page;
    await c.signIn(b, page, 'host@example.com');
    const today = Math.floor(Date.now() / 1000 / DAY_S);
    const e = await api(
      host.api_key,
      'GET',
      `/api/v0/users/me/machine-earnings?owner=me&sday=${today - 29}&eday=${today}`,
    );
    expect(e.status).toBe(200);
    const perDay = e.body.per_day as { day: number; earn: number }[];
    expect(perDay).toHaveLength(30);
    expect(perDay.at(-1)!.earn).toBeGreaterThan(0);
    const perMachine = (e.body.per_machine as { machine_id: number; earn: number }[])
      .map((m) => [m.machine_id, m.earn])
      .sort((a, b) => b[1]! - a[1]! || String(a[0]).localeCompare(String(b[0])));
    expect(perMachine.map((m) => m[0]).sort()).toEqual([...machines].sort());
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${serve.url}/hosting`);
      expect(await plotted(page, 'earnings-per-day')).toEqual([
        perDay.map((d) => d.day * DAY_S),
        perDay.map((d) => d.earn),
      ]);
      expect(await plotted(page, 'earnings-per-machine')).toEqual(perMachine);
      await fits(page, width);
    }
  });
});
