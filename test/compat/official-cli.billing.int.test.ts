// The official CLI's billing history commands (show invoices with -c, -p, -q and
// --instance_label, search invoices, show invoices-v1 --invoices and --charges), each request as
// that CLI sends it, each reply checked for every field the CLI reads (docs/compatibility.md).
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { renter } from '../helpers/market.js';
import { insertMachines } from '../../src/server/modules/machines/machines.service.js';
import { reportInstanceStatus } from '../../src/server/modules/instances/instances.moves.js';
import { addCredit, runMeter } from '../../src/server/modules/billing/billing.service.js';
import { cli, expectOk, expectTableFields, f } from './official-cli.js';

const DAY = 86_400_000;
const T0 = 20_200 * DAY + 12 * 3_600_000;

/** The columns `show invoices` prints (description, quantity, rate, amount, timestamp, type). */
const INVOICE_TABLE = {
  description: 'str',
  quantity: 'num',
  rate: 'num',
  amount: 'num',
  timestamp: 'num',
  type: 'str',
} as const;

describeEachDb('official CLI: billing history', (dialect) => {
  const t = useTestApp(dialect);
  let key: string;
  let labelled: number;
  let plain: number;

  beforeAll(async () => {
    t().clock.set(T0);
    const host = await t().user();
    const [a, b] = await insertMachines(
      t().deps.db,
      [0, 1].map(() => ({ hostId: host.id, gpuName: 'RTX 4090', numGpus: 1, priceGpu: 0.5, priceDisk: 0.2 })),
      t().clock.now(),
    );
    const u = await renter(t(), { balanceUsd: 40 });
    key = u.apiKey;
    const rent = async (machine: number, label: string | null) => {
      const r = await cli(t(), {
        method: 'PUT',
        path: `/asks/${machine}/`,
        key,
        json: { client_id: 'me', image: 'ubuntu:22.04', disk: 16, label, runtype: 'ssh' },
      });
      expectOk(r);
      await reportInstanceStatus(t().deps, r.body.new_contract, 'running');
      return r.body.new_contract as number;
    };
    labelled = await rent(a!, 'autoscale-a');
    plain = await rent(b!, null);
    for (let i = 0; i < 30; i++) {
      t().clock.advance(10_000);
      await runMeter(t().deps);
    }
    await addCredit(t().deps, u.id, 10);
    t().clock.advance(60_000);
  });

  // `show invoices` without -s/-e: the last 24 hours, as floats of time.time(); inc_charges true.
  const showInvoices = (over: Record<string, unknown> = {}) =>
    cli(t(), {
      method: 'GET',
      path: '/users/me/invoices',
      query: {
        owner: 'me',
        sdate: f(t().clock.now() / 1000 - 86400 + 0.771917),
        edate: f(t().clock.now() / 1000 + 0.7719162),
        inc_charges: true,
        ...over,
      },
      key,
    });

  it('show invoices: {invoices, current}; charges and payments with the table columns; -q reads id', async () => {
    const r = await showInvoices();
    expectOk(r);
    const rows = r.body.invoices as Record<string, any>[];
    // Two instances × compute and disk, today; the starting balance and the credit.
    expect(rows.filter((x) => x.type === 'charge')).toHaveLength(4);
    expect(rows.filter((x) => x.type === 'payment').map((x) => x.amount)).toEqual([40, 10]);
    for (const row of rows) {
      expectTableFields(row, INVOICE_TABLE);
      // The CLI's filter: float(amount) != 0 and a timestamp in its range.
      expect(row.amount).not.toBe(0);
      expect(typeof row.timestamp).toBe('number');
    }
    // -q prints each row's id: the payments have one.
    expect(rows.filter((x) => Number.isInteger(x.id)).map((x) => x.type)).toEqual(['payment', 'payment']);
    // `Current:` prints this object.
    expect(Object.keys(r.body.current)).toEqual(['charges', 'service_fee', 'total', 'credit']);
    expect(r.body.current.charges).toBeGreaterThan(0);
    // -p (only credits) sends inc_charges=false; dates given with -s/-e are time.mktime floats.
    const p = await showInvoices({
      inc_charges: false,
      sdate: f(T0 / 1000 - 86400),
      edate: f(T0 / 1000 + 86400),
    });
    expectOk(p);
    expect(p.body.invoices.map((x: { type: string }) => x.type)).toEqual(['payment', 'payment']);
  });

  it('show invoices --instance_label: POST /contracts/fetch/ {label, contract_ids} answers {contracts} with id', async () => {
    const r = await showInvoices();
    const ids = [
      ...new Set(
        (r.body.invoices as { instance_id: number | null }[])
          .map((x) => x.instance_id)
          .filter((x) => x !== null),
      ),
    ];
    expect(ids.sort()).toEqual([labelled, plain].sort());
    const c = await cli(t(), {
      method: 'POST',
      path: '/contracts/fetch/',
      key,
      json: { label: 'autoscale-a', contract_ids: ids },
    });
    expectOk(c);
    expect(c.body.contracts.map((x: { id: number }) => x.id)).toEqual([labelled]);
  });

  it('search invoices: GET /invoices?select_cols=["*"]&select_filters={...} answers a bare array', async () => {
    // vastai search invoices
    const all = await cli(t(), {
      method: 'GET',
      path: '/invoices',
      query: { select_cols: ['*'], select_filters: {} },
      key,
    });
    expectOk(all);
    expect(Array.isArray(all.body)).toBe(true);
    expect(all.body.map((x: { amount_cents: number }) => x.amount_cents)).toEqual([1000, 4000]);
    // vastai search invoices 'amount_cents>3000 is_credit=True'
    const some = await cli(t(), {
      method: 'GET',
      path: '/invoices',
      query: {
        select_cols: ['*'],
        select_filters: { amount_cents: { gt: '3000' }, is_credit: { eq: true } },
      },
      key,
    });
    expectOk(some);
    expect(some.body.map((x: { amount_cents: number }) => x.amount_cents)).toEqual([4000]);
    // vastai search invoices 'amount>20' (and the other comparisons): amount in dollars, as shown.
    for (const [op, v, want] of [
      ['gt', '20', [40]],
      ['gte', 40, [40]],
      ['lt', 40, [10]],
      ['lte', '10.0', [10]],
      ['eq', 10, [10]],
      ['neq', 10, [40]],
      ['gt', 40, []],
    ] as const) {
      const r = await cli(t(), {
        method: 'GET',
        path: '/invoices',
        query: { select_cols: ['*'], select_filters: { amount: { [op]: v } } },
        key,
      });
      expectOk(r);
      expect(
        r.body.map((x: { amount: number }) => x.amount),
        `amount ${op} ${v}`,
      ).toEqual(want);
    }
    // vastai search invoices 'service=stripe_payments' (the CLI turns _ into a space)
    const stripe = await cli(t(), {
      method: 'GET',
      path: '/invoices',
      query: { select_cols: ['*'], select_filters: { service: { eq: 'stripe payments' } } },
      key,
    });
    expectOk(stripe);
    expect(stripe.body).toEqual([]);
    // vastai search invoices 'balance_after>5': a field openrig does not keep, a 400 naming it.
    const no = await cli(t(), {
      method: 'GET',
      path: '/invoices',
      query: { select_cols: ['*'], select_filters: { balance_after: { gt: 5.0 } } },
      key,
    });
    expect(no.status).toBe(400);
    expect(no.body.msg).toContain('balance_after');
  });

  it('show invoices-v1 --invoices: results with metadata.invoice_id, type, source; next_token pages', async () => {
    // vastai show invoices-v1 -i -l 1 (the last 7 days; the CLI sends ints)
    const q = {
      select_filters: { when: { gte: T0 / 1000 - 7 * 86400, lte: T0 / 1000 + 3600 } },
      latest_first: false,
      limit: 1,
    };
    const r = await cli(t(), { method: 'GET', path: '/api/v1/invoices/', query: q, key });
    expectOk(r);
    expect(r.body).toMatchObject({ count: 1, total: 2 });
    const [item] = r.body.results;
    expect(item).toMatchObject({ type: 'credit', source: 'operator', amount: -40, items: [] });
    expect(typeof item.start).toBe('number');
    expect(typeof item.end).toBe('number');
    expect(typeof item.description).toBe('string');
    expect(Number.isInteger(item.metadata.invoice_id)).toBe(true);
    // "Fetch next page?": the same parameters and after_token.
    const next = await cli(t(), {
      method: 'GET',
      path: '/api/v1/invoices/',
      query: { ...q, after_token: r.body.next_token },
      key,
    });
    expectOk(next);
    expect(next.body.results.map((x: { amount: number }) => x.amount)).toEqual([-10]);
    expect(next.body.next_token).toBeNull();
    // -it stripe transfers: service in [...]; openrig's credits are the operator's.
    const stripe = await cli(t(), {
      method: 'GET',
      path: '/api/v1/invoices/',
      query: {
        ...q,
        select_filters: { ...q.select_filters, service: { in: ['stripe_payments', 'transfer'] } },
      },
      key,
    });
    expectOk(stripe);
    expect(stripe.body).toMatchObject({ count: 0, total: 0, results: [], next_token: null });
  });

  it('show invoices-v1 --charges: per instance, source instance-ID, items with source and items', async () => {
    // vastai show invoices-v1 -c -ct i v --latest-first
    const r = await cli(t(), {
      method: 'GET',
      path: '/api/v0/charges/',
      query: {
        select_filters: {
          day: { gte: T0 / 1000 - 7 * 86400, lte: T0 / 1000 },
          type: { in: ['instance', 'volume'] },
        },
        latest_first: true,
        limit: 20,
        format: 'table',
      },
      key,
    });
    expectOk(r);
    expect(r.body).toMatchObject({ count: 2, total: 2, next_token: null });
    expect(r.body.results.map((x: { source: string }) => x.source)).toEqual([
      `instance-${plain}`,
      `instance-${labelled}`,
    ]);
    const walk = (items: Record<string, any>[]) => {
      for (const x of items) {
        // The CLI reads each of these, on every level.
        for (const k of ['start', 'end', 'amount', 'source', 'items', 'type', 'description'])
          expect(Object.hasOwn(x, k), k).toBe(true);
        expect(typeof x.metadata).toBe('object');
        walk(x.items);
      }
    };
    walk(r.body.results);
    expect(r.body.results[1].metadata.label).toBe('autoscale-a');
    expect(r.body.results[0].items.map((x: { type: string }) => x.type)).toEqual(['gpu', 'storage']);
  });
});
