// Billing against a real database: compute only while running, disk from
// creation until destroy, ledger and balance move together, exhausted balances stop instances
// (never destroy them), and concurrent meter runs charge each period once.
import { expect, it } from 'vitest';
import type { KyselyPlugin } from 'kysely';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { offers, renter, runningInstance } from '../../../../test/helpers/market.js';
import { turnsDuring } from '../../../../test/helpers/turns.js';
import { runMeter } from './billing.service.js';

// 3.6 $/h compute = 1000 µ$/s; disk 0.1 $/GB-month × 72 GB / 720 h = 0.01 $/h ≈ 2.78 µ$/s.
const COMPUTE_PER_S = 1000;
/**
 * The disk's charge from `from` to `until` (epoch ms): its running total at each end in whole
 * micro-dollars (0.01 $/h is 0.01 / 3.6 µ$ a millisecond), so consecutive periods add up.
 */
const disk = (from: number, until: number) =>
  Math.round((0.01 * until) / 3.6) - Math.round((0.01 * from) / 3.6);

const row = (t: TestApp, id: number) =>
  t.deps.db.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const balance = async (t: TestApp, userId: number) =>
  (
    await t.deps.db
      .selectFrom('users')
      .select('balance_micros')
      .where('id', '=', userId)
      .executeTakeFirstOrThrow()
  ).balance_micros;

