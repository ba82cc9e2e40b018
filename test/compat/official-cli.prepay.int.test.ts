// The official CLI's reserved-instance commands, each request as that CLI sends it and each reply
// checked for every field it reads (docs/compatibility.md): `prepay instance ID AMOUNT` (PUT
// /instances/prepay/ID/ {"amount": float}; it reads success, timescale and discount_rate, or
// prints msg) and `show deposit ID` (GET /instances/balance/ID/?owner=me; it prints the JSON).
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { offers, renter, runningInstance } from '../helpers/market.js';
import { runMeter } from '../../src/server/modules/billing/billing.service.js';
import { cli, expectOk, f } from './official-cli.js';

describeEachDb('official CLI: prepay instance, show deposit', (dialect) => {
  const t = useTestApp(dialect);
  let key: string;
  let id: number;

  beforeAll(async () => {
    const u = await renter(t(), { balanceUsd: 3000 });
    key = u.apiKey;
    const [offer] = await offers(t(), 1, { priceGpu: 3.6, priceDisk: 0.1 });
    id = await runningInstance(t(), key, offer!);
  });

  it('prepay instance: success, timescale and discount_rate as numbers', async () => {
    const r = await cli(t(), {
      method: 'PUT',
      path: `/instances/prepay/${id}/`,
      key,
      json: { amount: f(2600) },
    });
    expectOk(r);
    expect(r.body.success).toBe(true);
    expect(typeof r.body.timescale).toBe('number');
    expect(r.body.timescale).toBeGreaterThan(1);
    expect(r.body.discount_rate).toBe(0.05);
  });

  it('prepay instance: a refusal carries success false and msg, which the CLI prints', async () => {
    const r = await cli(t(), {
      method: 'PUT',
      path: `/instances/prepay/${id}/`,
      key,
      json: { amount: f(1e6) },
    });
    expect(r.status).toBe(402);
    expect(r.body).toMatchObject({ success: false, error: 'insufficient_balance' });
    expect(typeof r.body.msg).toBe('string');
  });

  it('show deposit: refundable_deposit, total_discount and discount_months', async () => {
    t().clock.advance(3_600_000);
    await runMeter(t().deps);
    const r = await cli(t(), {
      method: 'GET',
      path: `/instances/balance/${id}/`,
      query: { owner: 'me' },
      key,
    });
    expectOk(r);
    expect(r.body.success).toBe(true);
    expect(r.body.refundable_deposit).toBeLessThan(2600);
    expect(r.body.refundable_deposit).toBeGreaterThan(2596);
    expect(r.body.total_discount).toBeGreaterThan(0);
    expect(r.body.discount_months).toBeGreaterThan(1);
  });
});
