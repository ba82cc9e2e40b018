// Host trust in the console, in headless Chromium against a real `openrig serve` and a real
// process-runtime agent that runs its benchmarks: a renter reports a problem from the instance
// card (the server's refusal of a second one that day shown as it says it); the host sees, per
// machine, the latest benchmark run (each figure, when, the agent's version), the reliability with
// the formula's parts, the verification state and history with reasons, and the report, and its
// payouts (pending, paid, failed; amount, fee, destination) and where it is paid, every number as
// the API answers it; offers show their benchmark figures and reliability. At 1440 and 390 px no
// page is wider than the screen, and none breaks the Content-Security-Policy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Page } from 'playwright-core';
import {
  callApi,
  processAgentArgs,
  runCli,
  startProc,
  waitFor,
  waitRegistered,
  type Proc,
} from '../helpers/process.js';
import {
  launchBrowser,
  noBrowserReason,
  screenshot,
  startConsoleServe,
  type Browser,
  type ConsoleServe,
} from '../helpers/browser.js';

const ENV = {
  OPENRIG_SECRET_KEY: 'd7'.repeat(32),
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
  OPENRIG_HEARTBEAT_S: '1',
};
const reason = noBrowserReason();
if (reason) console.log(`skipping the web console trust tests: ${reason}`);

const RECORD_VIOLATIONS = `
  window.__cspViolations = [];
  document.addEventListener('securitypolicyviolation', (e) => {
    window.__cspViolations.push(e.violatedDirective + ' ' + (e.blockedURI || ''));
  });
`;
const MESSAGE = 'the GPU vanished from nvidia-smi after an hour';
const usd2 = (n: number) => `$${n.toFixed(2)}`;
const DAY_S = 86_400;
const OURS = ['Offers', 'Verification history', 'Benchmarks', 'Reports', 'Payouts'];

