// Host payouts end to end, through the built `openrig` against a real `serve` and a real agent
// (process runtime): two renters run instances on the host's machine and are charged by the meter;
// payout periods of ten seconds (OPENRIG_PAYOUT_PERIOD_DAYS) let `openrig admin payouts run` close
// one in the test; `admin payouts list`, `csv` (and its `export` name), `mark --status failed`
// (its earnings go into the next run's payout) and `mark --status paid` work as docs/payouts.md
// says; the host's webhook receives payout.created and payout.paid, signed; the host sees the
// payout among its invoices (`show invoices-v1 --invoices`, service paypal_manual) and in `show
// earnings` (nothing owed once paid); and the money reconciles to the micro-dollar: what the
// renters were charged = the host's payout + the platform fee.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { runCli, waitFor } from '../helpers/process.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';
import {
  HIGH_PRICES,
  cli,
  createUser,
  makeHome,
  meteredEnv,
  startAgentWorld,
  type AgentWorld,
} from './cli-harness.js';

const PERIOD_S = 10;
/** The server's PAYOUT_SETTLE_MS: a run closes periods that ended at least this long ago. */
const SETTLE_MS = 5_000;
const FIRST_MONDAY_MS = 4 * 86_400_000;
const FEE_PERCENT = 12.5;
const ENV = {
  ...meteredEnv('ad'.repeat(32)),
  OPENRIG_PLATFORM_FEE_PERCENT: String(FEE_PERCENT),
  OPENRIG_PAYOUT_MIN_USD: '0.01',
  OPENRIG_PAYOUT_PERIOD_DAYS: String(PERIOD_S / 86_400),
  OPENRIG_WEBHOOK_ALLOW_HTTP: '1',
  OPENRIG_WEBHOOK_ALLOW_HOSTS: '127.0.0.1/32',
  OPENRIG_WEBHOOK_POLL_MS: '50',
};

let w: AgentWorld;
let rx: Receiver;
let secret: string;
let hostId: number;
let renterB: string;
const micros = (usd: number) => Math.round(usd * 1e6);

