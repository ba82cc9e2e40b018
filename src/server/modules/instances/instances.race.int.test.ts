// Renting is decided by the database: 200 concurrent creates on one offer give
// exactly one instance and clean 4xx answers for the rest, on SQLite and on PostgreSQL.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { offers, renter } from '../../../../test/helpers/market.js';

describeEachDb('renting races', (dialect) => {
  const t = useTestApp(dialect);

  it('200 concurrent creates on one offer make exactly one instance; the rest get 409', async () => {
    const users = await Promise.all(Array.from({ length: 10 }, () => renter(t())));
    const [offer] = await offers(t(), 1);
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        t().request('PUT', `/api/v0/asks/${offer}/`, {
          key: users[i % users.length]!.apiKey,
          body: { image: 'pytorch/pytorch', disk: 10 },
        }),
      ),
    );
    const byStatus = new Map<number, number>();
    for (const r of replies) byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
    expect(Object.fromEntries(byStatus)).toEqual({ 200: 1, 409: 199 });
    for (const r of replies.filter((x) => x.status === 409))
      expect(r.body).toMatchObject({ error: 'offer_unavailable', success: false });
    const rows = await t()
      .deps.db.selectFrom('instances')
      .select('id')
      .where('machine_id', '=', offer!)
      .execute();
    expect(rows).toHaveLength(1);
    const keys = await t()
      .deps.db.selectFrom('api_keys')
      .select('id')
      .where('kind', '=', 'instance')
      .where('instance_id', '=', rows[0]!.id)
      .execute();
    expect(keys).toHaveLength(1);
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
