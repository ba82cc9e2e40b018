// A stopped instance releases its machine, so that many instances can share few machines over
// time: at most one ACTIVE instance per machine (not destroyed, not stopped), decided by
// the database; stop frees the machine, start re-claims it or answers 409 machine_unavailable.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { offers, renter } from '../../../../test/helpers/market.js';
import { runMeter } from '../billing/billing.service.js';
import { instancesForMachine } from './instances.moves.js';

describeEachDb('a stopped instance releases its machine', (dialect) => {
  const t = useTestApp(dialect);
  const create = (offer: number, key: string, disk = 10) =>
    t().request('PUT', `/api/v0/asks/${offer}/`, { key, body: { image: 'pytorch/pytorch', disk } });
  const put = (id: number, key: string, state: string) =>
    t().request('PUT', `/api/v0/instances/${id}/`, { key, body: { state } });
  const rented = async (m: number) =>
    (await t().deps.db.selectFrom('machines').select('rented').where('id', '=', m).executeTakeFirstOrThrow())
      .rented;
  const row = (id: number) =>
    t().deps.db.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const active = async (m: number) =>
    (
      await t()
        .deps.db.selectFrom('instances')
        .select('id')
        .where('machine_id', '=', m)
        .where('destroyed_at', 'is', null)
        .where('intended_status', '<>', 'stopped')
        .execute()
    ).map((r) => r.id);

  it('stop frees the machine for another client; start then answers 409 machine_unavailable and changes nothing', async () => {
    const [a, b] = [await renter(t()), await renter(t())];
    const [m] = await offers(t(), 1);
    const ia = (await create(m!, a.apiKey)).body.new_contract as number;
    expect(await rented(m!)).toBe(1);
    expect((await put(ia, a.apiKey, 'stopped')).status).toBe(200);
    expect(await rented(m!)).toBe(0);

    const rb = await create(m!, b.apiKey);
    expect(rb.status).toBe(200);
    const ib = rb.body.new_contract as number;
    expect(await rented(m!)).toBe(1);

    // A's row says it cannot start now.
    const shown = (await t().request('GET', `/api/v0/instances/${ia}/`, { key: a.apiKey })).body.instances;
    expect(shown).toMatchObject({
      intended_status: 'stopped',
      machine_available: false,
      allowed_actions: ['destroy', 'label', 'ssh_attach'],
    });
    t().clock.advance(3600_000);
    const before = await row(ia);
    const ledger = await t()
      .deps.db.selectFrom('billing_ledger')
      .select('id')
      .where('instance_id', '=', ia)
      .execute();
    const start = await put(ia, a.apiKey, 'running');
    expect(start.status).toBe(409);
    expect(start.body).toEqual({
      success: false,
      error: 'machine_unavailable',
      msg: 'The machine is rented by another client; destroy this instance and rent another offer',
    });
    // Nothing changed: no settlement, no state move.
    expect(await row(ia)).toEqual(before);
    expect(
      await t().deps.db.selectFrom('billing_ledger').select('id').where('instance_id', '=', ia).execute(),
    ).toHaveLength(ledger.length);
    expect(await active(m!)).toEqual([ib]);
    const bulk = await t().request('PUT', '/api/v0/instances/', {
      key: a.apiKey,
      body: { state: 'running', ids: [ia] },
    });
    expect(bulk.body).toMatchObject({
      success: false,
      results: [{ id: ia, success: false, error: 'machine_unavailable' }],
    });
    expect(await row(ia)).toEqual(before);

    // The agent's view of the machine holds both: one to run, one to keep stopped.
    const desired = await instancesForMachine(t().deps.db, m!);
    expect(desired.map((d) => [d.id, d.intended_status])).toEqual([
      [ia, 'stopped'],
      [ib, 'running'],
    ]);

    // Once B is gone the machine is free and A starts again (re-claiming it).
    expect(
      (await t().request('DELETE', `/api/v0/instances/${ib}/`, { key: b.apiKey, body: {} })).status,
    ).toBe(200);
    expect(await rented(m!)).toBe(0);
    expect(
      (await t().request('GET', `/api/v0/instances/${ia}/`, { key: a.apiKey })).body.instances,
    ).toMatchObject({
      machine_available: true,
      allowed_actions: ['start', 'destroy', 'label', 'ssh_attach'],
    });
    expect((await put(ia, a.apiKey, 'running')).status).toBe(200);
    expect(await rented(m!)).toBe(1);
    expect(await active(m!)).toEqual([ia]);
    // And now a new client cannot rent it.
    const c = await renter(t());
    expect((await create(m!, c.apiKey)).body).toMatchObject({ error: 'offer_unavailable' });
  });

  it("destroying a stopped instance keeps the machine rented by someone else's active one", async () => {
    const [a, b, c] = [await renter(t()), await renter(t()), await renter(t())];
    const [m] = await offers(t(), 1);
    const ia = (await create(m!, a.apiKey)).body.new_contract as number;
    await put(ia, a.apiKey, 'stopped');
    const ib = (await create(m!, b.apiKey)).body.new_contract as number;
    expect(
      (await t().request('DELETE', `/api/v0/instances/${ia}/`, { key: a.apiKey, body: {} })).status,
    ).toBe(200);
    expect(await rented(m!)).toBe(1);
    expect((await create(m!, c.apiKey)).status).toBe(409);
    expect(await active(m!)).toEqual([ib]);
  });

  it('start of a stopped instance whose machine the host removed: 409 saying so', async () => {
    const a = await renter(t());
    const [m] = await offers(t(), 1);
    const ia = (await create(m!, a.apiKey)).body.new_contract as number;
    await put(ia, a.apiKey, 'stopped');
    await t()
      .deps.db.updateTable('machines')
      .set({ deleted_at: t().clock.now() })
      .where('id', '=', m!)
      .execute();
    const r = await put(ia, a.apiKey, 'running');
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({
      error: 'machine_unavailable',
      msg: 'The machine was removed by its host; destroy this instance and rent another offer',
    });
    expect(await row(ia)).toMatchObject({ intended_status: 'stopped', actual_status: 'stopped' });
  });

  it('bulk stop frees every machine; a stopped instance keeps its disk, so a new renter gets only the free disk', async () => {
    const a = await renter(t());
    const ms = await offers(t(), 3);
    const ids = [];
    for (const m of ms) ids.push((await create(m, a.apiKey, 300)).body.new_contract as number);
    const r = await t().request('PUT', '/api/v0/instances/', {
      key: a.apiKey,
      body: { state: 'stopped', ids },
    });
    expect(r.status).toBe(200);
    for (const m of ms) expect(await rented(m)).toBe(0);
    const b = await renter(t());
    // 500 GB machines, 300 GB held by the stopped instance: search shows (and filters on) 200.
    const search = (body: object) =>
      t().request('POST', '/api/v0/bundles/', { key: b.apiKey, body: { id: { eq: ms[0] }, ...body } });
    expect((await search({})).body.offers.map((o: { disk_space: number }) => o.disk_space)).toEqual([200]);
    expect((await search({ allocated_storage: 250 })).body.offers).toEqual([]);
    expect((await search({ disk_space: { gt: 250 } })).body.offers).toEqual([]);
    const tooBig = await create(ms[0]!, b.apiKey, 250);
    expect(tooBig.status).toBe(400);
    expect(tooBig.body.msg).toBe(
      'disk 250 GB exceeds the 200 GB free on this offer (500 GB, of which stopped instances hold 300 GB)',
    );
    expect(await rented(ms[0]!)).toBe(0);
    expect((await create(ms[0]!, b.apiKey, 200)).status).toBe(200);
    // Destroying the stopped instance gives its disk back: 500 − B's 200 (shown when rented is asked for).
    expect(
      (await t().request('DELETE', `/api/v0/instances/${ids[0]}/`, { key: a.apiKey, body: {} })).status,
    ).toBe(200);
    expect(
      (await search({ rented: { eq: true } })).body.offers.map((o: { disk_space: number }) => o.disk_space),
    ).toEqual([300]);
    const held = await t()
      .deps.db.selectFrom('machines')
      .select('disk_held_mb')
      .where('id', 'in', ms)
      .orderBy('id')
      .execute();
    expect(held.map((h) => Number(h.disk_held_mb))).toEqual([200_000, 300_000, 300_000]);
  });

  it('disk keeps billing while stopped; an exhausted balance stops the instance and frees its machine', async () => {
    const a = await renter(t());
    const [m] = await offers(t(), 1, { priceDisk: 72 });
    const ia = (await create(m!, a.apiKey, 10)).body.new_contract as number;
    await put(ia, a.apiKey, 'stopped');
    const before = (await row(ia)).accrued_micros;
    t().clock.advance(3600_000);
    await runMeter(t().deps);
    // 72 $/GB-month × 10 GB / 720 h = 1 $/h of disk, no compute.
    expect((await row(ia)).accrued_micros - before).toBe(1_000_000);
    const kinds = await t()
      .deps.db.selectFrom('billing_ledger')
      .select('kind')
      .where('instance_id', '=', ia)
      .where('period_start', '>=', t().clock.now() - 3600_000)
      .execute();
    expect(kinds.map((k) => k.kind)).toEqual(['disk']);

    const b = await renter(t());
    const [m2] = await offers(t(), 1);
    const ib = (await create(m2!, b.apiKey)).body.new_contract as number;
    await t().deps.db.updateTable('users').set({ balance_micros: 1 }).where('id', '=', b.id).execute();
    t().clock.advance(60_000);
    const out = await runMeter(t().deps);
    expect(out.stopped).toContain(ib);
    expect(await row(ib)).toMatchObject({ intended_status: 'stopped', destroyed_at: null });
    expect(await rented(m2!)).toBe(0);
    expect(await active(m2!)).toEqual([]);
  });
});

