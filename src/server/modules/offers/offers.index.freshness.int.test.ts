// The offer index is exactly as fresh as the database: after a machine changes through
// the normal service paths the very next search shows it; heartbeats do not bump row_version; on
// PostgreSQL, transactions that commit out of sequence order are both picked up.
import { expect, it } from 'vitest';
import pg from 'pg';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { offers, renter } from '../../../../test/helpers/market.js';
import { insertMachines } from '../machines/machines.service.js';
import { setMachinesOffline, touchMachines } from '../agent-gateway/agent-gateway.repo.js';
import { sweepHeartbeats } from '../../jobs/heartbeat-sweep.js';
import { compileSearch } from './offers.filter.js';
import { OfferIndex } from './offers.index.js';

const A = '/api/agent/v1';

describeEachDb('offer index freshness', (dialect) => {
  const t = useTestApp(dialect, {
    OPENRIG_UNKNOWN_AFTER_S: '60',
    OPENRIG_OFFLINE_AFTER_S: '300',
    OPENRIG_HEARTBEAT_S: '10',
  });
  const search = async (key: string, body: unknown) => {
    const r = await t().request('POST', '/api/v0/bundles/', { key, body });
    expect(r.status).toBe(200);
    return r.body.offers as { id: number; disk_space: number; online: boolean; rentable: boolean }[];
  };
  const version = async (id: number) =>
    Number(
      (
        await t()
          .deps.db.selectFrom('machines')
          .select('row_version')
          .where('id', '=', id)
          .executeTakeFirstOrThrow()
      ).row_version,
    );

  it('shows an instance create, stop and destroy at the very next search', async () => {
    const u = await renter(t());
    const [m] = await offers(t(), 1);
    expect((await search(u.apiKey, { id: { eq: m } })).map((o) => o.id)).toEqual([m]);
    const created = await t().request('PUT', `/api/v0/asks/${m}/`, {
      key: u.apiKey,
      body: { image: 'ubuntu', disk: 20 },
    });
    expect(created.status).toBe(200);
    const iid = created.body.new_contract as number;
    expect(await search(u.apiKey, { id: { eq: m } })).toEqual([]);
    expect((await search(u.apiKey, { id: { eq: m }, rented: { eq: true } })).map((o) => o.id)).toEqual([m]);
    // Stopped: the machine is free again, less the disk the stopped instance keeps.
    expect(
      (await t().request('PUT', `/api/v0/instances/${iid}/`, { key: u.apiKey, body: { state: 'stopped' } }))
        .status,
    ).toBe(200);
    const stopped = await search(u.apiKey, { id: { eq: m } });
    expect(stopped.map((o) => [o.id, o.disk_space])).toEqual([[m, 480]]);
    expect((await t().request('DELETE', `/api/v0/instances/${iid}/`, { key: u.apiKey })).status).toBe(200);
    expect((await search(u.apiKey, { id: { eq: m } })).map((o) => [o.id, o.disk_space])).toEqual([[m, 500]]);
  });

  it("shows a host's unlist and relist at the very next search", async () => {
    const host = await t().user();
    const [m] = await insertMachines(
      t().deps.db,
      [{ hostId: host.id, gpuName: 'L40S', numGpus: 1 }],
      t().clock.now(),
    );
    expect((await search(host.apiKey, { id: { eq: m } })).map((o) => o.id)).toEqual([m]);
    expect((await t().request('PUT', `/api/v0/machines/${m}/unlist/`, { key: host.apiKey })).status).toBe(
      200,
    );
    expect(await search(host.apiKey, { id: { eq: m } })).toEqual([]);
    expect((await search(host.apiKey, { id: { eq: m }, listed: { eq: false } })).map((o) => o.id)).toEqual([
      m,
    ]);
    expect(
      (
        await t().request('PUT', `/api/v0/machines/${m}/list/`, {
          key: host.apiKey,
          body: { price_gpu: 0.9 },
        })
      ).status,
    ).toBe(200);
    expect((await search(host.apiKey, { id: { eq: m }, dph_base: { eq: 0.9 } })).map((o) => o.id)).toEqual([
      m,
    ]);
  });

  it('shows an agent going offline through the heartbeat sweep at the very next search', async () => {
    const host = await t().user();
    const hw = {
      slot: 0,
      hostname: 'h0',
      gpu_name: 'RTX 3090',
      num_gpus: 2,
      gpu_ram: 24576,
      cpu_ram: 64000,
      disk_space: 500,
    };
    const reg = await t().request('POST', `${A}/register`, {
      key: host.apiKey,
      body: { agent_uid: 'agent-fresh-001', price_gpu: 0.3, machines: [hw] },
    });
    expect(reg.status).toBe(200);
    const m = reg.body.machines[0].machine_id as number;
    const rentable = { id: { eq: m }, rentable: { eq: true } };
    expect((await search(host.apiKey, rentable)).map((o) => [o.id, o.online])).toEqual([[m, true]]);
    t().clock.advance(301_000);
    expect((await sweepHeartbeats(t().deps)).machinesOffline).toBeGreaterThanOrEqual(1);
    expect(await search(host.apiKey, rentable)).toEqual([]);
    expect(
      (await search(host.apiKey, { id: { eq: m }, rentable: { eq: false } })).map((o) => [
        o.id,
        o.online,
        o.rentable,
      ]),
    ).toEqual([[m, false, false]]);
  });

  it('does not bump row_version on a heartbeat, and does on offline and back online', async () => {
    const host = await t().user();
    const hw = {
      slot: 0,
      hostname: 'h0',
      gpu_name: 'RTX 4090',
      num_gpus: 1,
      gpu_ram: 24564,
      cpu_ram: 64000,
      disk_space: 500,
    };
    const uid = 'agent-fresh-002';
    const reg = await t().request('POST', `${A}/register`, {
      key: host.apiKey,
      body: { agent_uid: uid, machines: [hw] },
    });
    const m = reg.body.machines[0].machine_id as number;
    const v0 = await version(m);
    const beat = t().clock.now() + 10_000;
    expect(await touchMachines(t().deps.db, host.id, uid, [m], beat)).toEqual([m]);
    const row = await t()
      .deps.db.selectFrom('machines')
      .select(['last_heartbeat_at', 'row_version'])
      .where('id', '=', m)
      .executeTakeFirstOrThrow();
    expect(Number(row.last_heartbeat_at)).toBe(beat);
    expect(Number(row.row_version)).toBe(v0);
    await setMachinesOffline(t().deps.db, host.id, uid, [m]);
    const v1 = await version(m);
    expect(v1).toBeGreaterThan(v0);
    await touchMachines(t().deps.db, host.id, uid, [m], beat + 10_000);
    expect(await version(m)).toBeGreaterThan(v1);
  });

  it('serves a search that starts after a commit from a read that started after it, even while another read is under way', async () => {
    const host = await t().user();
    const ids = await insertMachines(
      t().deps.db,
      [{ hostId: host.id, gpuName: 'A40', numGpus: 1 }],
      t().clock.now(),
    );
    const index = new OfferIndex(t().deps.store);
    await index.sync();
    const plan = compileSearch({ id: { eq: ids[0] } });
    for (let i = 0; i < 20; i++) {
      const before = index.sync(); // under way while the write commits
      await t()
        .deps.db.updateTable('machines')
        .set({ listed: i % 2 })
        .where('id', '=', ids[0]!)
        .execute();
      await index.sync();
      expect(index.search(plan, t().clock.now()).length, `round ${i}`).toBe(i % 2);
      await before;
    }
  });

  if (dialect === 'postgres') {
    it('picks up two transactions that commit out of sequence order', async () => {
      const host = await t().user();
      const [m1, m2] = await insertMachines(
        t().deps.db,
        [
          { hostId: host.id, gpuName: 'OOO', numGpus: 1 },
          { hostId: host.id, gpuName: 'OOO', numGpus: 1 },
        ],
        t().clock.now(),
      );
      const index = new OfferIndex(t().deps.store);
      await index.sync();
      const shown = () =>
        index.search(compileSearch({ gpu_name: { eq: 'OOO' } }), t().clock.now()).map((r) => r.id);
      expect(shown()).toEqual([m1, m2]);
      const a = new pg.Client({ connectionString: t().db.url });
      const b = new pg.Client({ connectionString: t().db.url });
      await a.connect();
      await b.connect();
      try {
        await a.query('BEGIN');
        await a.query('UPDATE machines SET listed = 0 WHERE id = $1', [m1]);
        await b.query('BEGIN');
        await b.query('UPDATE machines SET listed = 0 WHERE id = $1', [m2]);
        await b.query('COMMIT');
        await index.sync();
        expect(shown()).toEqual([m1]);
        await a.query('COMMIT');
        // A took its version first and committed last: "versions above the last seen" would miss it.
        expect(await version(m1!)).toBeLessThan(await version(m2!));
        await index.sync();
        expect(shown()).toEqual([]);
      } finally {
        await a.end();
        await b.end();
      }
    });
  }
});
