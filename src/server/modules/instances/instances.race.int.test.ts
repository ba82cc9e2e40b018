// Renting is decided by the database (a conditional UPDATE of the machine plus the
// one-live-instance-per-machine unique index): of many concurrent creates on one offer exactly one
// wins and the rest get a clean 409, with nothing written by the losers, on SQLite and PostgreSQL.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { offers, renter } from '../../../../test/helpers/market.js';

describeEachDb('renting races', (dialect) => {
  // Rate limits off: these tests send far more creates per user than the creates limit allows.
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off' });

  it('1,000 concurrent creates on one offer make exactly one instance; the rest get 409', async () => {
    const users = await Promise.all(Array.from({ length: 20 }, () => renter(t())));
    const [offer] = await offers(t(), 1);
    const replies = await Promise.all(
      Array.from({ length: 1000 }, (_, i) =>
        t().request('PUT', `/api/v0/asks/${offer}/`, {
          key: users[i % users.length]!.apiKey,
          body: { client_id: 'me', image: 'ubuntu:22.04', disk: 10, runtype: 'ssh' },
        }),
      ),
    );
    const byStatus = new Map<number, number>();
    for (const r of replies) byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
    expect(Object.fromEntries(byStatus)).toEqual({ 200: 1, 409: 999 });
    const won = replies.find((r) => r.status === 200)!;
    expect(won.body.success).toBe(true);
    for (const r of replies.filter((x) => x.status === 409)) {
      expect(r.body).toMatchObject({ error: 'offer_unavailable', success: false });
      expect(typeof r.body.msg).toBe('string');
      expect(r.headers['content-type']).toBe('application/json');
    }
    // One row for the offer, live, the winner's; the losers wrote nothing.
    const rows = await t()
      .deps.db.selectFrom('instances')
      .select(['id', 'destroyed_at'])
      .where('machine_id', '=', offer!)
      .execute();
    expect(rows.map((x) => Number(x.id))).toEqual([won.body.new_contract]);
    expect(rows[0]!.destroyed_at).toBeNull();
    const keys = await t()
      .deps.db.selectFrom('api_keys')
      .select('id')
      .where('kind', '=', 'instance')
      .where('instance_id', '=', rows[0]!.id)
      .execute();
    expect(keys).toHaveLength(1);
  });

  it('100 users racing for 10 offers: exactly 10 instances, one per offer', async () => {
    const users = await Promise.all(Array.from({ length: 100 }, () => renter(t())));
    const ids = await offers(t(), 10);
    const replies = await Promise.all(
      users.flatMap((u, i) =>
        [0, 1, 2].map((j) =>
          t().request('PUT', `/api/v0/asks/${ids[(i + j) % 10]}/`, {
            key: u.apiKey,
            body: { image: 'ubuntu', disk: 10 },
          }),
        ),
      ),
    );
    expect(replies.filter((r) => r.status >= 500)).toEqual([]);
    expect(replies.filter((r) => r.status === 200)).toHaveLength(10);
    expect(replies.filter((r) => r.status === 409)).toHaveLength(290);
    const live = await t()
      .deps.db.selectFrom('instances')
      .select(['machine_id'])
      .where('machine_id', 'in', ids)
      .where('destroyed_at', 'is', null)
      .execute();
    expect(new Set(live.map((x) => Number(x.machine_id))).size).toBe(10);
    expect(live).toHaveLength(10);
  });

  it('concurrent creates with one Idempotency-Key make one instance and all get its reply', async () => {
    const u = await renter(t());
    const [offer] = await offers(t(), 1);
    const replies = await Promise.all(
      Array.from({ length: 20 }, () =>
        t().request('PUT', `/api/v0/asks/${offer}/`, {
          key: u.apiKey,
          body: { image: 'x' },
          headers: { 'idempotency-key': 'same' },
        }),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(new Set(replies.map((r) => r.body.new_contract)).size).toBe(1);
    const rows = await t()
      .deps.db.selectFrom('instances')
      .select('id')
      .where('machine_id', '=', offer!)
      .execute();
    expect(rows).toHaveLength(1);
  });

  it('concurrent destroys and stops of one instance: every reply succeeds, the machine is freed once', async () => {
    const u = await renter(t());
    const [offer] = await offers(t(), 1);
    const id = (await t().request('PUT', `/api/v0/asks/${offer}/`, { key: u.apiKey, body: { image: 'x' } }))
      .body.new_contract;
    const replies = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        i % 2
          ? t().request('DELETE', `/api/v0/instances/${id}/`, { key: u.apiKey, body: {} })
          : t().request('PUT', `/api/v0/instances/${id}/`, { key: u.apiKey, body: { state: 'stopped' } }),
      ),
    );
    for (const r of replies.filter((_, i) => i % 2)) expect(r.status).toBe(200);
    // A stop that lost to the destroy says so (409 naming the state); none fails otherwise.
    for (const r of replies.filter((_, i) => i % 2 === 0)) expect([200, 409]).toContain(r.status);
    const again = await t().request('PUT', `/api/v0/asks/${offer}/`, { key: u.apiKey, body: { image: 'x' } });
    expect(again.status).toBe(200);
  });
});
