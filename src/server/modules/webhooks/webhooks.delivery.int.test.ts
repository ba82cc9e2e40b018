// Delivery behaviour on both databases: order per instance over 1,000 state changes with failures
// in between, a hanging endpoint that does not hold up another user's delivery, the address
// rules applied at send time (including a name that resolves inside), redirects not followed,
// huge answers cut off, and an endpoint failing for five days disabled with its owner e-mailed.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { offers, renter } from '../../../../test/helpers/market.js';
import { startReceiver, type Receiver } from '../../../../test/helpers/webhook-receiver.js';
import { startWebhookDispatcher } from './webhooks.dispatcher.js';
import { setActualStatus } from '../instances/instances.moves.js';
import { tx } from '../../db/connection.js';
import { recordEvent } from './webhooks.events.js';
import type { ActualStatus } from '../../../contract/instance-states.js';

const ENV = {
  OPENRIG_WEBHOOK_ALLOW_HTTP: '1',
  OPENRIG_WEBHOOK_ALLOW_HOSTS: '127.0.0.1/32',
  OPENRIG_WEBHOOK_POLL_MS: '50',
};

async function hook(t: TestApp, key: string, url: string, events = ['*']) {
  const r = await t.request('POST', '/api/v0/webhooks/', { key, body: { url, events } });
  expect(r.status).toBe(200);
  return r.body.webhook.id as number;
}

function event(t: TestApp, userId: number, n: number) {
  return tx(t.deps.store, (trx) =>
    recordEvent(trx, t.clock.now(), {
      userId,
      type: 'balance.low',
      subject: `s:${userId}:${n}`,
      data: { n },
    }),
  );
}