describeEachDb('billing', (dialect) => {
  const t = useTestApp(dialect);

  it('charges compute while running, only disk while stopped, nothing after destroy; ledger = balance change = accrued', async () => {
    const u = await renter(t(), { balanceUsd: 100 });
    const [offer] = await offers(t(), 1, { priceGpu: 3.6, priceDisk: 0.1 });
    const id = await runningInstance(t(), u.apiKey, offer!);
    const t0 = (await row(t(), id)).billed_until;
    const start = await balance(t(), u.id);
    t().clock.advance(100_000);
    await runMeter(t().deps);
    expect((await row(t(), id)).accrued_micros).toBe(100 * COMPUTE_PER_S + disk(t0, t0 + 100_000));
    expect(
      (await t().request('PUT', `/api/v0/instances/${id}/`, { key: u.apiKey, body: { state: 'stopped' } }))
        .status,
    ).toBe(200);
    t().clock.advance(3_600_000);
    await runMeter(t().deps);
    expect((await row(t(), id)).accrued_micros).toBe(100 * COMPUTE_PER_S + disk(t0, t0 + 3_700_000));
    // Destroy settles up to now and then nothing more.
    t().clock.advance(10_000);
    expect(
      (await t().request('DELETE', `/api/v0/instances/${id}/`, { key: u.apiKey, body: {} })).status,
    ).toBe(200);
    // The disk's periods (100 s, an hour, 10 s) add up to its charge over the whole span.
    const total = 100 * COMPUTE_PER_S + disk(t0, t0 + 3_710_000);
    t().clock.advance(3_600_000);
    await runMeter(t().deps);
    const r = await row(t(), id);
    expect(r.accrued_micros).toBe(total);
    expect(start - (await balance(t(), u.id))).toBe(total);
    const ledger = await t()
      .deps.db.selectFrom('billing_ledger')
      .select(['kind', 'amount_micros'])
      .where('instance_id', '=', id)
      .execute();
    expect(ledger.reduce((s, l) => s + l.amount_micros, 0)).toBe(total);
    expect(ledger.filter((l) => l.kind === 'compute').reduce((s, l) => s + l.amount_micros, 0)).toBe(
      100 * COMPUTE_PER_S,
    );

    const b = await t().request('GET', '/api/v0/billing/', { key: u.apiKey });
    expect(b.status).toBe(200);
    expect(b.body.balance_micros).toBe(await balance(t(), u.id));
    const c = await t().request('GET', `/api/v0/billing/charges/?instance_id=${id}`, { key: u.apiKey });
    expect(c.body.charges.reduce((s: number, x: { amount_micros: number }) => s + x.amount_micros, 0)).toBe(
      total,
    );
  });

  it('shows each live instance its accrued cost', async () => {
    const u = await renter(t(), { balanceUsd: 100 });
    const [offer] = await offers(t(), 1, { priceGpu: 3.6, priceDisk: 0.1 });
    const id = await runningInstance(t(), u.apiKey, offer!);
    const t0 = (await row(t(), id)).billed_until;
    t().clock.advance(10_000);
    await runMeter(t().deps);
    const one = await t().request('GET', `/api/v0/instances/${id}/`, { key: u.apiKey });
    expect(one.body.instances.accrued_cost).toBeCloseTo(
      (10 * COMPUTE_PER_S + disk(t0, t0 + 10_000)) / 1e6,
      9,
    );
    const b = await t().request('GET', '/api/v0/billing/', { key: u.apiKey });
    expect(b.body.instances).toEqual([
      expect.objectContaining({ id, accrued_cost: one.body.instances.accrued_cost }),
    ]);
  });

  it('stops (never destroys) the instances of a user whose balance runs out; start is refused until credit is added', async () => {
    const u = await renter(t(), { balanceUsd: 1 });
    const [a, b] = await offers(t(), 2, { priceGpu: 3.6, priceDisk: 0.1 });
    const ia = await runningInstance(t(), u.apiKey, a!);
    const ib = await runningInstance(t(), u.apiKey, b!);
    t().clock.advance(600_000); // 2 × 600 s × 0.001 $/s = 1.2 $ > 1 $
    const r = await runMeter(t().deps);
    expect(r.stopped.sort()).toEqual([ia, ib].sort());
    for (const id of [ia, ib]) {
      const x = await row(t(), id);
      expect(x).toMatchObject({ actual_status: 'stopped', intended_status: 'stopped', destroyed_at: null });
    }
    expect(await balance(t(), u.id)).toBeLessThanOrEqual(0);
    const start = await t().request('PUT', `/api/v0/instances/${ia}/`, {
      key: u.apiKey,
      body: { state: 'running' },
    });
    expect(start.status).toBe(402);
    // Disk keeps accruing while stopped, compute does not.
    const { accrued_micros: before, billed_until: from } = await row(t(), ia);
    t().clock.advance(3_600_000);
    await runMeter(t().deps);
    expect((await row(t(), ia)).accrued_micros - before).toBe(disk(from, from + 3_600_000));
  });

  it('charges each period once when several meters run at the same time', async () => {
    const u = await renter(t(), { balanceUsd: 100 });
    const [offer] = await offers(t(), 1, { priceGpu: 3.6, priceDisk: 0.1 });
    const id = await runningInstance(t(), u.apiKey, offer!);
    const t0 = (await row(t(), id)).billed_until;
    const before = await balance(t(), u.id);
    t().clock.advance(50_000);
    await Promise.all(Array.from({ length: 6 }, () => runMeter(t().deps)));
    expect((await row(t(), id)).accrued_micros).toBe(50 * COMPUTE_PER_S + disk(t0, t0 + 50_000));
    expect(before - (await balance(t(), u.id))).toBe(50 * COMPUTE_PER_S + disk(t0, t0 + 50_000));
  });

  it('settles many instances in chunks, each exactly once, with concurrent meters racing over the chunks', async () => {
    const u = await renter(t(), { balanceUsd: 100 });
    const list = await offers(t(), 5, { priceGpu: 3.6, priceDisk: 0.1 });
    const ids = [];
    for (const o of list) ids.push(await runningInstance(t(), u.apiKey, o));
    const before = await balance(t(), u.id);
    const from = new Map<number, number>();
    for (const id of ids) from.set(id, (await row(t(), id)).billed_until);
    t().clock.advance(40_000);
    await Promise.all(Array.from({ length: 4 }, () => runMeter(t().deps, { chunk: 2 })));
    // Every instance was charged by exactly one meter: no period twice, none missed.
    const each = (id: number) => 40 * COMPUTE_PER_S + disk(from.get(id)!, from.get(id)! + 40_000);
    for (const id of ids) expect((await row(t(), id)).accrued_micros).toBe(each(id));
    expect(before - (await balance(t(), u.id))).toBe(ids.reduce((s, id) => s + each(id), 0));
  });

  it('lets the event loop serve other work between chunks', async () => {
    const u = await renter(t(), { balanceUsd: 100 });
    const list = await offers(t(), 6, { priceGpu: 3.6, priceDisk: 0.1 });
    for (const o of list) await runningInstance(t(), u.apiKey, o);
    t().clock.advance(30_000);
    const { result: r, turns } = await turnsDuring(() => runMeter(t().deps, { chunk: 2 }));
    expect(r.settled).toBeGreaterThanOrEqual(6);
    expect(turns).toBeGreaterThanOrEqual(2); // at least one turn between each of 3+ chunks
  });
  it("settles a chunk of several users' instances in a fixed number of statements, each user charged for their own", async () => {
    const users = [
      await renter(t(), { balanceUsd: 100 }),
      await renter(t(), { balanceUsd: 100 }),
      await renter(t(), { balanceUsd: 100 }),
    ];
    const list = await offers(t(), 7, { priceGpu: 3.6, priceDisk: 0.1 });
    const owned: { id: number; user: number }[] = [];
    for (const [i, o] of list.entries()) {
      const u = users[i % 3]!;
      owned.push({ id: await runningInstance(t(), u.apiKey, o), user: u.id });
    }
    // One stopped (disk only), so the chunk mixes rates.
    expect(
      (
        await t().request('PUT', `/api/v0/instances/${owned[0]!.id}/`, {
          key: users[0]!.apiKey,
          body: { state: 'stopped' },
        })
      ).status,
    ).toBe(200);
    const before = await Promise.all(users.map((u) => balance(t(), u.id)));
    const from = new Map<number, number>();
    for (const o of owned) from.set(o.id, (await row(t(), o.id)).billed_until);
    t().clock.advance(20_000);
    let statements = 0;
    const counting: KyselyPlugin = {
      transformQuery: (a) => (statements++, a.node),
      transformResult: (a) => Promise.resolve(a.result),
    };
    const store = { ...t().deps.store, db: t().deps.store.db.withPlugin(counting) };
    const live = (
      await t().deps.db.selectFrom('instances').select('id').where('destroyed_at', 'is', null).execute()
    ).length;
    const r = await runMeter({ store, clock: t().deps.clock });
    // Earlier tests' instances share the database and are settled too: all of them in one chunk.
    expect(r.settled).toBeGreaterThanOrEqual(7);
    // The id list, then per chunk: the rows, their prepaid deposits, the conditional update, the
    // ledger, the balances and the exhausted-balance check (plus one read per user found without
    // credit): a handful, where settling one instance at a time took five per instance.
    expect(statements).toBeLessThanOrEqual(11);
    expect(live).toBeGreaterThan(10);
    const diskOf = (id: number) => disk(from.get(id)!, from.get(id)! + 20_000);
    for (const [i, u] of users.entries()) {
      const mine = owned.filter((o) => o.user === u.id);
      const expected = mine.reduce(
        (s, o) => s + diskOf(o.id) + (o.id === owned[0]!.id ? 0 : 20 * COMPUTE_PER_S),
        0,
      );
      expect(before[i]! - (await balance(t(), u.id))).toBe(expected);
      const ledger = await t()
        .deps.db.selectFrom('billing_ledger')
        .select((eb) => eb.fn.sum<number>('amount_micros').as('s'))
        .where('user_id', '=', u.id)
        .where('created_at', '=', t().clock.now())
        .executeTakeFirstOrThrow();
      expect(Number(ledger.s)).toBe(expected);
    }
    for (const o of owned) expect((await row(t(), o.id)).billed_until).toBe(t().clock.now());
  });
});
