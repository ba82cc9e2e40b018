// Prepaid (reserved) instances against a real database: a prepay moves credit from the balance
// into the instance's deposit with the schedule's discount, the meter draws charges from it first
// (exactly, to the micro-dollar), a destroy refunds what is left once, bad requests change
// nothing, and concurrent prepays and destroys racing the meter never create or lose money.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { jsonQuery, offers, renter, runningInstance } from '../../../../test/helpers/market.js';
import { runMeter } from './billing.service.js';
import { chargeMicros } from './billing.meter.js';
import { splitCharge } from './billing.prepay.js';

// 3.6 $/h compute = 1000 µ$/s; disk 0.1 $/GB-month × 72 GB / 720 h = 0.01 $/h. List: 3.61 $/h,
// a month of it 2599.2 $.
const MONTH_USD = 3.61 * 720;

const balance = async (t: TestApp, userId: number) =>
  Number(
    (
      await t.deps.db
        .selectFrom('users')
        .select('balance_micros')
        .where('id', '=', userId)
        .executeTakeFirstOrThrow()
    ).balance_micros,
  );
const deposit = (t: TestApp, id: number) =>
  t.deps.db.selectFrom('instance_deposits').selectAll().where('instance_id', '=', id).executeTakeFirst();
const instance = (t: TestApp, id: number) =>
  t.deps.db.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const ledgerOf = (t: TestApp, id: number) =>
  t.deps.db
    .selectFrom('billing_ledger')
    .select(['kind', 'amount_micros'])
    .where('instance_id', '=', id)
    .orderBy('id')
    .execute();
const sumKind = (rows: { kind: string; amount_micros: number }[], kinds: string[]) =>
  rows.filter((r) => kinds.includes(r.kind)).reduce((s, r) => s + Number(r.amount_micros), 0);

/** A renter with `balanceUsd` and one running on-demand instance at 3.61 $/h. */
async function rented(t: TestApp, balanceUsd: number) {
  const u = await renter(t, { balanceUsd });
  const [offer] = await offers(t, 1, { priceGpu: 3.6, priceDisk: 0.1 });
  const id = await runningInstance(t, u.apiKey, offer!);
  return { u, id };
}

const prepay = (t: TestApp, key: string, id: number, amount: unknown) =>
  t.request('PUT', `/api/v0/instances/prepay/${id}/`, { key, body: { amount } });
const showDeposit = (t: TestApp, key: string, id: number) =>
  t.request('GET', `/api/v0/instances/balance/${id}/?owner=me`, { key });