describeEachDb('webhook delivery', (dialect) => {
  const t = useTestApp(dialect, ENV);
  let rx: Receiver;
  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(async () => {
    await rx.close();
  });

  it('delivers 1,000 instance state changes in order per instance, through failures and retries', async () => {
    const d = startWebhookDispatcher(t().deps, { poll: false });
    const u = await renter(t());
    await hook(t(), u.apiKey, `${rx.url}/order`, ['instance.*']);
    const mids = await offers(t(), 4);
    const ids: number[] = [];
    for (const mid of mids) {
      const r = await t().request('PUT', `/api/v0/asks/${mid}/`, { key: u.apiKey, body: { image: 'i' } });
      ids.push(r.body.new_contract as number);
    }
    // A deterministic twentieth of the first attempts are 500s (their retries succeed).
    let seed = 7;
    const failedOnce = new Set<string>();
    rx.answer = (r) => {
      if (r.path !== '/order') return 200;
      const id = r.headers['webhook-id']!;
      if (failedOnce.has(id)) return 200;
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      if (seed % 20 !== 0) return 200;
      failedOnce.add(id);
      return 500;
    };
    const cycle: ActualStatus[] = ['loading', 'running', 'unknown', 'offline'];
    const expected = new Map<number, string[]>(ids.map((id) => [id, ['created']]));
    const state = new Map<number, ActualStatus>(ids.map((id) => [id, null]));
    for (let i = 0; i < 1000; i++) {
      const id = ids[i % ids.length]!;
      const from = state.get(id)!;
      const to = cycle[(cycle.indexOf(from) + 1) % cycle.length]!;
      expect(await setActualStatus(t().deps, id, from, to)).toBe(true);
      state.set(id, to);
      expected.get(id)!.push(to);
      // Deliveries run while changes are still being made.
      if (i % 100 === 99) await d.drain();
    }
    for (let round = 0; round < 300; round++) {
      await d.drain();
      const pending = await t()
        .deps.db.selectFrom('webhook_deliveries')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('state', '=', 'pending')
        .executeTakeFirstOrThrow();
      if (Number(pending.n) === 0) break;
      t().clock.advance(11 * 3_600_000);
    }
    const ok = rx.received.filter((r) => r.path === '/order' && r.status === 200);
    expect(rx.received.filter((r) => r.path === '/order' && r.status === 500).length).toBeGreaterThan(10);
    expect(new Set(ok.map((r) => r.headers['webhook-id'])).size).toBe(ok.length);
    const got = new Map<number, string[]>(ids.map((id) => [id, []]));
    for (const r of ok) {
      const b = JSON.parse(r.body) as { type: string; data: { instance_id: number } };
      got.get(b.data.instance_id)!.push(b.type.slice('instance.'.length));
    }
    for (const id of ids) expect(got.get(id)).toEqual(expected.get(id));
    expect(ok).toHaveLength(1004);
    await d.stop();
  }, 300_000);

  it("a hanging endpoint does not delay another user's delivery by more than a second", async () => {
    const d = startWebhookDispatcher(t().deps, { timeoutMs: 4000 });
    const slow = await t().user();
    const fast = await t().user();
    await hook(t(), slow.apiKey, `${rx.url}/hang`);
    await hook(t(), fast.apiKey, `${rx.url}/fast`);
    rx.answer = (r) => (r.path === '/hang' ? 'hang' : 200);
    for (let i = 0; i < 5; i++) await event(t(), slow.id, i);
    // The slow endpoint's lane is now waiting on its first answer.
    const t0 = Date.now();
    while (!rx.received.some((r) => r.path === '/hang') && Date.now() - t0 < 3000)
      await new Promise((r) => setTimeout(r, 10));
    expect(rx.received.some((r) => r.path === '/hang')).toBe(true);
    const committed = Date.now();
    await event(t(), fast.id, 1);
    while (!rx.received.some((r) => r.path === '/fast') && Date.now() - committed < 5000)
      await new Promise((r) => setTimeout(r, 5));
    const got = rx.received.find((r) => r.path === '/fast');
    expect(got).toBeDefined();
    expect(got!.at - committed).toBeLessThan(1000);
    await d.stop();
    // The hanging delivery failed on the deadline and waits for its retry.
    const rows = await t()
      .deps.db.selectFrom('webhook_deliveries')
      .select(['state', 'last_error', 'attempts'])
      .where('user_id', '=', slow.id)
      .orderBy('id')
      .execute();
    expect(rows[0]).toMatchObject({ state: 'pending', attempts: 1 });
    expect(rows[0]!.last_error).toMatch(/no answer within 4 s/);
  }, 30_000);

  it('checks the resolved address at send time, connects to it, and follows no redirect', async () => {
    const u = await t().user();
    rx.answer = (r) =>
      r.path === '/redirect'
        ? { status: 302, headers: { location: `${rx.url}/elsewhere` } }
        : r.path === '/huge'
          ? { status: 200, body: 'x'.repeat(5_000_000) }
          : 200;
    const pinned = await hook(t(), u.apiKey, `http://hooks.rebind.test:${rx.port}/pinned`);
    const inside = await hook(t(), u.apiKey, `http://metadata.rebind.test:${rx.port}/inside`);
    const redirect = await hook(t(), u.apiKey, `${rx.url}/redirect`);
    const huge = await hook(t(), u.apiKey, `${rx.url}/huge`);
    // The name resolves (once, at send time) to the receiver for one hook and to the cloud
    // metadata address for the other; the system resolver is never asked.
    const resolve = async (host: string) => [
      { address: host.startsWith('hooks.') ? '127.0.0.1' : '169.254.169.254', family: 4 as const },
    ];
    const d = startWebhookDispatcher(t().deps, { poll: false, resolve, timeoutMs: 2000 });
    await event(t(), u.id, 1);
    await d.drain();
    await d.stop();
    const rows = await t()
      .deps.db.selectFrom('webhook_deliveries')
      .select(['webhook_id', 'state', 'last_status', 'last_error', 'last_latency_ms'])
      .where('user_id', '=', u.id)
      .execute();
    const by = new Map(rows.map((r) => [Number(r.webhook_id), r]));
    expect(by.get(pinned)).toMatchObject({ state: 'delivered', last_status: 200 });
    expect(rx.received.find((r) => r.path === '/pinned')!.headers.host).toBe(`hooks.rebind.test:${rx.port}`);
    expect(by.get(inside)).toMatchObject({ state: 'pending', last_status: null });
    expect(by.get(inside)!.last_error).toMatch(/169\.254\.169\.254.*may not reach/);
    expect(rx.received.some((r) => r.path === '/inside')).toBe(false);
    expect(by.get(redirect)).toMatchObject({ state: 'pending', last_status: 302 });
    expect(by.get(redirect)!.last_error).toMatch(/redirect/);
    expect(rx.received.some((r) => r.path === '/elsewhere')).toBe(false);
    expect(by.get(huge)).toMatchObject({ state: 'delivered', last_status: 200 });
  });

  it('refuses loopback when the operator has not allowed it', async () => {
    const u = await t().user();
    await hook(t(), u.apiKey, `${rx.url}/refused`);
    const cfg = t().deps.config;
    const d = startWebhookDispatcher(
      { ...t().deps, config: { ...cfg, webhooks: { ...cfg.webhooks, allowHosts: [] } } },
      { poll: false },
    );
    await event(t(), u.id, 1);
    await d.drain();
    await d.stop();
    const row = await t()
      .deps.db.selectFrom('webhook_deliveries')
      .select(['state', 'last_error'])
      .where('user_id', '=', u.id)
      .executeTakeFirstOrThrow();
    expect(row.last_error).toMatch(/127\.0\.0\.1.*may not reach/);
    expect(rx.received.some((r) => r.path === '/refused')).toBe(false);
  });

  it('disables an endpoint failing for five days and e-mails its owner', async () => {
    const u = await t().user();
    const id = await hook(t(), u.apiKey, `${rx.url}/dead`);
    rx.answer = (r) => (r.path === '/dead' ? 503 : 200);
    const d = startWebhookDispatcher(t().deps, { poll: false });
    await event(t(), u.id, 1);
    await d.drain();
    t().clock.advance(4 * 86_400_000);
    await event(t(), u.id, 2);
    await d.drain();
    expect(
      (await t().request('GET', `/api/v0/webhooks/${id}/`, { key: u.apiKey })).body.webhook.enabled,
    ).toBe(true);
    t().clock.advance(86_400_000 + 60_000);
    await event(t(), u.id, 3);
    await d.drain();
    await d.stop();
    const w = (await t().request('GET', `/api/v0/webhooks/${id}/`, { key: u.apiKey })).body.webhook;
    expect(w).toMatchObject({ enabled: false });
    expect(w.disabled_reason).toMatch(/5 days/);
    const mail = await t()
      .deps.db.selectFrom('email_outbox')
      .select(['to_addr', 'text_body'])
      .where('category', '=', 'webhook.disabled')
      .where('to_addr', '=', u.email)
      .execute();
    expect(mail).toHaveLength(1);
    expect(mail[0]!.text_body).toContain(`${rx.url}/dead`);
    const feed = await t().request('GET', '/api/v0/events/?types=webhook.disabled', { key: u.apiKey });
    expect(feed.body.events).toHaveLength(1);
    // Enabling it again forgets the failures.
    const on = await t().request('PUT', `/api/v0/webhooks/${id}/`, {
      key: u.apiKey,
      body: { enabled: true },
    });
    expect(on.body.webhook).toMatchObject({ enabled: true, disabled_reason: null, failing_since: null });
  });
});
