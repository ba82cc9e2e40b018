// Races decided by the database: 30 concurrent creates of one user give exactly 20 webhooks (the
// cap), and two dispatchers on one database (two `serve` processes) send every delivery once,
// each endpoint leased to one of them at a time.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { startReceiver, type Receiver } from '../../../../test/helpers/webhook-receiver.js';
import { startWebhookDispatcher } from './webhooks.dispatcher.js';
import { tx } from '../../db/connection.js';
import { recordEvents } from './webhooks.events.js';

const ENV = { OPENRIG_WEBHOOK_ALLOW_HTTP: '1', OPENRIG_WEBHOOK_ALLOW_HOSTS: '127.0.0.1/32' };

describeEachDb('webhook races', (dialect) => {
  const t = useTestApp(dialect, ENV);
  let rx: Receiver;
  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(async () => {
    await rx.close();
  });

  it('30 concurrent creates: exactly 20 win, the rest get a 400 and change nothing', async () => {
    const u = await t().user();
    const replies = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        t().request('POST', '/api/v0/webhooks/', { key: u.apiKey, body: { url: `${rx.url}/cap${i}` } }),
      ),
    );
    expect(replies.filter((r) => r.status === 200)).toHaveLength(20);
    expect(replies.filter((r) => r.status === 400 && r.body.error === 'bad_request')).toHaveLength(10);
    const list = await t().request('GET', '/api/v0/webhooks/', { key: u.apiKey });
    expect(list.body.webhooks).toHaveLength(20);
  });

  it('two dispatchers on one database send each delivery exactly once', async () => {
    const users = [await t().user(), await t().user(), await t().user()];
    for (const [i, u] of users.entries())
      expect(
        (
          await t().request('POST', '/api/v0/webhooks/', {
            key: u.apiKey,
            body: { url: `${rx.url}/two${i}` },
          })
        ).status,
      ).toBe(200);
    await tx(t().deps.store, (trx) =>
      recordEvents(
        trx,
        t().clock.now(),
        Array.from({ length: 300 }, (_, n) => ({
          userId: users[n % 3]!.id,
          type: 'balance.low' as const,
          subject: `s${n % 7}`,
          data: { n },
        })),
      ),
    );
    const a = startWebhookDispatcher(t().deps, { poll: false });
    const b = startWebhookDispatcher(t().deps, { poll: false });
    await Promise.all([a.drain(), b.drain(), a.drain(), b.drain()]);
    await Promise.all([a.drain(), b.drain()]);
    await a.stop();
    await b.stop();
    const got = rx.received.filter((r) => r.path.startsWith('/two'));
    expect(got).toHaveLength(300);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(300);
  });
});
