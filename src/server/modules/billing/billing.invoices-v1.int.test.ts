// The paged billing history against a real database: `show invoices-v1 --invoices`
// (GET /api/v1/invoices/), `--charges` (GET /charges/) and `search invoices` (GET /invoices),
// over credits and a ledger written by the real meter. Pages follow next_token to the end in
// either order, totals count every page, only the caller's rows, bad filters and tokens refused.
import { beforeAll, describe, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { jsonQuery, renter, runningInstance } from '../../../../test/helpers/market.js';
import { insertMachines } from '../machines/machines.service.js';
import { addCredit, runMeter } from './billing.service.js';

const DAY = 86_400_000;
const D = 20_100;
const T0 = D * DAY + 10 * 3_600_000; // 10:00 UTC on day D
const HOUR = 3_600_000;

/** The meter every 10 s for `n` runs. */
async function meterRuns(t: TestApp, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    t.clock.advance(10_000);
    await runMeter(t.deps);
  }
}

/** Every page of a v1 call, following next_token until it is null. */
async function allPages(t: TestApp, key: string, path: string, q: Record<string, unknown>) {
  const pages: any[] = [];
  let token: string | null = null;
  do {
    const r = await t.request('GET', `${path}?${jsonQuery(token ? { ...q, after_token: token } : q)}`, {
      key,
    });
    expect(r.status, r.raw).toBe(200);
    pages.push(r.body);
    token = r.body.next_token;
    expect(pages.length).toBeLessThan(20);
  } while (token);
  return pages;
}