describeEachDb('start races on one machine', (dialect) => {
  const t = useTestApp(dialect);
  const create = (offer: number, key: string) =>
    t().request('PUT', `/api/v0/asks/${offer}/`, { key, body: { image: 'x', disk: 5 } });

  /** `n` clients, each with a stopped instance on machine m. */
  async function stoppedOn(m: number, n: number) {
    const out: { id: number; key: string }[] = [];
    for (let i = 0; i < n; i++) {
      const u = await renter(t());
      const id = (await create(m, u.apiKey)).body.new_contract as number;
      expect(
        (await t().request('PUT', `/api/v0/instances/${id}/`, { key: u.apiKey, body: { state: 'stopped' } }))
          .status,
      ).toBe(200);
      out.push({ id, key: u.apiKey });
    }
    return out;
  }

  async function activeOn(m: number) {
    return t()
      .deps.db.selectFrom('instances')
      .select('id')
      .where('machine_id', '=', m)
      .where('destroyed_at', 'is', null)
      .where('intended_status', '<>', 'stopped')
      .execute();
  }

  it('many concurrent starts of several stopped instances: exactly one wins, the others get 409 machine_unavailable', async () => {
    const [m] = await offers(t(), 1);
    const insts = await stoppedOn(m!, 8);
    const replies = await Promise.all(
      Array.from({ length: 80 }, (_, i) => {
        const x = insts[i % insts.length]!;
        return t()
          .request('PUT', `/api/v0/instances/${x.id}/`, { key: x.key, body: { state: 'running' } })
          .then((r) => ({ id: x.id, r }));
      }),
    );
    const won = await activeOn(m!);
    expect(won).toHaveLength(1);
    const winner = won[0]!.id;
    for (const { id, r } of replies) {
      // The winner's repeats are harmless no-ops; every other start is refused cleanly.
      if (id === winner) expect(r.status).toBe(200);
      else expect(r.body).toMatchObject({ success: false, error: 'machine_unavailable' });
    }
    const m1 = await t()
      .deps.db.selectFrom('machines')
      .select('rented')
      .where('id', '=', m!)
      .executeTakeFirstOrThrow();
    expect(m1.rented).toBe(1);
    const losers = await t()
      .deps.db.selectFrom('instances')
      .select(['intended_status', 'actual_status'])
      .where('machine_id', '=', m!)
      .where('id', '<>', winner)
      .execute();
    for (const l of losers) expect(l).toEqual({ intended_status: 'stopped', actual_status: 'stopped' });
  });

  it('concurrent creates and starts on one machine: exactly one request wins', async () => {
    const [m] = await offers(t(), 1);
    const insts = await stoppedOn(m!, 4);
    const newcomers = await Promise.all(Array.from({ length: 4 }, () => renter(t())));
    const reqs: Promise<{ kind: 'create' | 'start'; status: number; body: any }>[] = [];
    for (let i = 0; i < 40; i++) {
      if (i % 2) {
        const x = insts[i % insts.length]!;
        reqs.push(
          t()
            .request('PUT', `/api/v0/instances/${x.id}/`, { key: x.key, body: { state: 'running' } })
            .then((r) => ({ kind: 'start' as const, ...r })),
        );
      } else {
        reqs.push(
          create(m!, newcomers[i % newcomers.length]!.apiKey).then((r) => ({
            kind: 'create' as const,
            ...r,
          })),
        );
      }
    }
    const replies = await Promise.all(reqs);
    const won = await activeOn(m!);
    expect(won).toHaveLength(1);
    const created = replies.filter((r) => r.kind === 'create' && r.status === 200);
    if (created.length === 1) {
      // A create won: every start was refused.
      expect(created[0]!.body.new_contract).toBe(won[0]!.id);
      for (const r of replies.filter((x) => x.kind === 'start'))
        expect(r.body).toMatchObject({ error: 'machine_unavailable' });
    } else {
      // A start won: every create was refused.
      expect(created).toHaveLength(0);
      expect(insts.map((x) => x.id)).toContain(won[0]!.id);
      for (const r of replies.filter((x) => x.kind === 'create'))
        expect(r.body).toMatchObject({ error: 'offer_unavailable' });
    }
    for (const r of replies) expect([200, 409]).toContain(r.status);
    const total = await t()
      .deps.db.selectFrom('instances')
      .select('id')
      .where('machine_id', '=', m!)
      .execute();
    expect(total).toHaveLength(insts.length + created.length);
  });
});
