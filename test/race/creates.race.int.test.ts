// Race (issue 9, point 4): 1,000 concurrent creates on one offer, on both databases. The
// database decides (conditional UPDATE of the machine plus the one-live-instance-per-machine
// unique index): exactly one instance, 999 clean 409s, no 5xx, one instance key.
import { expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { insertOffers, publicKey } from './race-fixtures.js';

describeEachDb('race: concurrent creates', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off' });

  it('1,000 concurrent creates on one offer make exactly one instance', async () => {
    const host = await t().user();
    const [offer] = await insertOffers(t().db.store.db, host.id, 1, t().clock.now());
    const renters = await Promise.all(Array.from({ length: 20 }, () => t().user()));
    for (const r of renters)
      expect(
        (await t().request('POST', '/api/v0/ssh/', { key: r.apiKey, body: { ssh_key: publicKey() } })).status,
      ).toBe(200);
    const replies = await Promise.all(
      Array.from({ length: 1000 }, (_, i) =>
        t().request('PUT', `/api/v0/asks/${offer}/`, {
          key: renters[i % renters.length]!.apiKey,
          body: { client_id: 'me', image: 'ubuntu:22.04', disk: 10, runtype: 'ssh' },
        }),
      ),
    );
    const won = replies.filter((r) => r.status === 200);
    expect(replies.filter((r) => r.status >= 500)).toEqual([]);
    expect(won).toHaveLength(1);
    expect(won[0]!.body.success).toBe(true);
    const lost = replies.filter((r) => r.status !== 200);
    expect(lost).toHaveLength(999);
    for (const r of lost) {
      expect(r.status).toBe(409);
      expect(r.body.error).toBe('offer_unavailable');
      expect(typeof r.body.msg).toBe('string');
      expect(r.headers['content-type']).toBe('application/json');
    }
    const db = t().db.store.db;
    const live = await db
      .selectFrom('instances')
      .select(['id', 'user_id'])
      .where('machine_id', '=', offer!)
      .where('destroyed_at', 'is', null)
      .execute();
    expect(live.map((x) => Number(x.id))).toEqual([won[0]!.body.new_contract]);
    const keys = await db
      .selectFrom('api_keys')
      .select('id')
      .where('kind', '=', 'instance')
      .where('instance_id', '=', won[0]!.body.new_contract)
      .execute();
    expect(keys).toHaveLength(1);
    // Nothing else was written by the losers.
    const all = await db.selectFrom('instances').select('id').where('machine_id', '=', offer!).execute();
    expect(all).toHaveLength(1);
  }, 120_000);

  it('100 users racing for 10 offers: exactly 10 instances, one per offer', async () => {
    const host = await t().user();
    const offers = await insertOffers(t().db.store.db, host.id, 10, t().clock.now());
    const renters = await Promise.all(Array.from({ length: 100 }, () => t().user()));
    await Promise.all(
      renters.map((r) =>
        t().request('POST', '/api/v0/ssh/', { key: r.apiKey, body: { ssh_key: publicKey() } }),
      ),
    );
    const replies = await Promise.all(
      renters.flatMap((r, i) =>
        [0, 1, 2].map((j) =>
          t().request('PUT', `/api/v0/asks/${offers[(i + j) % 10]}/`, {
            key: r.apiKey,
            body: { image: 'ubuntu', disk: 10 },
          }),
        ),
      ),
    );
    expect(replies.filter((r) => r.status >= 500)).toEqual([]);
    expect(replies.filter((r) => r.status === 200)).toHaveLength(10);
    expect(replies.filter((r) => r.status === 409)).toHaveLength(290);
    const live = await t()
      .db.store.db.selectFrom('instances')
      .select(['machine_id'])
      .where('machine_id', 'in', offers)
      .where('destroyed_at', 'is', null)
      .execute();
    expect(new Set(live.map((x) => Number(x.machine_id))).size).toBe(10);
    expect(live).toHaveLength(10);
  }, 120_000);
});
