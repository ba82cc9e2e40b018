// The official CLI's market commands, each request exactly as the CLI builds it: `search offers
// --type bid`, `create instance ID --bid_price P`, `change bid ID --price P` (and without
// --price, which sends null: the lowest winning bid), with `show instance`'s fields after each.
import { expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { offers, renter } from '../helpers/market.js';
import { cli, cliCreateBody, expectOk, f } from './official-cli.js';

const DEFAULT_SEARCH = {
  verified: { eq: true },
  external: { eq: false },
  rentable: { eq: true },
  rented: { eq: false },
};

describeEachDb('official CLI: market commands', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_PREEMPT_GRACE_S: '5' });

  it('search --type bid, create --bid_price, change bid: each does the real thing', async () => {
    const a = await renter(t());
    const b = await renter(t());
    const [m] = await offers(t(), 1, { minBid: 0.2 });
    const search = async (key: string, type: string) => {
      const r = await cli(t(), {
        method: 'POST',
        path: '/bundles/',
        key,
        json: { ...DEFAULT_SEARCH, id: { eq: m }, order: [['score', 'desc']], type, allocated_storage: f(5) },
      });
      expectOk(r);
      return r.body.offers as Record<string, unknown>[];
    };
    expect((await search(a.apiKey, 'bid'))[0]).toMatchObject({
      id: m,
      min_bid: 0.2,
      dph_base: 0.2,
      is_bid: true,
    });
    const ca = await cli(t(), {
      method: 'PUT',
      path: `/asks/${m}/`,
      key: a.apiKey,
      json: cliCreateBody({ price: f(0.25) }),
    });
    expectOk(ca);
    expect(ca.body).toMatchObject({ success: true, is_bid: true, price: 0.25 });
    const show = async (key: string, id: number) =>
      (await cli(t(), { method: 'GET', path: `/instances/${id}/`, query: { owner: 'me' }, key })).body
        .instances;
    expect(await show(a.apiKey, ca.body.new_contract)).toMatchObject({
      is_bid: true,
      dph_base: 0.25,
      min_bid: 0.250001,
    });
    // The machine a bid holds is still offered on demand (the CLI's default filters) and to bidders above it.
    expect(await search(b.apiKey, 'on-demand')).toHaveLength(1);
    expect((await search(b.apiKey, 'bid'))[0]).toMatchObject({ min_bid: 0.250001 });
    // B outbids A: A waits; `change bid` without --price (null) takes back the lowest winning bid.
    const cb = await cli(t(), {
      method: 'PUT',
      path: `/asks/${m}/`,
      key: b.apiKey,
      json: cliCreateBody({ price: f(0.3) }),
    });
    expectOk(cb);
    expect(await show(a.apiKey, ca.body.new_contract)).toMatchObject({
      bid_waiting: true,
      preempted_by: 'bid',
    });
    const ch = await cli(t(), {
      method: 'PUT',
      path: `/instances/bid_price/${ca.body.new_contract}/`,
      key: a.apiKey,
      json: { client_id: 'me', price: null },
    });
    expectOk(ch);
    expect(ch.body).toMatchObject({ success: true, price: 0.300001 });
    expect(await show(a.apiKey, ca.body.new_contract)).toMatchObject({
      intended_status: 'running',
      bid_waiting: false,
      dph_base: 0.300001,
    });
    expect(await show(b.apiKey, cb.body.new_contract)).toMatchObject({ bid_waiting: true });
    // change bid ID --price 0.1: under the host's floor, a 400 whose msg names it.
    const low = await cli(t(), {
      method: 'PUT',
      path: `/instances/bid_price/${ca.body.new_contract}/`,
      key: a.apiKey,
      json: { client_id: 'me', price: f(0.1) },
    });
    expect(low.status).toBe(400);
    expect(low.body.msg).toContain('0.2');
  });
});
