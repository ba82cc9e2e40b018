// The market's races, decided by the database on SQLite and PostgreSQL: many concurrent on-demand
// creates, bids and bid changes on a few machines leave one active instance per machine, the
// machine's flags agreeing with it, no waiting bid that outranks it, and clean 4xx for the losers.
import { expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp, type TestApp } from '../helpers/app.js';
import { offers, renter } from '../helpers/market.js';

/** Checks every machine: one active instance at most, the flags agree, no waiting bid outranks it. */
async function checkMarket(
  t: TestApp,
  machines: number[],
): Promise<Map<number, { id: number; is_bid: number }>> {
  const holders = new Map<number, { id: number; is_bid: number }>();
  for (const m of machines) {
    const live = await t.deps.db
      .selectFrom('instances')
      .select(['id', 'is_bid', 'intended_status', 'bid_waiting', 'dph_compute', 'bid_at'])
      .where('machine_id', '=', m)
      .where('destroyed_at', 'is', null)
      .execute();
    const active = live.filter((r) => r.intended_status !== 'stopped');
    expect(active.length).toBeLessThanOrEqual(1);
    const mach = await t.deps.db
      .selectFrom('machines')
      .select(['rented', 'bid_to_win_dph'])
      .where('id', '=', m)
      .executeTakeFirstOrThrow();
    expect(Number(mach.rented)).toBe(active.length);
    const h = active[0];
    if (!h) {
      expect(mach.bid_to_win_dph).toBeNull();
      continue;
    }
    holders.set(m, { id: Number(h.id), is_bid: Number(h.is_bid) });
    if (Number(h.is_bid) === 1) {
      expect(mach.bid_to_win_dph).toBeCloseTo(Number(h.dph_compute) + 0.000001, 9);
      // No waiting bid outranks the running one.
      for (const w of live.filter((r) => Number(r.bid_waiting) === 1))
        expect(Number(w.dph_compute)).toBeLessThanOrEqual(Number(h.dph_compute));
    } else {
      expect(mach.bid_to_win_dph).toBeNull();
    }
    for (const w of live.filter((r) => r.intended_status === 'stopped')) expect(w.id).not.toBe(h.id);
  }
  return holders;
}

describeEachDb('market races', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off', OPENRIG_PREEMPT_GRACE_S: '1' });

  it('concurrent bids and on-demand creates on 3 machines: one on-demand winner each, every bid waits', async () => {
    const users = await Promise.all(Array.from({ length: 30 }, () => renter(t())));
    const ms = await offers(t(), 3, { minBid: 0.1 });
    const replies = await Promise.all(
      Array.from({ length: 300 }, (_, i) => {
        const m = ms[i % 3]!;
        const onDemand = i % 4 === 0;
        return t().request('PUT', `/api/v0/asks/${m}/`, {
          key: users[i % users.length]!.apiKey,
          body: { image: 'x', disk: 1, price: onDemand ? null : 0.1 + ((i * 7) % 50) / 100 },
        });
      }),
    );
    for (const r of replies) expect([200, 409]).toContain(r.status);
    for (const r of replies.filter((x) => x.status === 409))
      expect(r.body).toMatchObject({ error: 'offer_unavailable', success: false });
    // Every bid was accepted (it wins or waits); only on-demand creates lose.
    const bids = replies.filter((_, i) => i % 4 !== 0);
    expect(bids.every((r) => r.status === 200)).toBe(true);
    const holders = await checkMarket(t(), ms);
    // Each machine is held by exactly one on-demand rental (on-demand outranks every bid).
    const odWins = replies.filter((r, i) => i % 4 === 0 && r.status === 200);
    expect(odWins).toHaveLength(3);
    for (const m of ms) expect(holders.get(m)?.is_bid).toBe(0);
  });

  it('concurrent bids and bid changes: the highest bid holds each machine', async () => {
    const users = await Promise.all(Array.from({ length: 20 }, () => renter(t())));
    const ms = await offers(t(), 2, { minBid: 0.1 });
    const first = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        t().request('PUT', `/api/v0/asks/${ms[i % 2]}/`, {
          key: users[i % 20]!.apiKey,
          body: { image: 'x', disk: 1, price: 0.1 + (i % 13) / 10 },
        }),
      ),
    );
    expect(first.every((r) => r.status === 200)).toBe(true);
    await checkMarket(t(), ms);
    const ids = first.map((r, i) => ({ id: r.body.new_contract as number, key: users[i % 20]!.apiKey }));
    const changes = await Promise.all(
      Array.from({ length: 200 }, (_, i) => {
        const x = ids[(i * 11) % ids.length]!;
        return i % 10 === 9
          ? t().request('PUT', `/api/v0/instances/${x.id}/`, {
              key: x.key,
              body: { state: i % 20 === 19 ? 'running' : 'stopped' },
            })
          : t().request('PUT', `/api/v0/instances/bid_price/${x.id}/`, {
              key: x.key,
              body: { client_id: 'me', price: i % 7 === 0 ? null : 0.1 + ((i * 3) % 40) / 10 },
            });
      }),
    );
    for (const r of changes) expect(r.status, JSON.stringify(r.body)).toBe(200);
    await checkMarket(t(), ms);
  });
});