describe.skipIf(!!reason)('web console: host trust and payouts', () => {
  let c: ConsoleServe;
  let agent: Proc;
  let b: Browser;
  let host: { id: number; api_key: string };
  let renter: { id: number; api_key: string };
  let machine: number;
  let instance: number;
  const consoleMessages: string[] = [];
  const api = (key: string, method: string, p: string, body?: unknown) =>
    callApi(c.serve.url, method, p, key, body);

  /**
   * `openrig admin ARGS` on the server's data directory, again while SQLite says it is locked
   * (the server, its agent and the admin command write the one file at once).
   */
  const admin = async (...args: string[]): Promise<unknown> => {
    for (let n = 0; ; n++) {
      const r = await runCli(['admin', ...args, '--data', c.dir], c.env);
      if (r.code === 0) return JSON.parse(r.stdout);
      if (n >= 10 || !/database is locked/.test(r.stderr))
        throw new Error(`admin ${args.join(' ')}: ${r.stderr}`);
      await new Promise((res) => setTimeout(res, 300));
    }
  };
  const violations = async (page: Page): Promise<string[]> => [
    ...(await page.evaluate<string[]>('window.__cspViolations || []')),
    ...consoleMessages.filter((m) => /Content Security Policy|Content-Security-Policy/i.test(m)),
  ];
  /**
   * At 1440 and 390 px wide the page is no wider than the screen, and none of the tables of this
   * test scrolls sideways (the host's Machines table is wider than 1440 px and scrolls).
   */
  const fits = async (page: Page) => {
    for (const w of [1440, 390]) {
      await page.setViewportSize({ width: w, height: 900 });
      await page.waitForTimeout(150);
      const over = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
      const wide = await page.evaluate<string[]>(`Array.from(document.querySelectorAll('body *'))
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
        .slice(0, 8).map((e) => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))`);
      expect(over, `wider than ${w} px by ${over} px: ${wide.join(', ')}`).toBeLessThanOrEqual(0);
      const scrolling = await page.evaluate<string[]>(`Array.from(document.querySelectorAll('.table-scroll'))
        .filter((e) => ${JSON.stringify(OURS)}.includes(e.querySelector('table')?.getAttribute('aria-label')))
        .filter((e) => e.scrollWidth > e.clientWidth + 1)
        .map((e) => (e.querySelector('table')?.getAttribute('aria-label') ?? '?') + ' ' + e.scrollWidth + '/' + e.clientWidth)`);
      expect(scrolling, `tables scrolling sideways at ${w} px`).toEqual([]);
    }
    await page.setViewportSize({ width: 1440, height: 900 });
  };

  beforeAll(async () => {
    c = await startConsoleServe('web-trust', ENV);
    host = await c.user('trust-host@example.com', '0');
    renter = await c.user('trust-renter@example.com', '50');
    await c.sshKey(renter.api_key);
    agent = startProc(processAgentArgs(c.serve.url, c.stateDir, { gpus: 'RTX 4090x1' }), {
      ...c.env,
      OPENRIG_API_KEY: host.api_key,
      OPENRIG_TEST_BENCHMARKS: '1',
    });
    [machine] = (await waitRegistered(agent)) as [number];
    // The agent's run at registration: its rows are the machine's latest benchmarks.
    await waitFor(
      async () =>
        (await api(host.api_key, 'GET', `/api/v0/machines/${machine}/verification`)).body.benchmarks?.length >
        0,
      'the agent to post its benchmarks',
      60_000,
    );
    // Two recorded changes with their reasons, the machine verified in the end.
    await admin('verify-machine', '--id', String(machine), '--json');
    await admin('verify-machine', '--id', String(machine), '--unverify', '--json');
    await admin('verify-machine', '--id', String(machine), '--json');

    // Three payouts of the host, as the payout run writes them (times in milliseconds): the oldest marked paid and the
    // latest failed by the operator, the middle one pending.
    const db = new Database(path.join(c.dir, 'openrig.db'));
    const now = Math.floor(Date.now() / 1000);
    const start = Math.floor(now / (7 * DAY_S)) * 7 * DAY_S - 21 * DAY_S;
    const ins = db.prepare(
      `INSERT INTO payouts (host_id, period_start, period_end, gross_micros, cut_percent, cut_micros, net_micros, status, method, destination, note, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, '', ?)`,
    );
    const ids: number[] = [];
    for (const [k, gross, dest] of [
      [0, 120_456_789, 'old@example.com'],
      [1, 80_000_000, 'host@example.com'],
      [2, 33_333_333, 'host@example.com'],
    ] as const) {
      const cut = Math.round((gross * 12.5) / 100);
      const r = ins.run(
        host.id,
        (start + k * 7 * DAY_S) * 1000,
        (start + (k + 1) * 7 * DAY_S) * 1000,
        gross,
        12.5,
        cut,
        gross - cut,
        'paypal_manual',
        dest,
        now * 1000,
      );
      ids.push(Number(r.lastInsertRowid));
    }
    db.close();
    await admin('payouts', 'mark', '--id', String(ids[0]), '--status', 'paid', '--note', 'PayPal 5TY0');
    await admin('payouts', 'mark', '--id', String(ids[2]), '--status', 'failed', '--note', 'account closed');

    b = await launchBrowser();
    await b.context.addInitScript({ content: RECORD_VIOLATIONS });
    b.page.on('console', (m) => consoleMessages.push(m.text()));
  }, 120_000);
  afterAll(async () => {
    await b?.close();
    await c?.stop(agent);
  });

  it('offers show their benchmark figures and reliability as the API answers them', async () => {
    const page = b.page;
    await c.signIn(b, page, 'trust-renter@example.com');
    const offer = (
      await api(renter.api_key, 'POST', '/api/v0/bundles/', {
        machine_id: { eq: machine },
        verified: { eq: true },
      })
    ).body.offers[0];
    expect(offer?.machine_id).toBe(machine);
    const cpu = (
      await api(
        renter.api_key,
        'GET',
        `/api/v0/benchmarks?select_filters=${encodeURIComponent(JSON.stringify({ machine_id: { eq: machine }, name: { eq: 'cpu_score' } }))}`,
      )
    ).body[0];
    expect(cpu?.score).toBeGreaterThan(0);
    await page.goto(`${c.serve.url}/search`);
    const row = page.locator(`tr[data-offer="${offer.id}"]`);
    await row.waitFor();
    const bench = (k: string) => row.locator(`[data-bench="${k}"]`).innerText();
    expect(await bench('dlperf')).toBe(`DLPerf ${offer.dlperf ? offer.dlperf.toFixed(1) : '—'}`);
    expect(await bench('total_flops')).toBe(
      `FP16 ${offer.total_flops ? `${offer.total_flops.toFixed(1)} TFLOPS` : '—'}`,
    );
    await expect.poll(() => bench('cpu_score')).toBe(`CPU score ${Math.round(cpu.score)}`);
    expect(await bench('disk_bw')).toBe(`Disk ${offer.disk_bw ? `${offer.disk_bw.toFixed(0)} MB/s` : '—'}`);
    expect(await bench('inet')).toBe(
      `Net ↑${Math.round(offer.inet_up)} ↓${Math.round(offer.inet_down)} Mbps`,
    );
    expect(await row.locator('[data-label="Reliability"]').innerText()).toBe(
      `${(offer.reliability * 100).toFixed(2)} %`,
    );
    await fits(page);
    await screenshot(page, 'search-benchmarks');
  }, 60_000);

  it('a renter reports a problem from the instance card; a second that day shows the server refusal', async () => {
    const page = b.page;
    const rented = await api(renter.api_key, 'PUT', `/api/v0/asks/${machine}/`, {
      image: 'ubuntu:22.04',
      disk: 5,
      runtype: 'ssh',
      label: 'trust-check',
    });
    expect(rented.status, JSON.stringify(rented.body)).toBe(200);
    instance = rented.body.new_contract;
    await page.goto(`${c.serve.url}/instances`);
    const card = page.locator(`li[data-instance="${instance}"]`);
    await card.getByRole('button', { name: 'Report a problem' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Problem', { exact: true }).selectOption('gpu');
    await dialog.getByLabel('What happened').fill(MESSAGE);
    await dialog.getByRole('button', { name: 'Send report' }).click();
    const sent = dialog.getByTestId('report-sent');
    await sent.waitFor();
    expect(await sent.innerText()).toMatch(new RegExp(`^Report #\\d+ sent .+: GPU — ${MESSAGE}\\.$`));
    await fits(page);
    await dialog.getByRole('button', { name: 'Done' }).click();

    // The server keeps one a machine a day: its refusal is shown as it says it.
    const refusal = await api(renter.api_key, 'POST', `/api/v0/machines/${machine}/reports/`, {
      problem: 'slow',
      message: 'x',
    });
    expect(refusal.status).toBe(409);
    await card.getByRole('button', { name: 'Report a problem' }).click();
    await dialog.getByLabel('Problem', { exact: true }).selectOption('slow');
    await dialog.getByRole('button', { name: 'Send report' }).click();
    await expect.poll(() => dialog.getByRole('alert').innerText()).toBe(refusal.body.msg);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(await violations(page)).toEqual([]);
  }, 60_000);

  it("the host sees the machine's benchmarks, reliability parts, verification history and reports", async () => {
    const page = b.page;
    await c.signIn(b, page, 'trust-host@example.com');
    await page.goto(`${c.serve.url}/hosting`);
    const trust = (await api(host.api_key, 'GET', '/api/v0/trust/machines/')).body.machines;
    const mine = trust.find((m: { machine_id: number }) => m.machine_id === machine);
    const row = page.locator(`tr[data-machine="${machine}"]`);
    await expect.poll(() => row.getByTestId('reliability').innerText()).toBe(mine.reliability.toFixed(4));
    expect(mine.reports).toBe(1);
    expect((await row.getByTestId('reports').innerText()).trim()).toBe('1 report');

    await row.getByRole('link', { name: `Details of machine ${machine}` }).click();
    await page.getByRole('heading', { name: `Machine #${machine}` }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/hosting/machines/${machine}`);

    const v = (await api(host.api_key, 'GET', `/api/v0/machines/${machine}/verification`)).body;
    const state = page.getByTestId('verification-state');
    await expect.poll(() => state.innerText()).toBe(v.verification);
    expect(v.verification).toBe('verified');
    const history = page.getByRole('table', { name: 'Verification history' }).locator('tr[data-event]');
    expect(await history.count()).toBe(v.history.length);
    expect(v.history.length).toBeGreaterThanOrEqual(3);
    for (const e of v.history) {
      const tr = page.locator(`tr[data-event="${e.id}"]`);
      expect(await tr.locator('[data-label="Change"]').innerText()).toBe(`${e.from} → ${e.to}`);
      expect(await tr.locator('[data-label="Reason"]').innerText()).toBe(e.reason);
      expect(await tr.locator('[data-label="By"]').innerText()).toBe(
        e.by === 'rule' ? 'the rules' : 'an operator',
      );
    }

    // The latest run: each figure with its unit, when it ran and the agent that ran it.
    const newest = Math.max(...v.benchmarks.map((r: { last_update: number }) => r.last_update));
    const latest = v.benchmarks.filter((r: { last_update: number }) => r.last_update === newest);
    const figures = page.getByRole('table', { name: 'Benchmarks' }).locator('tr[data-figure]');
    expect(await figures.count()).toBe(latest.length);
    for (const r of latest) {
      const tr = page.locator(`tr[data-figure="${r.name}"]`);
      expect(await tr.getByTestId('score').innerText()).toBe(`${r.score} ${r.unit}`);
    }
    expect(latest.map((r: { name: string }) => r.name)).toEqual(
      expect.arrayContaining(['cpu_score', 'disk_bw', 'inet_up', 'inet_down']),
    );
    const when = await page.getByTestId('benchmarks-when').innerText();
    expect(when).toContain(latest[0].image);
    expect(latest[0].image).toMatch(/^openrig-agent \S+$/);
    expect(when).toContain(new Date(newest * 1000).toISOString().slice(0, 16).replace('T', ' '));

    // Reliability and the formula's parts, as the API computes them (the report counts at once).
    const rel = (await api(host.api_key, 'GET', `/api/v0/machines/${machine}/reliability/`)).body;
    expect(rel.reporters).toBe(1);
    expect(await page.getByTestId('reliability-value').innerText()).toBe(rel.reliability.toFixed(4));
    for (const k of ['uptime', 'starts', 'endings', 'reports'] as const)
      expect(await page.getByTestId(`factor-${k}`).innerText()).toBe(rel.factors[k].toFixed(4));
    expect(await page.locator('[data-factor="reports"]').innerText()).toContain(
      '1 renter reported a problem',
    );

    const reports = (await api(host.api_key, 'GET', `/api/v0/machines/${machine}/reports/`)).body;
    expect(reports).toHaveLength(1);
    const rep = page.locator(`tr[data-report="${reports[0].id}"]`);
    expect(await rep.locator('[data-label="Message"]').innerText()).toBe(MESSAGE);
    expect(await rep.locator('[data-label="Problem"]').innerText()).toBe('GPU');
    await fits(page);
    await screenshot(page, 'hosting-machine');
    expect(await violations(page)).toEqual([]);
  }, 60_000);

  it('the host sees its payouts with amount, fee, state and destination, and sets where it is paid', async () => {
    const page = b.page;
    await page.goto(`${c.serve.url}/hosting`);
    const mine = (await api(host.api_key, 'GET', '/api/v0/payouts/')).body;
    expect(mine.payouts.map((p: { status: string }) => p.status)).toEqual(['failed', 'pending', 'paid']);
    expect(mine.payouts[2]).toMatchObject({
      gross: 120.456789,
      cut_percent: 12.5,
      destination: 'old@example.com',
    });
    const table = page.getByRole('table', { name: 'Payouts' });
    await table.waitFor();
    for (const p of mine.payouts) {
      const tr = table.locator(`tr[data-payout="${p.id}"]`);
      expect(await tr.locator('[data-label="Status"] .badge').innerText()).toBe(p.status);
      expect(await tr.locator('[data-label="Gross"]').innerText()).toBe(usd2(p.gross));
      expect(await tr.locator('[data-label="Fee"]').innerText()).toBe(
        `${usd2(p.cut_amount)} (${p.cut_percent} %)`,
      );
      expect(await tr.locator('[data-label="Amount"]').innerText()).toBe(usd2(p.amount));
      expect(await tr.locator('[data-label="Destination"]').innerText()).toBe(`PayPal: ${p.destination}`);
      expect(await tr.locator('[data-label="Note"]').innerText()).toBe(p.note || '—');
      const day = (t: number) => new Date(t * 1000).toISOString().slice(0, 10);
      expect(await tr.locator('[data-label="Period (UTC)"]').innerText()).toBe(
        `${day(p.period_start)} – ${day(p.period_end)}`,
      );
    }
    expect(await page.getByTestId('payout-destination').innerText()).toBe('Paid to none set');
    // What the host is owed now: the pending payout plus what it earned since, less the fee.
    const owed = (await api(host.api_key, 'GET', '/api/v0/users/me/machine-earnings')).body.current;
    expect(owed.balance).toBeGreaterThanOrEqual(70);
    expect(await page.getByTestId('owed-balance').innerText()).toBe(usd2(owed.balance));
    expect(await page.getByTestId('owed-total').innerText()).toBe(usd2(owed.total));
    expect(await page.getByTestId('owed-fee').innerText()).toBe(usd2(owed.service_fee));

    // Where later payouts go: an internal account (a cost centre), then the server's refusal of a
    // PayPal destination that is not an e-mail address.
    const form = page.getByRole('form', { name: 'Payout destination' });
    await form.getByLabel('Pay me by').selectOption('internal');
    await form.getByLabel('Account').fill('CC-4711 physics');
    await form.getByRole('button', { name: 'Save destination' }).click();
    await form.getByText('Later payouts go to Internal account: CC-4711 physics.').waitFor();
    await expect
      .poll(() => page.getByTestId('payout-destination').innerText())
      .toBe('Paid to Internal account: CC-4711 physics');
    const after = (await api(host.api_key, 'GET', '/api/v0/payouts/')).body.destination;
    expect(after).toMatchObject({ method: 'internal', destination: 'CC-4711 physics' });
    await fits(page);
    expect(await violations(page)).toEqual([]);
  }, 60_000);
});
