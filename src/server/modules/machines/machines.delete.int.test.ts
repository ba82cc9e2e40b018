// A host deletes a machine (POST /api/v0/machines/{id}/force_delete/): refused while a client's
// instance on it is live, otherwise soft-deleted with the host's own instances destroyed and its
// maintenance windows cancelled; afterwards no read that serves the market or the host's tools
// shows it, its agent is refused, and its history (ledger, earnings, past instances) stays.
import { beforeAll, describe, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { scopedKey, useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { agentMachine, renter } from '../../../../test/helpers/market.js';
import { insertMachines } from './machines.service.js';
import { runMeter } from '../billing/billing.service.js';

const del = (t: TestApp, key: string | null, id: number) =>
  t.request('POST', `/api/v0/machines/${id}/force_delete/`, { key, body: {} });

async function machine(t: TestApp, hostId: number): Promise<number> {
  const [id] = await insertMachines(
    t.deps.db,
    [{ hostId, gpuName: 'RTX 4090', numGpus: 1, priceGpu: 0.5, priceDisk: 0.1 }],
    t.clock.now(),
  );
  return id!;
}

async function rent(t: TestApp, key: string, offer: number): Promise<number> {
  const r = await t.request('PUT', `/api/v0/asks/${offer}/`, {
    key,
    body: { client_id: 'me', image: 'ubuntu:22.04', disk: 10, runtype: 'ssh' },
  });
  expect(r.status, r.raw).toBe(200);
  return r.body.new_contract as number;
}

async function machineRow(t: TestApp, id: number) {
  return t.deps.db.selectFrom('machines').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

async function instanceRow(t: TestApp, id: number) {
  return t.deps.db.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

describeEachDb('deleting a machine', (dialect) => {
  const t = useTestApp(dialect);
  let host: Awaited<ReturnType<TestApp['user']>>;
  beforeAll(async () => {
    host = await renter(t());
  });

  describe('an idle machine', () => {
    let id: number;
    let kept: number;
    let client: Awaited<ReturnType<TestApp['user']>>;
    beforeAll(async () => {
      id = await machine(t(), host.id);
      kept = await machine(t(), host.id);
      client = await renter(t());
    });

    it('is deleted: success, and the row stays with deleted_at, unlisted', async () => {
      const r = await del(t(), host.apiKey, id);
      expect(r.status, r.raw).toBe(200);
      expect(r.body).toEqual({
        success: true,
        msg: `Machine ${id} deleted`,
        machine_id: id,
        instances_destroyed: 0,
        maintenances_cancelled: 0,
      });
      const row = await machineRow(t(), id);
      expect(Number(row.deleted_at)).toBe(t().clock.now());
      expect(row).toMatchObject({ listed: 0, online_state: 'offline' });
    });

    it("is gone from the host's machine list and from GET /machines/{id}", async () => {
      const list = await t().request('GET', '/api/v0/machines/', { key: host.apiKey });
      expect(list.body.machines.map((m: { id: number }) => m.id)).toEqual(expect.arrayContaining([kept]));
      expect(list.body.machines.map((m: { id: number }) => m.id)).not.toContain(id);
      expect((await t().request('GET', `/api/v0/machines/${id}`, { key: host.apiKey })).status).toBe(404);
    });

    it('is in no search, and cannot be rented', async () => {
      const s = await t().request('POST', '/api/v0/bundles/', {
        key: client.apiKey,
        body: { id: { in: [id, kept] } },
      });
      expect(s.body.offers.map((o: { id: number }) => o.id)).toEqual([kept]);
      const r = await t().request('PUT', `/api/v0/asks/${id}/`, {
        key: client.apiKey,
        body: { image: 'ubuntu:22.04', disk: 10 },
      });
      expect([r.status, r.body.error]).toEqual([404, 'not_found']);
    });

    it('cannot be listed, unlisted, bid on or scheduled for maintenance; a second delete is 404', async () => {
      const k = { key: host.apiKey };
      const calls = [
        t().request('PUT', `/api/v0/machines/${id}/list/`, { ...k, body: { price_gpu: 1 } }),
        t().request('PUT', '/api/v0/machines/create_asks/', { ...k, body: { machine: id, price_gpu: 1 } }),
        t().request('PUT', `/api/v0/machines/${id}/unlist/`, k),
        t().request('PUT', `/api/v0/machines/${id}/minbid/`, { ...k, body: { price: 0.1 } }),
        t().request('PUT', `/api/v0/machines/${id}/cancel_maint/`, { ...k, body: {} }),
        del(t(), host.apiKey, id),
      ];
      for (const r of await Promise.all(calls))
        expect([r.status, r.body.error], r.raw).toEqual([404, 'not_found']);
      const m = await t().request('POST', '/api/v0/machines/maintenances/batch', {
        ...k,
        body: { machine_ids: [id], sdate: t().clock.now() / 1000 + 86_400, duration: 1 },
      });
      expect(m.status).toBe(400);
      expect(m.body.results).toEqual([expect.objectContaining({ machine_id: id, error: 'not_found' })]);
      const row = await machineRow(t(), id);
      expect(row.listed).toBe(0);
      expect(row.maint_until).toBeNull();
    });
  });

  it("a client's live instance (running or stopped) refuses it: 409 naming how many, nothing changed", async () => {
    const id = await machine(t(), host.id);
    const a = await renter(t());
    const inst = await rent(t(), a.apiKey, id);
    const stop = await t().request('PUT', `/api/v0/instances/${inst}/`, {
      key: a.apiKey,
      body: { state: 'stopped' },
    });
    expect(stop.status).toBe(200);
    const before = await machineRow(t(), id);
    const r = await del(t(), host.apiKey, id);
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({
      success: false,
      error: 'machine_in_use',
      live_client_instances: 1,
    });
    expect(r.body.msg).toBe(
      `Machine ${id} has 1 live instance of a client (running or stopped, not destroyed); it can be deleted once that instance is destroyed. Unlist it (unlist machine) so that no one else rents it meanwhile.`,
    );
    expect(await machineRow(t(), id)).toEqual(before);
    expect((await instanceRow(t(), inst)).destroyed_at).toBeNull();

    // Two clients' instances (one stopped, one running): the count says 2.
    const b = await renter(t());
    await rent(t(), b.apiKey, id);
    const two = await del(t(), host.apiKey, id);
    expect([two.status, two.body.live_client_instances]).toEqual([409, 2]);
    expect(two.body.msg).toMatch(/has 2 live instances of clients .* once they are destroyed/);

    // Once they are destroyed it goes.
    for (const [key, i] of [
      [a.apiKey, inst],
      [b.apiKey, (await t().request('GET', '/api/v0/instances/', { key: b.apiKey })).body.instances[0].id],
    ] as [string, number][])
      expect((await t().request('DELETE', `/api/v0/instances/${i}/`, { key, body: {} })).status).toBe(200);
    expect((await del(t(), host.apiKey, id)).status).toBe(200);
  });

  it("destroys the host's own instances with it, billing settled; the ledger, earnings and past instances stay", async () => {
    const id = await machine(t(), host.id);
    const client = await renter(t());
    // A client's past (destroyed) instance, billed for an hour.
    const past = await rent(t(), client.apiKey, id);
    t().clock.advance(3_600_000);
    await runMeter(t().deps);
    expect(
      (await t().request('DELETE', `/api/v0/instances/${past}/`, { key: client.apiKey, body: {} })).status,
    ).toBe(200);
    // The host's own instances: one running, one stopped.
    const own1 = await rent(t(), host.apiKey, id);
    await t().request('PUT', `/api/v0/instances/${own1}/`, { key: host.apiKey, body: { state: 'stopped' } });
    const own2 = await rent(t(), host.apiKey, id);
    t().clock.advance(600_000);
    const balanceBefore = (await t().request('GET', '/api/v0/users/current', { key: host.apiKey })).body
      .balance;

    const r = await del(t(), host.apiKey, id);
    expect(r.status, r.raw).toBe(200);
    expect(r.body).toMatchObject({
      success: true,
      instances_destroyed: 2,
      msg: `Machine ${id} deleted: 2 instances of yours on it destroyed`,
    });
    for (const i of [own1, own2]) {
      const row = await instanceRow(t(), i);
      expect(Number(row.destroyed_at)).toBe(t().clock.now());
      expect(Number(row.billed_until)).toBe(t().clock.now());
    }
    // Ten minutes of the running one and its disk, and the stopped one's disk, were charged.
    const balanceAfter = (await t().request('GET', '/api/v0/users/current', { key: host.apiKey })).body
      .balance;
    expect(balanceAfter).toBeLessThan(balanceBefore);
    const m = await machineRow(t(), id);
    expect([m.rented, Number(m.disk_held_mb)]).toEqual([0, 0]);
    // The instances' own keys no longer work.
    const keys = await t()
      .deps.db.selectFrom('api_keys')
      .select(['instance_id', 'revoked_at'])
      .where('instance_id', 'in', [own1, own2])
      .execute();
    expect(keys.every((k) => k.revoked_at !== null)).toBe(true);

    // History: the client's charges, the host's earnings for the machine, the past instance row.
    const charges = await t()
      .deps.db.selectFrom('billing_ledger')
      .select('instance_id')
      .where('instance_id', '=', past)
      .execute();
    expect(charges.length).toBeGreaterThan(0);
    const day = Math.floor(t().clock.now() / 86_400_000);
    const e = await t().request(
      'GET',
      `/api/v0/users/me/machine-earnings?owner=me&sday=${day - 1}&eday=${day}`,
      {
        key: host.apiKey,
      },
    );
    const mine = e.body.per_machine.find((x: { machine_id: number }) => x.machine_id === id);
    expect(mine.earn).toBeGreaterThan(0);
    expect((await instanceRow(t(), past)).machine_id).toBe(id);
  });

  it('cancels its maintenance windows that have not ended; renters get no e-mail (none can be on it)', async () => {
    const id = await machine(t(), host.id);
    const sdate = Math.floor(t().clock.now() / 1000) + 3_600;
    for (const start of [sdate, sdate + 86_400]) {
      const s = await t().request('POST', '/api/v0/machines/maintenances/batch', {
        key: host.apiKey,
        body: { machine_ids: [id], sdate: start, duration: 2, maintenance_category: 'gpu' },
      });
      expect(s.status, s.raw).toBe(200);
    }
    const own = await rent(t(), host.apiKey, id);
    const mailsBefore = await t().deps.db.selectFrom('email_outbox').select('id').execute();
    const r = await del(t(), host.apiKey, id);
    expect(r.body).toMatchObject({
      success: true,
      instances_destroyed: 1,
      maintenances_cancelled: 2,
      msg: `Machine ${id} deleted: 1 instance of yours on it destroyed; 2 maintenance windows cancelled`,
    });
    const windows = await t()
      .deps.db.selectFrom('maintenance_windows')
      .select(['canceled_at'])
      .where('machine_id', '=', id)
      .execute();
    expect(windows.map((w) => Number(w.canceled_at))).toEqual([t().clock.now(), t().clock.now()]);
    expect((await machineRow(t(), id)).maint_until).toBeNull();
    const list = await t().request('GET', '/api/v0/machines/maintenances', { key: host.apiKey });
    expect(list.body.map((w: { machine_id: number }) => w.machine_id)).not.toContain(id);
    // The host's own instance was destroyed first, so no one is e-mailed about the cancellation.
    expect(await t().deps.db.selectFrom('email_outbox').select('id').execute()).toHaveLength(
      mailsBefore.length,
    );
    const events = await t()
      .deps.db.selectFrom('events')
      .select(['type', 'user_id'])
      .where('subject', '=', `machine:${id}`)
      .where('type', '=', 'maintenance.cancelled')
      .execute();
    expect(events).toEqual([
      { type: 'maintenance.cancelled', user_id: host.id },
      { type: 'maintenance.cancelled', user_id: host.id },
    ]);
    expect((await instanceRow(t(), own)).destroyed_at).not.toBeNull();
  });

  it("another host's machine and an unknown id are 404, and nothing changes", async () => {
    const other = await t().user();
    const id = await machine(t(), other.id);
    const r = await del(t(), host.apiKey, id);
    expect([r.status, r.body.error, r.body.msg]).toEqual([
      404,
      'not_found',
      'No such machine, or it is not yours',
    ]);
    expect((await machineRow(t(), id)).deleted_at).toBeNull();
    expect((await del(t(), host.apiKey, 987_654_321)).status).toBe(404);
    expect(
      (await t().request('POST', '/api/v0/machines/0/force_delete/', { key: host.apiKey, body: {} })).status,
    ).toBe(400);
  });

  it('needs a key (401) with machines write (403); an instance key is refused (403)', async () => {
    const id = await machine(t(), host.id);
    expect((await del(t(), null, id)).status).toBe(401);
    expect((await del(t(), 'or_nosuchkey', id)).status).toBe(401);
    const readOnly = await scopedKey(t(), host.apiKey, { machines: 'read' });
    const other = await scopedKey(t(), host.apiKey, { instances: 'write', maintenance: 'write' });
    for (const k of [readOnly, other, await scopedKey(t(), host.apiKey, 'read_only')]) {
      const r = await del(t(), k, id);
      expect([r.status, r.body.error]).toEqual([403, 'forbidden']);
    }
    const client = await renter(t());
    const other2 = await machine(t(), host.id);
    const c = await t().request('PUT', `/api/v0/asks/${other2}/`, {
      key: client.apiKey,
      body: { image: 'ubuntu:22.04', disk: 10 },
    });
    expect((await del(t(), c.body.instance_api_key, id)).status).toBe(403);
    expect((await machineRow(t(), id)).deleted_at).toBeNull();
    const w = await scopedKey(t(), host.apiKey, { machines: 'write' });
    expect((await del(t(), w, id)).status).toBe(200);
  });

  describe("the machine's agent", () => {
    const agentUid = 'agent-deleted-0001';
    let ids: number[];
    const register = () =>
      t().request('POST', '/api/agent/v1/register', {
        key: host.apiKey,
        body: {
          agent_uid: agentUid,
          version: 't',
          runtime: 'process',
          machines: [agentMachine(0), agentMachine(1)],
        },
      });
    beforeAll(async () => {
      const r = await register();
      expect(r.status, r.raw).toBe(200);
      ids = r.body.machines.map((m: { machine_id: number }) => m.machine_id);
      expect((await del(t(), host.apiKey, ids[0]!)).status).toBe(200);
    });

    it('is told at its next sync that the machine was deleted, and the machine is not marked alive', async () => {
      const s = await t().request('POST', '/api/agent/v1/sync', {
        key: host.apiKey,
        body: { agent_uid: agentUid, machine_ids: ids, instances: [] },
      });
      expect(s.status, s.raw).toBe(200);
      expect(s.body).toMatchObject({ unknown_machine_ids: [ids[0]], deleted_machine_ids: [ids[0]] });
      expect((await machineRow(t(), ids[0]!)).online_state).toBe('offline');
      // A live machine of the agent is not among them.
      const live = await t().request('POST', '/api/agent/v1/sync', {
        key: host.apiKey,
        body: { agent_uid: agentUid, machine_ids: [ids[1]], instances: [] },
      });
      expect(live.body).toMatchObject({ unknown_machine_ids: [], deleted_machine_ids: [] });
    });

    it('registering again gives the deleted machine back as deleted, untouched, and the other as before', async () => {
      const before = await machineRow(t(), ids[0]!);
      const r = await register();
      expect(r.status, r.raw).toBe(200);
      expect(r.body.machines).toEqual([{ slot: 1, machine_id: ids[1], verification: 'unverified' }]);
      expect(r.body.deleted_machines).toEqual([{ slot: 0, machine_id: ids[0] }]);
      expect(await machineRow(t(), ids[0]!)).toEqual(before);
    });

    it("another host's agent_uid is still a conflict", async () => {
      const stranger = await t().user();
      const r = await t().request('POST', '/api/agent/v1/register', {
        key: stranger.apiKey,
        body: { agent_uid: agentUid, version: 't', runtime: 'process', machines: [agentMachine(0)] },
      });
      expect([r.status, r.body.error]).toEqual([409, 'agent_conflict']);
    });
  });
});