async function api(key: string, method: string, path: string, body?: unknown): Promise<any> {
  const r = await fetch(`${w.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  expect(r.status, `${method} ${path}: ${text}`).toBe(200);
  return JSON.parse(text);
}

/** `openrig admin payouts …` with the server's settings; stdout (JSON unless `raw`). */
async function payouts(args: string[], raw = false): Promise<any> {
  const r = await runCli(['admin', 'payouts', ...args, '--data', w.data], ENV);
  expect(r.code, r.stderr).toBe(0);
  return raw ? r.stdout : JSON.parse(r.stdout);
}

/** What a renter has been charged: its balance went from 100 $ to this much less. */
async function charged(key: string): Promise<number> {
  const me = await api(key, 'GET', '/api/v0/users/current');
  return 100_000_000 - micros(Number(me.balance ?? me.credit));
}

/** Waits until a run now would close a period that ended after `t` (ms). */
async function periodClosedAfter(t: number): Promise<void> {
  const periodMs = PERIOD_S * 1000;
  const end = FIRST_MONDAY_MS + Math.ceil((t - FIRST_MONDAY_MS) / periodMs) * periodMs;
  const wait = end + SETTLE_MS + 200 - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}

beforeAll(async () => {
  rx = await startReceiver();
  w = await startAgentWorld({
    env: ENV,
    host: 'payout-host@example.com',
    renter: 'payout-renter-a@example.com',
    agent: HIGH_PRICES,
  });
  renterB = (await createUser(w, 'payout-renter-b@example.com')).api_key;
  const hostHome = makeHome();
  const asHost = { OPENRIG_URL: w.url, OPENRIG_API_KEY: w.hostKey };
  hostId = (await api(w.hostKey, 'GET', '/api/v0/users/current')).id;
  // Where to be paid, as the official CLI's `set user --file F` sends it.
  await api(w.hostKey, 'PUT', '/api/v0/users/', { paypal_email: 'payout-host@pay.example' });
  const hook = await cli(
    hostHome,
    ['webhook', 'create', `${rx.url}/payouts`, '--events', 'payout.*'],
    asHost,
  );
  expect(hook.code, hook.stderr).toBe(0);
  secret = /^(whsec_\S+)$/m.exec(hook.stdout)![1]!;

  // Each renter runs an instance on the host's machine for a couple of seconds, then destroys it.
  const b = makeHome();
  const addB = await cli(b, ['ssh-key', 'add'], { OPENRIG_URL: w.url, OPENRIG_API_KEY: renterB });
  expect(addB.code, addB.stderr).toBe(0);
  for (const [home, key] of [
    [w.home, w.renterKey],
    [b, renterB],
  ] as const) {
    const as = (args: string[]) => cli(home, args, { OPENRIG_URL: w.url, OPENRIG_API_KEY: key });
    const c = await as([
      'create',
      'instance',
      String(w.machine),
      '--image',
      'ubuntu:22.04',
      '--disk',
      '10',
      '--wait',
    ]);
    expect(c.code, `${c.stdout}${c.stderr}${w.agent.stderr()}`).toBe(0);
    const id = /Created instance (\d+)/.exec(c.stdout)![1]!;
    await new Promise((r) => setTimeout(r, 2000));
    expect((await as(['destroy', 'instance', id])).code).toBe(0);
  }
  // Nothing is charged after the destroys: the period that holds them closes.
  await periodClosedAfter(Date.now());
}, 180_000);

afterAll(async () => {
  w?.stop();
  await rx?.close();
});

describe('admin payouts, end to end', { timeout: 120_000 }, () => {
  it('run, list, csv, mark failed, run again, mark paid; events; the host sees it; it reconciles', async () => {
    const a = await charged(w.renterKey);
    const b = await charged(renterB);
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(0);

    // The run makes the host's payout: what both renters were charged, less the fee.
    const run = await payouts(['run']);
    expect(run.payouts).toHaveLength(1);
    const p = run.payouts[0];
    expect(p).toMatchObject({
      host_id: hostId,
      status: 'pending',
      method: 'paypal_manual',
      destination: 'payout-host@pay.example',
      cut_percent: FEE_PERCENT,
      period_start: 0,
    });
    expect(micros(p.gross)).toBe(a + b);
    expect(micros(p.cut_amount)).toBe(Math.round((micros(p.gross) * FEE_PERCENT) / 100));
    expect(micros(p.amount) + micros(p.cut_amount)).toBe(a + b);
    // A second run makes nothing more for the same period.
    expect((await payouts(['run'])).payouts).toEqual([]);

    const listed = await payouts(['list', '--status', 'pending']);
    expect(listed.payouts).toEqual([p]);
    const csv: string = await payouts(['csv'], true);
    const lines = csv.trim().split('\n');
    expect(lines[0]).toBe(
      'id,host_id,status,method,destination,period_start,period_end,gross,cut_percent,cut_amount,amount,note',
    );
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe(
      [
        p.id,
        hostId,
        'pending',
        'paypal_manual',
        'payout-host@pay.example',
        0,
        p.period_end,
        p.gross,
        FEE_PERCENT,
        p.cut_amount,
        p.amount,
        '',
      ].join(','),
    );
    expect(await payouts(['export'], true)).toBe(csv);

    // The transfer bounced: failed, and the next run pays the same earnings again.
    const failed = await payouts([
      'mark',
      '--id',
      String(p.id),
      '--status',
      'failed',
      '--note',
      'account closed',
    ]);
    expect(failed).toMatchObject({ id: p.id, status: 'failed', note: 'account closed' });
    const again = (await payouts(['run'])).payouts;
    expect(again).toHaveLength(1);
    const q = again[0];
    expect(q.id).not.toBe(p.id);
    expect(q).toMatchObject({ period_start: 0, gross: p.gross, amount: p.amount, status: 'pending' });
    const paid = await payouts(['mark', '--id', String(q.id), '--status', 'paid', '--note', 'PayPal 5TY0']);
    expect(paid).toMatchObject({ id: q.id, status: 'paid', note: 'PayPal 5TY0' });
    // Marked once: a second mark is refused, exit 1, nothing changed.
    const twice = await runCli(
      ['admin', 'payouts', 'mark', '--id', String(q.id), '--status', 'failed', '--data', w.data],
      ENV,
    );
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain('paid, not pending');
    expect(
      (await payouts(['list'])).payouts.map((x: { id: number; status: string }) => [x.id, x.status]),
    ).toEqual([
      [p.id, 'failed'],
      [q.id, 'paid'],
    ]);

    // The host's webhook: payout.created twice (the failed one and its replacement), then
    // payout.paid, each signed with the secret and carrying the payout.
    const wh = new Webhook(secret);
    const got = await waitFor(
      () => {
        const evs = rx.received
          .filter((r) => r.path === '/payouts')
          .map((r) => wh.verify(r.body, r.headers) as { type: string; data: Record<string, unknown> });
        return evs.some((e) => e.type === 'payout.paid') && evs.length >= 3 ? evs : undefined;
      },
      'the payout deliveries',
      30_000,
    );
    const byType = (t: string) => got.filter((e) => e.type === t).map((e) => e.data.id);
    expect(byType('payout.created').sort()).toEqual([p.id, q.id].sort());
    expect(byType('payout.paid')).toEqual([q.id]);
    expect(got.find((e) => e.type === 'payout.paid')!.data).toMatchObject({
      status: 'paid',
      amount: q.amount,
    });

    // show invoices-v1 --invoices -it payout_paypal, as the official CLI asks for it.
    const now = Math.floor(Date.now() / 1000);
    const filters = { when: { gte: now - 86_400, lte: now + 86_400 }, service: { in: ['paypal_manual'] } };
    const inv = await api(
      w.hostKey,
      'GET',
      `/api/v1/invoices/?select_filters=${encodeURIComponent(JSON.stringify(filters))}&latest_first=True&limit=20`,
    );
    const mine = (
      inv.results as { type: string; amount: number; metadata: Record<string, unknown> }[]
    ).filter((r) => r.type === 'payout');
    expect(mine.map((r) => r.metadata.invoice_id)).toContain(q.id);
    expect(mine.find((r) => r.metadata.invoice_id === q.id)).toMatchObject({
      amount: q.amount,
      metadata: expect.objectContaining({ service: 'paypal_manual', status: 'paid' }),
    });

    // show earnings: today's earnings are what the renters were charged; nothing is owed now.
    const day = Math.floor(Date.now() / 86_400_000);
    const e = await api(
      w.hostKey,
      'GET',
      `/api/v0/users/me/machine-earnings?owner=me&sday=${day - 1}&eday=${day}`,
    );
    expect(micros(e.summary.total_earn)).toBe(a + b);
    expect(e.current).toMatchObject({ balance: 0, total: 0, service_fee: 0 });
  });
});