describeEachDb('prepaid instances', (dialect) => {
  const t = useTestApp(dialect);

  it('moves credit into a deposit with the discount its months earn, and shows it', async () => {
    const { u, id } = await rented(t(), 10_000);
    const before = await balance(t(), u.id);
    // A little over a month: 5 %.
    const r = await prepay(t(), u.apiKey, id, 2600);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, discount_rate: 0.05, refundable_deposit: 2600 });
    expect(r.body.timescale).toBeCloseTo(2600 / MONTH_USD, 9);
    expect(before - (await balance(t(), u.id))).toBe(2_600_000_000);
    expect(r.body.balance).toBe((before - 2_600_000_000) / 1e6);
    // A second prepay: the whole deposit now covers over 3 months, 10 %.
    const r2 = await prepay(t(), u.apiKey, id, '5400');
    expect(r2.status).toBe(200);
    expect(r2.body.discount_rate).toBe(0.1);
    expect(r2.body.timescale).toBeCloseTo(8000 / MONTH_USD, 9);
    const d = await showDeposit(t(), u.apiKey, id);
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({
      success: true,
      refundable_deposit: 8000,
      total_discount: 0,
      discount_rate: 0.1,
      prepaid: 8000,
    });
    expect(d.body.discount_months).toBeCloseTo(8000 / MONTH_USD, 9);
    // The prepays are ledger rows of their own kind; they are not charges.
    expect(sumKind(await ledgerOf(t(), id), ['prepay'])).toBe(8_000_000_000);
  });

  it('draws charges from the deposit at the discounted rate, exactly, and leaves the balance alone', async () => {
    const { u, id } = await rented(t(), 10_000);
    expect((await prepay(t(), u.apiKey, id, 2600)).status).toBe(200);
    const afterPrepay = await balance(t(), u.id);
    const from = (await instance(t(), id)).billed_until;
    t().clock.advance(100_000);
    await runMeter(t().deps);
    const compute = chargeMicros(3.6, from, from + 100_000);
    const disk = chargeMicros(0.01, from, from + 100_000);
    const s = splitCharge(compute, disk, 2_600_000_000, 0.05);
    expect(s.fromBalance).toBe(0);
    expect(await balance(t(), u.id)).toBe(afterPrepay);
    const d = (await deposit(t(), id))!;
    expect(Number(d.remaining_micros)).toBe(2_600_000_000 - s.drawn);
    expect(Number(d.drawn_micros)).toBe(s.drawn);
    expect(Number(d.discount_micros)).toBe(s.discount);
    // What the renter paid is the ledger's charges and the instance's accrued cost: list less discount.
    const ledger = await ledgerOf(t(), id);
    expect(sumKind(ledger, ['compute'])).toBe(compute - s.compute.discount);
    expect(sumKind(ledger, ['disk'])).toBe(disk - s.disk.discount);
    expect(Number((await instance(t(), id)).accrued_micros)).toBe(s.drawn);
    const shown = await showDeposit(t(), u.apiKey, id);
    expect(shown.body.refundable_deposit).toBe((2_600_000_000 - s.drawn) / 1e6);
    expect(shown.body.total_discount).toBe(s.discount / 1e6);
  });

  it('charges the balance at the list rate once the deposit is used up', async () => {
    const { u, id } = await rented(t(), 100);
    // 0.05 $ lasts under a minute at 3.61 $/h (no discount: far under a month).
    expect((await prepay(t(), u.apiKey, id, 0.05)).body.discount_rate).toBe(0);
    const afterPrepay = await balance(t(), u.id);
    const from = (await instance(t(), id)).billed_until;
    t().clock.advance(600_000);
    await runMeter(t().deps);
    const compute = chargeMicros(3.6, from, from + 600_000);
    const disk = chargeMicros(0.01, from, from + 600_000);
    const d = (await deposit(t(), id))!;
    expect(Number(d.remaining_micros)).toBe(0);
    expect(Number(d.drawn_micros)).toBe(50_000);
    expect(afterPrepay - (await balance(t(), u.id))).toBe(compute + disk - 50_000);
    const ledger = await ledgerOf(t(), id);
    expect(sumKind(ledger, ['compute', 'disk'])).toBe(compute + disk);
    // Later charges are the balance's alone.
    const b = await balance(t(), u.id);
    t().clock.advance(10_000);
    await runMeter(t().deps);
    expect(b - (await balance(t(), u.id))).toBe(
      chargeMicros(3.6, from + 600_000, from + 610_000) + chargeMicros(0.01, from + 600_000, from + 610_000),
    );
  });

  it('refunds what is left on destroy, once; prepaid = drawn + refunded to the micro-dollar', async () => {
    const { u, id } = await rented(t(), 10_000);
    const start = await balance(t(), u.id);
    expect((await prepay(t(), u.apiKey, id, 3000)).status).toBe(200);
    t().clock.advance(3_600_000);
    await runMeter(t().deps);
    t().clock.advance(1234);
    const del = await t().request('DELETE', `/api/v0/instances/${id}/`, { key: u.apiKey, body: {} });
    expect(del.status).toBe(200);
    // A repeat destroy is harmless and refunds nothing more.
    expect(
      (await t().request('DELETE', `/api/v0/instances/${id}/`, { key: u.apiKey, body: {} })).status,
    ).toBe(200);
    const d = (await deposit(t(), id))!;
    expect(d.refunded_at).toBe(t().clock.now());
    expect(Number(d.remaining_micros)).toBe(0);
    expect(Number(d.prepaid_micros)).toBe(Number(d.drawn_micros) + Number(d.refunded_micros));
    expect(Number(d.refunded_micros)).toBeGreaterThan(0);
    // The whole life of the instance cost the balance exactly what the deposit paid for it.
    expect(start - (await balance(t(), u.id))).toBe(Number(d.drawn_micros));
    const ledger = await ledgerOf(t(), id);
    expect(ledger.filter((l) => l.kind === 'deposit_refund')).toEqual([
      { kind: 'deposit_refund', amount_micros: -Number(d.refunded_micros) },
    ]);
    expect(sumKind(ledger, ['compute', 'disk'])).toBe(Number(d.drawn_micros));
    // show deposit still answers for a destroyed instance: nothing left.
    const shown = await showDeposit(t(), u.apiKey, id);
    expect(shown.status).toBe(200);
    expect(shown.body.refundable_deposit).toBe(0);
    expect(shown.body.refunded).toBe(Number(d.refunded_micros) / 1e6);
  });

  it('keeps an instance its deposit pays for running when the balance is exhausted', async () => {
    const { u, id } = await rented(t(), 10);
    const [other] = await offers(t(), 1, { priceGpu: 3.6, priceDisk: 0.1 });
    const plain = await runningInstance(t(), u.apiKey, other!);
    // All of the balance into the deposit: the plain instance's charges take it below zero.
    expect((await prepay(t(), u.apiKey, id, 10)).status).toBe(200);
    expect(await balance(t(), u.id)).toBe(0);
    t().clock.advance(60_000);
    const r = await runMeter(t().deps);
    expect(r.stopped).toEqual([plain]);
    expect((await instance(t(), id)).intended_status).toBe('running');
    expect((await instance(t(), plain)).intended_status).toBe('stopped');
  });

  it('refuses bad amounts, others’ and destroyed and interruptible instances, changing nothing', async () => {
    const { u, id } = await rented(t(), 50);
    const other = await renter(t(), { balanceUsd: 50 });
    const before = await balance(t(), u.id);
    const cases: [string, () => Promise<{ status: number; body: any }>, number, RegExp][] = [
      ['zero', () => prepay(t(), u.apiKey, id, 0), 400, /positive/],
      ['negative', () => prepay(t(), u.apiKey, id, -5), 400, /positive/],
      ['not a number', () => prepay(t(), u.apiKey, id, 'ten'), 400, /positive/],
      ['too small', () => prepay(t(), u.apiKey, id, 0.0000001), 400, /at least/],
      ['more than the balance', () => prepay(t(), u.apiKey, id, 50.000001), 402, /balance/],
      [
        'no amount',
        () => t().request('PUT', `/api/v0/instances/prepay/${id}/`, { key: u.apiKey, body: {} }),
        400,
        /amount/,
      ],
      ["another's instance", () => prepay(t(), other.apiKey, id, 1), 404, /No such instance/],
      ['no such instance', () => prepay(t(), u.apiKey, 99_999_999, 1), 404, /No such instance/],
    ];
    for (const [what, call, status, msg] of cases) {
      const r = await call();
      expect([what, r.status]).toEqual([what, status]);
      expect(r.body).toMatchObject({ success: false, error: expect.any(String) });
      expect(r.body.msg).toMatch(msg);
    }
    expect((await showDeposit(t(), other.apiKey, id)).status).toBe(404);
    // An interruptible instance.
    await t().deps.db.updateTable('instances').set({ is_bid: 1 }).where('id', '=', id).execute();
    const bid = await prepay(t(), u.apiKey, id, 1);
    expect(bid.status).toBe(409);
    expect(bid.body.msg).toMatch(/interruptible/);
    await t().deps.db.updateTable('instances').set({ is_bid: 0 }).where('id', '=', id).execute();
    // A destroyed one.
    expect(
      (await t().request('DELETE', `/api/v0/instances/${id}/`, { key: u.apiKey, body: {} })).status,
    ).toBe(200);
    const gone = await prepay(t(), u.apiKey, id, 1);
    expect(gone.status).toBe(409);
    expect(gone.body.msg).toMatch(/destroyed/);
    // Nothing moved: no deposit, no prepay row, the balance as it was less the instance's charges.
    expect(await deposit(t(), id)).toBeUndefined();
    expect(sumKind(await ledgerOf(t(), id), ['prepay', 'deposit_refund'])).toBe(0);
    expect(before - (await balance(t(), u.id))).toBe(sumKind(await ledgerOf(t(), id), ['compute', 'disk']));
  });

  it('shows prepays and refunds in the invoices as instance_prepay, apart from credits', async () => {
    const { u, id } = await rented(t(), 100);
    expect((await prepay(t(), u.apiKey, id, 40)).status).toBe(200);
    t().clock.advance(60_000);
    expect(
      (await t().request('DELETE', `/api/v0/instances/${id}/`, { key: u.apiKey, body: {} })).status,
    ).toBe(200);
    const refunded = Number((await deposit(t(), id))!.refunded_micros);
    const when = { gte: 0, lte: t().clock.now() / 1000 + 1 };
    const page = async (filters: Record<string, unknown>) => {
      const r = await t().request(
        'GET',
        `/api/v1/invoices/?${jsonQuery({ select_filters: { when, ...filters }, latest_first: 'false' })}`,
        { key: u.apiKey },
      );
      expect(r.status).toBe(200);
      return r.body;
    };
    const all = await page({});
    expect(all.results.map((r: { type: string }) => r.type)).toEqual([
      'credit',
      'instance_prepay',
      'deposit_refund',
    ]);
    expect(all.results[1]).toMatchObject({
      type: 'instance_prepay',
      source: `instance-${id}`,
      amount: 40,
      metadata: { service: 'instance_prepay' },
    });
    expect(all.results[2]).toMatchObject({
      amount: -refunded / 1e6,
      metadata: { service: 'instance_prepay' },
    });
    // The official CLI's `show invoices-v1 -i -it reserved` filters on the service.
    const reserved = await page({ service: { in: ['instance_prepay'] } });
    expect(reserved.total).toBe(2);
    expect((await page({ service: { in: ['operator'] } })).total).toBe(1);
    const search = await t().request(
      'GET',
      `/api/v0/invoices?${jsonQuery({ select_filters: { is_credit: { eq: false } } })}`,
      {
        key: u.apiKey,
      },
    );
    expect(search.status).toBe(200);
    expect(search.body).toEqual([
      expect.objectContaining({ service: 'instance_prepay', amount: 40, is_credit: false }),
    ]);
  });

  it('never overdraws the balance under many concurrent prepays', async () => {
    const u = await renter(t(), { balanceUsd: 10 });
    const list = await offers(t(), 3, { priceGpu: 3.6, priceDisk: 0.1 });
    const ids: number[] = [];
    for (const o of list) ids.push(await runningInstance(t(), u.apiKey, o));
    const replies = await Promise.all(
      Array.from({ length: 24 }, (_, i) => prepay(t(), u.apiKey, ids[i % 3]!, 1)),
    );
    const won = replies.filter((r) => r.status === 200).length;
    expect(won).toBe(10);
    expect(replies.filter((r) => r.status === 402).length).toBe(14);
    expect(await balance(t(), u.id)).toBe(0);
    let held = 0;
    for (const id of ids) held += Number((await deposit(t(), id))?.remaining_micros ?? 0);
    expect(held).toBe(10_000_000);
  });

  it('refunds exactly once when destroys race the meter and prepays', async () => {
    for (let round = 0; round < 4; round++) {
      const { u, id } = await rented(t(), 1000);
      const start = await balance(t(), u.id);
      expect((await prepay(t(), u.apiKey, id, 500)).status).toBe(200);
      t().clock.advance(30_000 + round * 7919);
      const destroy = () => t().request('DELETE', `/api/v0/instances/${id}/`, { key: u.apiKey, body: {} });
      const results = await Promise.all([
        runMeter(t().deps),
        destroy(),
        prepay(t(), u.apiKey, id, 1),
        runMeter(t().deps),
        destroy(),
        prepay(t(), u.apiKey, id, 2),
      ]);
      expect((results[1] as { status: number }).status).toBe(200);
      expect((results[4] as { status: number }).status).toBe(200);
      const d = (await deposit(t(), id))!;
      expect(Number(d.remaining_micros)).toBe(0);
      expect(Number(d.prepaid_micros)).toBe(Number(d.drawn_micros) + Number(d.refunded_micros));
      const ledger = await ledgerOf(t(), id);
      expect(ledger.filter((l) => l.kind === 'deposit_refund').length).toBe(1);
      expect(sumKind(ledger, ['prepay'])).toBe(Number(d.prepaid_micros));
      // Money is neither made nor lost: the balance paid the deposit's charges and nothing else.
      expect(start - (await balance(t(), u.id))).toBe(Number(d.drawn_micros));
      expect(sumKind(ledger, ['compute', 'disk'])).toBe(Number(d.drawn_micros));
    }
  });
});
