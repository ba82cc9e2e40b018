// The market on both databases: bids win, wait, are preempted by on-demand and owner rentals and by
// higher bids, resume by themselves, change, and are billed at their own price.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { offers, renter, PUB } from '../../../../test/helpers/market.js';
import { reportInstanceStatus } from './instances.moves.js';
import { resumeWaitingBids } from './instances.market.js';
import { runMeter } from '../billing/billing.service.js';

async function row(t: TestApp, key: string, id: number) {
  const r = await t.request('GET', `/api/v0/instances/${id}/`, { key });
  expect(r.status).toBe(200);
  return r.body.instances as Record<string, unknown>;
}

async function bid(t: TestApp, key: string, machine: number, price: number | null) {
  return t.request('PUT', `/api/v0/asks/${machine}/`, {
    key,
    body: { client_id: 'me', image: 'x', disk: 10, price },
  });
}

async function search(t: TestApp, key: string, body: Record<string, unknown>) {
  const r = await t.request('POST', '/api/v0/bundles/', { key, body });
  expect(r.status).toBe(200);
  return r.body.offers as Record<string, unknown>[];
}

describeEachDb('the market', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off', OPENRIG_PREEMPT_GRACE_S: '7' });

  it('a bid under the floor is a 400 naming the floor; a valid bid wins a free machine at its price', async () => {
    const a = await renter(t());
    const [m] = await offers(t(), 1, { minBid: 0.2 });
    const low = await bid(t(), a.apiKey, m!, 0.1);
    expect(low.status).toBe(400);
    expect(low.body.msg).toContain('0.2');
    expect(
      await t().deps.db.selectFrom('instances').select('id').where('machine_id', '=', m!).execute(),
    ).toEqual([]);
    const ok = await bid(t(), a.apiKey, m!, 0.25);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ success: true, is_bid: true, price: 0.25, bid_waiting: false });
    const r = await row(t(), a.apiKey, ok.body.new_contract as number);
    expect(r).toMatchObject({
      is_bid: true,
      market_tier: 'bid',
      dph_base: 0.25,
      intended_status: 'running',
      bid_waiting: false,
    });
    expect(r.min_bid).toBeCloseTo(0.250001, 9);
    // The offer stays visible to an on-demand search (not rented) and a bid search shows what wins it now.
    const od = await search(t(), a.apiKey, { id: { eq: m } });
    expect(od.map((o) => o.id)).toEqual([m]);
    expect(od[0]).toMatchObject({ rented: false, rentable: true });
    const bs = await search(t(), a.apiKey, { id: { eq: m }, type: 'bid' });
    expect(bs[0]!.min_bid).toBe(0.250001);
    expect(bs[0]!.dph_base).toBe(0.250001);
    const od2 = await search(t(), a.apiKey, { id: { eq: m }, type: 'ondemand' });
    expect(od2).toHaveLength(1);
  });

  it('an on-demand rental preempts a running bid; the bid resumes by itself once it is destroyed', async () => {
    const a = await renter(t());
    const b = await renter(t());
    const [m] = await offers(t(), 1, { minBid: 0.2, priceGpu: 0.5 });
    const ia = (await bid(t(), a.apiKey, m!, 0.3)).body.new_contract as number;
    await reportInstanceStatus(t().deps, ia, 'running');
    t().clock.advance(3_600_000);
    const ob = await t().request('PUT', `/api/v0/asks/${m}/`, {
      key: b.apiKey,
      body: { image: 'y', disk: 10 },
    });
    expect(ob.status).toBe(200);
    expect(ob.body).toMatchObject({ is_bid: false, price: null });
    const ib = ob.body.new_contract as number;
    const ra = await row(t(), a.apiKey, ia);
    expect(ra).toMatchObject({
      intended_status: 'stopped',
      actual_status: 'stopped',
      bid_waiting: true,
      preempted_by: 'on-demand',
    });
    expect(String(ra.status_msg)).toMatch(/outbid by an on-demand rental/);
    expect(String(ra.status_msg)).toContain('7 s');
    // A charged the hour at its bid, compute and disk; nothing after the preemption but disk.
    const charges = await t()
      .deps.db.selectFrom('billing_ledger')
      .select(['kind', 'amount_micros'])
      .where('instance_id', '=', ia)
      .where('kind', '=', 'compute')
      .execute();
    expect(charges.reduce((s, c) => s + Number(c.amount_micros), 0)).toBe(300_000);
    t().clock.advance(3_600_000);
    await runMeter(t().deps);
    const after = await t()
      .deps.db.selectFrom('billing_ledger')
      .select(['amount_micros'])
      .where('instance_id', '=', ia)
      .where('kind', '=', 'compute')
      .execute();
    expect(after.reduce((s, c) => s + Number(c.amount_micros), 0)).toBe(300_000);
    // The invoice says which tier the compute was charged at.
    const inv = await t().request('GET', '/api/v0/users/me/invoices?inc_charges=true', { key: a.apiKey });
    expect(inv.status).toBe(200);
    const items = (
      inv.body.invoices as { kind?: string; instance_id?: number; description: string; rate?: number }[]
    ).filter((x) => x.instance_id === ia && x.kind === 'compute');
    expect(items.length).toBeGreaterThan(0);
    expect(items[0]!.description).toContain('interruptible, at its bid');
    expect(items[0]!.rate).toBe(0.3);
    // Events and an e-mail for A.
    const ev = await t()
      .deps.db.selectFrom('events')
      .select(['type', 'user_id'])
      .where('type', '=', 'instance.preempted')
      .execute();
    expect(ev.map((e) => Number(e.user_id))).toContain(a.id);
    const mail = await t()
      .deps.db.selectFrom('email_outbox')
      .select(['to_addr', 'subject'])
      .where('subject', 'like', `Instance ${ia} was preempted%`)
      .execute();
    expect(mail).toHaveLength(1);
    // An on-demand search now sees the machine rented; another on-demand create is refused.
    const c = await renter(t());
    const oc = await t().request('PUT', `/api/v0/asks/${m}/`, {
      key: c.apiKey,
      body: { image: 'y', disk: 10 },
    });
    expect(oc.status).toBe(409);
    // A bid now waits (accepted), behind the on-demand rental.
    const ic = await bid(t(), c.apiKey, m!, 0.9);
    expect(ic.status).toBe(200);
    expect(ic.body.bid_waiting).toBe(true);
    // B destroyed: the best waiting bid (C's 0.9, above A's 0.3) resumes by itself.
    expect((await t().request('DELETE', `/api/v0/instances/${ib}/`, { key: b.apiKey })).status).toBe(200);
    expect(await row(t(), c.apiKey, ic.body.new_contract as number)).toMatchObject({
      intended_status: 'running',
      bid_waiting: false,
    });
    expect(await row(t(), a.apiKey, ia)).toMatchObject({ intended_status: 'stopped', bid_waiting: true });
    // A raises its bid above C's: A preempts C and resumes.
    const cb = await t().request('PUT', `/api/v0/instances/bid_price/${ia}/`, {
      key: a.apiKey,
      body: { client_id: 'me', price: 1.0 },
    });
    expect(cb.status).toBe(200);
    expect(await row(t(), a.apiKey, ia)).toMatchObject({
      intended_status: 'running',
      bid_waiting: false,
      dph_base: 1,
    });
    expect(await row(t(), c.apiKey, ic.body.new_contract as number)).toMatchObject({
      intended_status: 'stopped',
      bid_waiting: true,
      preempted_by: 'bid',
    });
    const resumed = await t()
      .deps.db.selectFrom('events')
      .select('type')
      .where('type', '=', 'instance.resumed')
      .execute();
    expect(resumed.length).toBeGreaterThanOrEqual(2);
    // price null: the lowest winning bid (just above C's 0.9).
    const low = await t().request('PUT', `/api/v0/instances/bid_price/${ia}/`, {
      key: a.apiKey,
      body: { client_id: 'me', price: null },
    });
    expect(low.status).toBe(200);
    expect(low.body.price).toBe(0.900001);
    expect(await row(t(), a.apiKey, ia)).toMatchObject({ intended_status: 'running', dph_base: 0.900001 });
  });

  it("the owner's own rental preempts bids but never another renter's on-demand rental", async () => {
    const host = await t().user();
    await t().request('POST', '/api/v0/ssh/', { key: host.apiKey, body: { ssh_key: PUB } });
    const a = await renter(t());
    const { insertMachines } = await import('../machines/machines.service.js');
    const [m1, m2] = await insertMachines(
      t().deps.db,
      [0, 1].map(() => ({ hostId: host.id, gpuName: 'RTX 4090', numGpus: 1, minBid: 0.1 })),
      t().clock.now(),
    );
    const ia = (await bid(t(), a.apiKey, m1!, 0.2)).body.new_contract as number;
    const own = await t().request('PUT', `/api/v0/asks/${m1}/`, {
      key: host.apiKey,
      body: { image: 'x', disk: 10 },
    });
    expect(own.status).toBe(200);
    expect(await row(t(), a.apiKey, ia)).toMatchObject({ bid_waiting: true, preempted_by: 'owner' });
    expect(await row(t(), host.apiKey, own.body.new_contract as number)).toMatchObject({
      market_tier: 'owner',
    });
    const od = await t().request('PUT', `/api/v0/asks/${m2}/`, {
      key: a.apiKey,
      body: { image: 'x', disk: 10 },
    });
    expect(od.status).toBe(200);
    const own2 = await t().request('PUT', `/api/v0/asks/${m2}/`, {
      key: host.apiKey,
      body: { image: 'x', disk: 10 },
    });
    expect(own2.status).toBe(409);
  });

  it('a lower bid waits; stopping it ends the wait; the backstop resumes a bid on a machine freed elsewhere', async () => {
    const a = await renter(t());
    const b = await renter(t());
    const [m] = await offers(t(), 1, { minBid: 0.1 });
    const ia = (await bid(t(), a.apiKey, m!, 0.5)).body.new_contract as number;
    const wb = await bid(t(), b.apiKey, m!, 0.4);
    expect(wb.status).toBe(200);
    expect(wb.body.bid_waiting).toBe(true);
    const ib = wb.body.new_contract as number;
    const rb = await row(t(), b.apiKey, ib);
    expect(rb).toMatchObject({ bid_waiting: true, intended_status: 'stopped' });
    expect(String(rb.waiting_reason)).toContain('0.500001');
    // A tie with the running bid loses (the earlier bid wins).
    const tie = await t().request('PUT', `/api/v0/instances/bid_price/${ib}/`, {
      key: b.apiKey,
      body: { price: 0.5 },
    });
    expect(tie.status).toBe(200);
    expect(tie.body.bid_waiting).toBe(true);
    // Stop A behind the market's back (as the balance stop does: it frees the machine only).
    await t()
      .deps.db.updateTable('instances')
      .set({ intended_status: 'stopped', actual_status: 'stopped' })
      .where('id', '=', ia)
      .execute();
    await t()
      .deps.db.updateTable('machines')
      .set({ rented: 0, bid_to_win_dph: null })
      .where('id', '=', m!)
      .execute();
    expect((await resumeWaitingBids(t().deps)).map((r) => r.instance)).toEqual([ib]);
    expect(await row(t(), b.apiKey, ib)).toMatchObject({ intended_status: 'running', bid_waiting: false });
    // A bid change of an on-demand instance is refused.
    const od = await renter(t());
    const [m2] = await offers(t(), 1);
    const io = (
      await t().request('PUT', `/api/v0/asks/${m2}/`, { key: od.apiKey, body: { image: 'x', disk: 10 } })
    ).body.new_contract;
    expect(
      (await t().request('PUT', `/api/v0/instances/bid_price/${io}/`, { key: od.apiKey, body: { price: 1 } }))
        .status,
    ).toBe(400);
    // A waiting bid stopped by its renter stops waiting.
    const [m3] = await offers(t(), 1, { minBid: 0.1 });
    await bid(t(), a.apiKey, m3!, 0.5);
    const w = (await bid(t(), b.apiKey, m3!, 0.2)).body.new_contract as number;
    expect(
      (await t().request('PUT', `/api/v0/instances/${w}/`, { key: b.apiKey, body: { state: 'stopped' } }))
        .status,
    ).toBe(200);
    expect(await row(t(), b.apiKey, w)).toMatchObject({ bid_waiting: false, intended_status: 'stopped' });
  });
});
