// Webhooks end to end on both databases: events recorded with the change they report, the feed,
// endpoint CRUD, signed delivery checked by an independent implementation (the standardwebhooks
// package: its own base64 and SHA-256), retries with the same webhook-id, secret rotation.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { offers, renter } from '../../../../test/helpers/market.js';
import { startReceiver, type Receiver } from '../../../../test/helpers/webhook-receiver.js';
import { startWebhookDispatcher, type WebhookDispatcher } from './webhooks.dispatcher.js';
import { setActualStatus } from '../instances/instances.moves.js';
import { tx } from '../../db/connection.js';
import { recordEvent } from './webhooks.events.js';

const ENV = { OPENRIG_WEBHOOK_ALLOW_HTTP: '1', OPENRIG_WEBHOOK_ALLOW_HOSTS: '127.0.0.1/32' };

async function newInstance(t: TestApp, key: string): Promise<number> {
  const [mid] = await offers(t, 1);
  const r = await t.request('PUT', `/api/v0/asks/${mid}/`, { key, body: { image: 'img' } });
  expect(r.status).toBe(200);
  return r.body.new_contract as number;
}

describeEachDb('webhooks and the event feed', (dialect) => {
  const t = useTestApp(dialect, ENV);
  let rx: Receiver;
  let d: WebhookDispatcher;
  beforeAll(async () => {
    rx = await startReceiver();
    d = startWebhookDispatcher(t().deps, { poll: false });
  });
  afterAll(async () => {
    await d.stop();
    await rx.close();
  });

  it('records instance state changes as events in the feed, in order, with a working cursor and type filter', async () => {
    const u = await renter(t());
    const id = await newInstance(t(), u.apiKey);
    expect(await setActualStatus(t().deps, id, null, 'loading', { status_msg: 'pulling' })).toBe(true);
    expect(await setActualStatus(t().deps, id, 'loading', 'running')).toBe(true);
    expect(
      (await t().request('PUT', `/api/v0/instances/${id}/`, { key: u.apiKey, body: { state: 'stopped' } }))
        .status,
    ).toBe(200);
    expect((await t().request('DELETE', `/api/v0/instances/${id}/`, { key: u.apiKey })).status).toBe(200);
    const feed = await t().request('GET', '/api/v0/events/', { key: u.apiKey });
    expect(feed.status).toBe(200);
    const types = feed.body.events.map((e: { type: string }) => e.type);
    expect(types).toEqual([
      'instance.created',
      'instance.loading',
      'instance.running',
      'instance.stopped',
      'instance.destroyed',
    ]);
    const loading = feed.body.events[1];
    expect(loading.id).toMatch(/^evt_/);
    expect(loading.data).toMatchObject({
      instance_id: id,
      old_state: null,
      new_state: 'loading',
      status_msg: 'pulling',
    });
    expect(feed.body.events[3].data).toMatchObject({ old_state: 'running', new_state: 'stopped' });
    const after = await t().request('GET', `/api/v0/events/?after=${feed.body.events[2].id}`, {
      key: u.apiKey,
    });
    expect(after.body.events.map((e: { type: string }) => e.type)).toEqual([
      'instance.stopped',
      'instance.destroyed',
    ]);
    const filtered = await t().request('GET', '/api/v0/events/?types=instance.running,instance.destroyed', {
      key: u.apiKey,
    });
    expect(filtered.body.events.map((e: { type: string }) => e.type)).toEqual([
      'instance.running',
      'instance.destroyed',
    ]);
    // Another user sees none of them, and cannot use them as a cursor.
    const other = await t().user();
    expect((await t().request('GET', '/api/v0/events/', { key: other.apiKey })).body.events).toEqual([]);
    const bad = await t().request('GET', `/api/v0/events/?after=${loading.id}`, { key: other.apiKey });
    expect(bad.status).toBe(400);
    expect((await t().request('GET', '/api/v0/events/?types=nope.*', { key: u.apiKey })).status).toBe(400);
  });

  it('writes no event for a change that rolls back', async () => {
    const u = await t().user();
    await expect(
      tx(t().deps.store, async (trx) => {
        await recordEvent(trx, t().clock.now(), {
          userId: u.id,
          type: 'balance.low',
          subject: 'x',
          data: {},
        });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect((await t().request('GET', '/api/v0/events/', { key: u.apiKey })).body.events).toEqual([]);
  });

  it('creates, lists, shows, changes and deletes webhooks; the secret is shown once; bad input is a 400', async () => {
    const u = await t().user();
    const c = await t().request('POST', '/api/v0/webhooks/', {
      key: u.apiKey,
      body: { url: `${rx.url}/crud`, events: ['instance.*'], description: 'ci' },
    });
    expect(c.status).toBe(200);
    expect(c.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const id = c.body.webhook.id as number;
    expect(c.body.webhook).toMatchObject({ url: `${rx.url}/crud`, events: ['instance.*'], enabled: true });
    const list = await t().request('GET', '/api/v0/webhooks/', { key: u.apiKey });
    expect(list.body.webhooks).toHaveLength(1);
    expect(list.raw).not.toContain(c.body.secret);
    const one = await t().request('GET', `/api/v0/webhooks/${id}/`, { key: u.apiKey });
    expect(one.raw).not.toContain('whsec_');
    const put = await t().request('PUT', `/api/v0/webhooks/${id}/`, {
      key: u.apiKey,
      body: { events: ['instance.running', 'tfa.*'], enabled: false },
    });
    expect(put.status).toBe(200);
    expect(put.body.webhook).toMatchObject({ events: ['instance.running', 'tfa.*'], enabled: false });
    for (const body of [
      { url: 'ftp://example.com/x' },
      { url: 'https://user:pw@example.com/x' },
      { url: 'https://example.com/x', events: ['instance.nope'] },
      { url: 'https://example.com/x', events: [] },
      { url: 'https://example.com/x', extra: 1 },
    ]) {
      const r = await t().request('POST', '/api/v0/webhooks/', { key: u.apiKey, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe('bad_request');
    }
    // Addresses deliveries may not reach are refused when the URL is set, not only when sending;
    // 127.0.0.1 is in this server's OPENRIG_WEBHOOK_ALLOW_HOSTS, 127.0.0.2 and the rest are not.
    for (const url of [
      'http://127.0.0.2:9/x',
      'https://169.254.169.254/latest/meta-data/',
      'https://10.1.2.3/x',
      'https://[::1]/x',
      'https://[::ffff:7f00:2]/x',
    ]) {
      const r = await t().request('POST', '/api/v0/webhooks/', { key: u.apiKey, body: { url } });
      expect(r.status, url).toBe(400);
      expect(r.body.error).toBe('bad_request');
      expect(r.body.msg).toMatch(/must not point at/);
      const moved = await t().request('PUT', `/api/v0/webhooks/${id}/`, { key: u.apiKey, body: { url } });
      expect(moved.status, url).toBe(400);
    }
    const still = await t().request('GET', '/api/v0/webhooks/', { key: u.apiKey });
    expect(still.body.webhooks.map((w: { url: string }) => w.url)).toEqual([`${rx.url}/crud`]);
    const other = await t().user();
    expect((await t().request('GET', `/api/v0/webhooks/${id}/`, { key: other.apiKey })).status).toBe(404);
    expect((await t().request('DELETE', `/api/v0/webhooks/${id}/`, { key: other.apiKey })).status).toBe(404);
    expect((await t().request('DELETE', `/api/v0/webhooks/${id}/`, { key: u.apiKey })).status).toBe(200);
    expect((await t().request('GET', `/api/v0/webhooks/${id}/`, { key: u.apiKey })).status).toBe(404);
  });

  it('delivers signed events that an independent implementation verifies; 500 then 200 sends the same id twice', async () => {
    const u = await renter(t());
    const c = await t().request('POST', '/api/v0/webhooks/', {
      key: u.apiKey,
      body: { url: `${rx.url}/signed`, events: ['instance.*'] },
    });
    const secret = c.body.secret as string;
    const hookId = c.body.webhook.id as number;
    let n = 0;
    rx.answer = (r) => (r.path === '/signed' && n++ === 0 ? 500 : 200);
    const id = await newInstance(t(), u.apiKey);
    await d.drain();
    const mine = () => rx.received.filter((r) => r.path === '/signed');
    expect(mine()).toHaveLength(1);
    expect(mine()[0]!.status).toBe(500);
    // Not yet due: the first retry waits 5 s.
    t().clock.advance(4_000);
    await d.drain();
    expect(mine()).toHaveLength(1);
    t().clock.advance(1_500);
    await d.drain();
    expect(mine()).toHaveLength(2);
    const [first, second] = mine();
    expect(second!.status).toBe(200);
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(second!.body).toBe(first!.body);
    const wh = new Webhook(secret);
    const payload = wh.verify(second!.body, second!.headers) as {
      type: string;
      data: { instance_id: number };
    };
    expect(payload.type).toBe('instance.created');
    expect(payload.data.instance_id).toBe(id);
    expect(payload).toMatchObject({ id: second!.headers['webhook-id'] });
    // A tampered body or a wrong secret fails the same verification.
    expect(() => wh.verify(second!.body.replace('created', 'running'), second!.headers)).toThrow();
    expect(() =>
      new Webhook('whsec_' + Buffer.alloc(24, 1).toString('base64')).verify(second!.body, second!.headers),
    ).toThrow();
    const del = await t().request('GET', `/api/v0/webhooks/${hookId}/deliveries/`, { key: u.apiKey });
    expect(del.status).toBe(200);
    expect(del.body.deliveries[0]).toMatchObject({ state: 'delivered', attempts: 2, last_status: 200 });
    expect(del.body.deliveries[0].attempt_log.map((a: { status_code: number }) => a.status_code)).toEqual([
      500, 200,
    ]);
    // A manual retry sends it once more, with the same id.
    const retry = await t().request(
      'POST',
      `/api/v0/webhooks/${hookId}/deliveries/${del.body.deliveries[0].id}/retry/`,
      {
        key: u.apiKey,
      },
    );
    expect(retry.status).toBe(200);
    await d.drain();
    expect(mine()).toHaveLength(3);
    expect(mine()[2]!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
  });

  it('sends a test event; after a rotation both secrets verify for 24 hours, then only the new one', async () => {
    const u = await t().user();
    const c = await t().request('POST', '/api/v0/webhooks/', {
      key: u.apiKey,
      body: { url: `${rx.url}/rot` },
    });
    const oldSecret = c.body.secret as string;
    const hookId = c.body.webhook.id as number;
    rx.answer = () => 200;
    const rot = await t().request('POST', `/api/v0/webhooks/${hookId}/rotate-secret/`, { key: u.apiKey });
    expect(rot.status).toBe(200);
    const newSecret = rot.body.secret as string;
    expect(newSecret).not.toBe(oldSecret);
    expect(rot.body.webhook.previous_secret_valid_until).toBeGreaterThan(t().clock.now() / 1000);
    const test = await t().request('POST', `/api/v0/webhooks/${hookId}/test/`, { key: u.apiKey });
    expect(test.status).toBe(200);
    await d.drain();
    const got = rx.received.filter((r) => r.path === '/rot');
    expect(got).toHaveLength(1);
    expect(got[0]!.headers['webhook-id']).toBe(test.body.event_id);
    expect(got[0]!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(new Webhook(oldSecret).verify(got[0]!.body, got[0]!.headers)).toMatchObject({
      type: 'webhook.test',
    });
    expect(new Webhook(newSecret).verify(got[0]!.body, got[0]!.headers)).toMatchObject({
      type: 'webhook.test',
    });
    t().clock.advance(24 * 3_600_000 + 1000);
    await t().request('POST', `/api/v0/webhooks/${hookId}/test/`, { key: u.apiKey });
    await d.drain();
    const late = rx.received.filter((r) => r.path === '/rot')[1]!;
    // The server's clock is a day ahead of the receiver's, so the library's timestamp check would
    // refuse it: the signature is compared with the library's own signing instead.
    expect(late.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    const at = new Date(Number(late.headers['webhook-timestamp']) * 1000);
    const msgId = late.headers['webhook-id']!;
    expect(late.headers['webhook-signature']).toBe(new Webhook(newSecret).sign(msgId, at, late.body));
    expect(late.headers['webhook-signature']).not.toBe(new Webhook(oldSecret).sign(msgId, at, late.body));
  });
});