describeEachDb('paged billing history', (dialect) => {
  const t = useTestApp(dialect);
  let u: { id: number; apiKey: string };
  let other: { id: number; apiKey: string };
  let ids: number[];
  let theirs: number;
  /** The ledger's sums per instance and kind on day D and D + 1. */
  let ledger: { instance_id: number; kind: string; day: number; micros: number; ms: number }[];

  beforeAll(async () => {
    t().clock.set(T0);
    const host = await t().user();
    const spec = { gpuName: 'RTX 4090', numGpus: 1, priceGpu: 3.6, priceDisk: 0.1 };
    const machines = await insertMachines(
      t().deps.db,
      Array.from({ length: 4 }, () => ({ hostId: host.id, ...spec })),
      t().clock.now(),
    );
    u = await renter(t(), { balanceUsd: 100 });
    other = await renter(t(), { balanceUsd: 7 });
    // Credits an hour apart: $100 (the starting balance), 20, 5.25, 40, 5.25.
    for (const usd of [20, 5.25, 40, 5.25]) {
      t().clock.advance(HOUR);
      await addCredit(t().deps, u.id, usd);
    }
    // Charges: i1 from 14:00, i2 from 14:02 on day D; a day later i3; the other renter's one.
    const i1 = await runningInstance(t(), u.apiKey, machines[0]!);
    await meterRuns(t(), 12);
    const i2 = await runningInstance(t(), u.apiKey, machines[1]!);
    theirs = await runningInstance(t(), other.apiKey, machines[3]!);
    await meterRuns(t(), 12);
    t().clock.set(T0 + DAY);
    await runMeter(t().deps);
    const i3 = await runningInstance(t(), u.apiKey, machines[2]!);
    await meterRuns(t(), 12);
    ids = [i1, i2, i3];
    const rows = await t()
      .deps.db.selectFrom('billing_ledger')
      .selectAll()
      .where('user_id', '=', u.id)
      .where('kind', '<>', 'credit')
      .execute();
    ledger = rows.map((r) => ({
      instance_id: Number(r.instance_id),
      kind: r.kind,
      day: Math.floor((r.period_end - 1) / DAY),
      micros: r.amount_micros,
      ms: r.period_end - r.period_start,
    }));
  });

  const whenAll = { when: { gte: T0 / 1000 - 1, lte: T0 / 1000 + 5 * 3600 } };

  describe('invoices: GET /api/v1/invoices/', () => {
    it('pages through the credits oldest first and newest first; total on every page', async () => {
      const asc = await allPages(t(), u.apiKey, '/api/v1/invoices/', {
        select_filters: whenAll,
        latest_first: false,
        limit: 2,
      });
      expect(asc.map((p) => p.count)).toEqual([2, 2, 1]);
      expect(asc.every((p) => p.total === 5 && p.success === true)).toBe(true);
      const results = asc.flatMap((p) => p.results);
      expect(results.map((r: { amount: number }) => r.amount)).toEqual([-100, -20, -5.25, -40, -5.25]);
      expect(results.map((r: { start: number }) => r.start)).toEqual(
        [0, 1, 2, 3, 4].map((h) => (T0 + h * HOUR) / 1000),
      );
      expect(results[0]).toEqual({
        start: T0 / 1000,
        end: T0 / 1000,
        type: 'credit',
        source: 'operator',
        description: 'Credit added to the account',
        amount: -100,
        metadata: { invoice_id: expect.any(Number), service: 'operator' },
        items: [],
      });
      const desc = await allPages(t(), u.apiKey, '/api/v1/invoices/', {
        select_filters: whenAll,
        latest_first: true,
        limit: 3,
      });
      expect(desc.flatMap((p) => p.results).map((r: { start: number }) => r.start)).toEqual(
        results.map((r: { start: number }) => r.start).reverse(),
      );
      // The other renter's one credit only.
      const theirs = await allPages(t(), other.apiKey, '/api/v1/invoices/', { select_filters: whenAll });
      expect(theirs.flatMap((p) => p.results).map((r: { amount: number }) => r.amount)).toEqual([-7]);
    });

    it('order_by amount_cents (ties by id), the when range and the service filter', async () => {
      const byAmount = await allPages(t(), u.apiKey, '/api/v1/invoices/', {
        select_filters: whenAll,
        order_by: [{ col: 'amount_cents', dir: 'desc' }],
        limit: 2,
      });
      const rs = byAmount.flatMap((p) => p.results);
      expect(rs.map((r: { amount: number }) => r.amount)).toEqual([-100, -40, -20, -5.25, -5.25]);
      expect(rs[3].metadata.invoice_id).toBeGreaterThan(rs[4].metadata.invoice_id);
      const some = await allPages(t(), u.apiKey, '/api/v1/invoices/', {
        select_filters: { when: { gt: T0 / 1000, lt: (T0 + 3 * HOUR) / 1000 } },
      });
      expect(some[0].total).toBe(2);
      const stripe = await allPages(t(), u.apiKey, '/api/v1/invoices/', {
        select_filters: { ...whenAll, service: { in: ['stripe_payments', 'bitpay'] } },
      });
      expect(stripe[0]).toMatchObject({ count: 0, total: 0, results: [], next_token: null });
      const operator = await allPages(t(), u.apiKey, '/api/v1/invoices/', {
        select_filters: { ...whenAll, service: { in: ['operator'] } },
      });
      expect(operator[0].total).toBe(5);
    });

    it('refuses a missing range, bad filters, limits, orders and tokens with a 400 naming them', async () => {
      const first = await t().request(
        'GET',
        `/api/v1/invoices/?${jsonQuery({ select_filters: whenAll, limit: 2, latest_first: false })}`,
        { key: u.apiKey },
      );
      const token = first.body.next_token as string;
      for (const [q, says] of [
        [{ select_filters: {} }, 'when is required'],
        [{}, 'when is required'],
        [{ select_filters: { when: { gte: 'soon' } } }, 'when'],
        [{ select_filters: { ...whenAll, balance_after: { gt: 1 } } }, 'balance_after'],
        [{ select_filters: { ...whenAll, service: { like: 'x' } } }, 'like'],
        [{ select_filters: whenAll, limit: 0 }, 'limit'],
        [{ select_filters: whenAll, limit: 501 }, 'limit'],
        [{ select_filters: whenAll, latest_first: 'perhaps' }, 'latest_first'],
        [{ select_filters: whenAll, order_by: [{ col: 'balance_after' }] }, 'order_by'],
        [{ select_filters: whenAll, after_token: 'not a token' }, 'after_token'],
        [{ select_filters: whenAll, latest_first: true, after_token: token }, 'after_token'],
        [
          {
            select_filters: whenAll,
            latest_first: false,
            after_token: Buffer.from('{"o":"when:asc,id:asc","v":["x",1]}').toString('base64url'),
          },
          'after_token',
        ],
      ] as const) {
        const r = await t().request('GET', `/api/v1/invoices/?${jsonQuery(q)}`, { key: u.apiKey });
        expect(r.status, JSON.stringify(q)).toBe(400);
        expect(r.body.error).toBe('bad_request');
        expect(r.body.msg).toContain(says);
      }
      // The token goes on with the order it was made for.
      const next = await t().request(
        'GET',
        `/api/v1/invoices/?${jsonQuery({ select_filters: whenAll, limit: 2, latest_first: false, after_token: token })}`,
        { key: u.apiKey },
      );
      expect(next.status).toBe(200);
      expect(next.body.results[0].amount).toBe(-5.25);
    });
  });

  describe('search invoices: GET /invoices', () => {
    const search = (key: string | null, filters: unknown) =>
      t().request('GET', `/api/v0/invoices/?${jsonQuery({ select_cols: ['*'], select_filters: filters })}`, {
        key,
      });

    it('the credits as invoice records, newest first, filtered as the CLI sends its query', async () => {
      const all = await search(u.apiKey, {});
      expect(all.status).toBe(200);
      expect(all.body.map((r: { amount_cents: number }) => r.amount_cents)).toEqual([
        525, 4000, 525, 2000, 10000,
      ]);
      expect(all.body[4]).toEqual({
        id: expect.any(Number),
        user_id: u.id,
        when: T0 / 1000,
        paid_on: T0 / 1000,
        payment_expected: T0 / 1000,
        amount_cents: 10000,
        original_amount: 10000,
        amount: 100,
        is_credit: true,
        is_delayed: false,
        failed: false,
        refunded: false,
        is_check: false,
        cut_amount: 0,
        cut_percent: 0,
        service: 'operator',
        description: 'Credit added to the account',
      });
      // vastai search invoices 'amount_cents>3000' (values as strings), 'is_credit=True when<…'
      const big = await search(u.apiKey, { amount_cents: { gt: '3000' } });
      expect(big.body.map((r: { amount: number }) => r.amount)).toEqual([40, 100]);
      const early = await search(u.apiKey, {
        is_credit: { eq: true },
        when: { lt: (T0 + 90 * 60_000) / 1000 },
      });
      expect(early.body.map((r: { amount: number }) => r.amount)).toEqual([20, 100]);
      const none = await search(u.apiKey, { is_credit: { eq: false } });
      expect(none.body).toEqual([]);
      const cents = await search(u.apiKey, { amount_cents: { in: ['525', '2000'] }, failed: { eq: false } });
      expect(cents.body).toHaveLength(3);
      // Only the caller's.
      const mine = await search(other.apiKey, {});
      expect(mine.body.map((r: { amount: number }) => r.amount)).toEqual([7]);
    });

    it('a field openrig does not keep, a bad value, no key, or no billing access: refused', async () => {
      for (const [f, says] of [
        [{ balance_after: { gt: 5 } }, 'balance_after'],
        [{ stripe_charge: { eq: 'x' } }, 'stripe_charge'],
        [{ amount_cents: { gt: 'lots' } }, 'amount_cents'],
        [{ is_credit: { eq: 'yes' } }, 'is_credit'],
        ['[1]', 'select_filters'],
      ] as const) {
        const r = await search(u.apiKey, f);
        expect(r.status, JSON.stringify(f)).toBe(400);
        expect(r.body.msg).toContain(says);
      }
      expect((await search(null, {})).status).toBe(401);
      const scoped = await t().request('POST', '/api/v0/auth/apikeys/', {
        key: u.apiKey,
        body: { name: 'offers', permissions: { offers: 'read' } },
      });
      expect((await search(scoped.body.key, {})).status).toBe(403);
      const v1 = await t().request('GET', `/api/v1/invoices/?${jsonQuery({ select_filters: whenAll })}`, {
        key: scoped.body.key,
      });
      expect(v1.status).toBe(403);
    });
  });

  describe('charges: GET /charges/', () => {
    const days = (from: number, to: number) => ({ day: { gte: from * 86400, lte: to * 86400 } });
    const sum = (f: (l: (typeof ledger)[number]) => boolean, k: 'micros' | 'ms' = 'micros') =>
      ledger.filter(f).reduce((s, l) => s + l[k], 0);

    it('one entry per instance with its GPU and storage items, amounts as the ledger has them', async () => {
      const pages = await allPages(t(), u.apiKey, '/api/v0/charges/', {
        select_filters: days(D, D + 1),
        latest_first: false,
        limit: 2,
        format: 'table',
      });
      expect(pages.map((p) => [p.count, p.total])).toEqual([
        [2, 3],
        [1, 3],
      ]);
      const rs = pages.flatMap((p) => p.results);
      // Oldest first: by each one's first charge.
      expect(rs.map((r: { source: string }) => r.source)).toEqual(ids.map((i) => `instance-${i}`));
      expect(rs.some((r: { source: string }) => r.source === `instance-${theirs}`)).toBe(false);
      for (const [n, r] of rs.entries()) {
        const id = ids[n]!;
        const mine = (l: (typeof ledger)[number]) => l.instance_id === id;
        expect(r.amount).toBe(sum(mine) / 1e6);
        expect(r.type).toBe('instance');
        expect(r.metadata).toEqual({ label: null, template_id: null });
        const gpu = r.items.find((x: { type: string }) => x.type === 'gpu');
        const storage = r.items.find((x: { type: string }) => x.type === 'storage');
        expect(gpu.amount).toBe(sum((l) => mine(l) && l.kind === 'compute') / 1e6);
        expect(storage.amount).toBe(sum((l) => mine(l) && l.kind === 'disk') / 1e6);
        const h = (sum((l) => mine(l) && l.kind === 'compute', 'ms') / 3_600_000).toFixed(3);
        expect(gpu.description).toBe(`${h} hours at $3.6/hour`);
        expect(storage.description).toMatch(/^72 GB, \d+\.\d{3} hours at \$0\.01\/hour$/);
        expect(gpu).toMatchObject({ source: null, metadata: {}, items: [] });
      }
      expect(rs[0].description).toBe(`Instance ${ids[0]} Charges - 2 days`);
      expect(rs[2].description).toBe(`Instance ${ids[2]} Charges - 1 day`);
      // Latest first: by each one's last charge (all end together here, so by id, newest first).
      const latest = await allPages(t(), u.apiKey, '/api/v0/charges/', {
        select_filters: days(D, D + 1),
        latest_first: true,
        limit: 1,
        format: 'tree',
      });
      expect(latest.flatMap((p) => p.results).map((r: { source: string }) => r.source)).toEqual(
        [...ids].reverse().map((i) => `instance-${i}`),
      );
    });

    it('the day range counts each charge on the UTC day its period ended; type filters contracts', async () => {
      const dayOne = await allPages(t(), u.apiKey, '/api/v0/charges/', {
        select_filters: days(D + 1, D + 1),
      });
      const rs = dayOne.flatMap((p) => p.results);
      expect(rs).toHaveLength(3);
      for (const r of rs) {
        const id = Number(r.source.split('-')[1]);
        expect(r.amount).toBe(sum((l) => l.instance_id === id && l.day === D + 1) / 1e6);
      }
      const volumes = await allPages(t(), u.apiKey, '/api/v0/charges/', {
        select_filters: { ...days(D, D + 1), type: { in: ['volume', 'serverless'] } },
      });
      expect(volumes[0]).toMatchObject({ count: 0, total: 0, results: [], next_token: null });
      const instances = await allPages(t(), u.apiKey, '/api/v0/charges/', {
        select_filters: { ...days(D, D + 1), type: { in: ['instance'] } },
      });
      expect(instances[0].total).toBe(3);
      const before = await allPages(t(), u.apiKey, '/api/v0/charges/', {
        select_filters: days(D - 7, D - 1),
      });
      expect(before[0].total).toBe(0);
    });

    it('refuses a missing day range, a bad type, format or token', async () => {
      for (const [q, says] of [
        [{ select_filters: {} }, 'day is required'],
        [{ select_filters: { ...days(D, D), type: { in: ['vm'] } } }, 'type'],
        [{ select_filters: { ...days(D, D), when: { gte: 1 } } }, 'when'],
        [{ select_filters: days(D, D), format: 'list' }, 'format'],
        [
          {
            select_filters: days(D, D),
            after_token: Buffer.from('{"o":"end:desc","v":[1]}').toString('base64url'),
          },
          'after_token',
        ],
      ] as const) {
        const r = await t().request('GET', `/api/v0/charges/?${jsonQuery(q)}`, { key: u.apiKey });
        expect(r.status, JSON.stringify(q)).toBe(400);
        expect(r.body.msg).toContain(says);
      }
      expect(
        (
          await t().request('GET', `/api/v0/charges/?${jsonQuery({ select_filters: days(D, D) })}`, {
            key: null,
          })
        ).status,
      ).toBe(401);
    });
  });
});
