// What an agent measures of its instances (disk usage, GPU utilisation) through the sync: stored
// per instance, kept while reports leave it out, refused when out of range, and shown in the rows
// of the single-instance GET and both lists.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { agentMachine, renter } from '../../../../test/helpers/market.js';

const P = '/api/agent/v1';
const GB = 1e9;

describeEachDb('agent sync: disk usage and GPU utilisation', (dialect) => {
  const t = useTestApp(dialect);
  let n = 0;

  /** A registered agent with one machine and a renter's instance on it (created, not yet started). */
  async function setup(disk = 20) {
    const uid = `agent-usage-${String(++n).padStart(4, '0')}`;
    const host = await t().user();
    const reg = await t().request('POST', `${P}/register`, {
      key: host.apiKey,
      body: { agent_uid: uid, machines: [agentMachine(0)], price_gpu: 0.4 },
    });
    expect(reg.status).toBe(200);
    const mid = reg.body.machines[0].machine_id as number;
    const r = await renter(t());
    const created = await t().request('PUT', `/api/v0/asks/${mid}/`, {
      key: r.apiKey,
      body: { image: 'ubuntu', disk },
    });
    expect(created.status, created.raw).toBe(200);
    const id = created.body.new_contract as number;
    const sync = (instances: unknown[]) =>
      t().request('POST', `${P}/sync`, {
        key: host.apiKey,
        body: { agent_uid: uid, machine_ids: [mid], instances },
      });
    const row = async () => {
      const one = await t().request('GET', `/api/v0/instances/${id}/`, { key: r.apiKey });
      expect(one.status).toBe(200);
      return one.body.instances as Record<string, unknown>;
    };
    return { reg, id, sync, row, renterKey: r.apiKey };
  }

  const stored = (t: TestApp, id: number) =>
    t.deps.db
      .selectFrom('instances')
      .select(['disk_usage_bytes', 'gpu_util', 'actual_status'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();

  it('register says the server takes the fields; a fresh instance shows them null', async () => {
    const { reg, row } = await setup();
    expect(reg.body.usage_reports).toBe(true);
    expect(await row()).toMatchObject({ disk_usage: null, disk_util: null, gpu_util: null });
  });

  it('a report stores them with its status move; rows show GB, the fraction of disk_space and the percent', async () => {
    const { id, sync, row, renterKey } = await setup(20);
    const r = await sync([
      { id, state: 'running', ssh_port: 40022, disk_usage_bytes: 5_000_000_000, gpu_util: 37.5 },
    ]);
    expect(r.status, r.raw).toBe(200);
    expect(await stored(t(), id)).toEqual({
      disk_usage_bytes: 5_000_000_000,
      gpu_util: 37.5,
      actual_status: 'running',
    });
    const one = await row();
    expect(one.disk_usage).toBeCloseTo(5, 9);
    expect(one.disk_util).toBeCloseTo(0.25, 9);
    expect(one.gpu_util).toBe(37.5);
    // The v0 list and the v1 page carry the same.
    const v0 = await t().request('GET', '/api/v0/instances/', { key: renterKey });
    const v1 = await t().request('GET', '/api/v1/instances/', { key: renterKey });
    for (const list of [v0.body.instances, v1.body.instances]) {
      const x = (list as { id: number }[]).find((i) => i.id === id);
      expect(x).toMatchObject({ disk_usage: one.disk_usage, disk_util: one.disk_util, gpu_util: 37.5 });
    }
  });

  it('the usual heartbeat (no status change) writes new values; one without them keeps the stored ones', async () => {
    const { id, sync, row } = await setup(10);
    await sync([{ id, state: 'running', ssh_port: 40022 }]);
    expect(await stored(t(), id)).toMatchObject({ disk_usage_bytes: null, gpu_util: null });
    await sync([{ id, state: 'running', ssh_port: 40022, disk_usage_bytes: 2 * GB, gpu_util: 10 }]);
    expect(await stored(t(), id)).toMatchObject({ disk_usage_bytes: 2 * GB, gpu_util: 10 });
    // An older agent (or one between two measurements of the disk) leaves them out.
    await sync([{ id, state: 'running', ssh_port: 40022 }]);
    await sync([{ id, state: 'running', ssh_port: 40022, gpu_util: 90 }]);
    expect(await stored(t(), id)).toMatchObject({ disk_usage_bytes: 2 * GB, gpu_util: 90 });
    expect(await row()).toMatchObject({ disk_util: 0.2, gpu_util: 90 });
    // null is a value: the GPU figure is no longer known.
    await sync([{ id, state: 'running', ssh_port: 40022, gpu_util: null }]);
    expect(await stored(t(), id)).toMatchObject({ disk_usage_bytes: 2 * GB, gpu_util: null });
  });

  it('many instances in one sync are written together, each with its own values', async () => {
    const a = await setup(10);
    // A second instance on another machine of its own agent, and the first agent's report of it
    // (not its own) changes nothing.
    const b = await setup(10);
    await a.sync([{ id: a.id, state: 'running', ssh_port: 40022 }]);
    await b.sync([{ id: b.id, state: 'running', ssh_port: 40023 }]);
    await a.sync([
      { id: a.id, state: 'running', ssh_port: 40022, disk_usage_bytes: 1 * GB, gpu_util: 5 },
      { id: b.id, state: 'running', ssh_port: 40023, disk_usage_bytes: 9 * GB, gpu_util: 99 },
    ]);
    expect(await stored(t(), a.id)).toMatchObject({ disk_usage_bytes: 1 * GB, gpu_util: 5 });
    expect(await stored(t(), b.id)).toMatchObject({ disk_usage_bytes: null, gpu_util: null });
    await b.sync([
      { id: b.id, state: 'running', ssh_port: 40023, disk_usage_bytes: 3 * GB },
      { id: a.id, state: 'running', ssh_port: 40022, disk_usage_bytes: 7 * GB },
    ]);
    expect(await stored(t(), a.id)).toMatchObject({ disk_usage_bytes: 1 * GB, gpu_util: 5 });
    expect(await stored(t(), b.id)).toMatchObject({ disk_usage_bytes: 3 * GB, gpu_util: null });
  });

  it('a stopped instance keeps showing its disk usage, not its GPU utilisation', async () => {
    const { id, sync, row, renterKey } = await setup(10);
    await sync([{ id, state: 'running', ssh_port: 40022, disk_usage_bytes: 4 * GB, gpu_util: 50 }]);
    const stop = await t().request('PUT', `/api/v0/instances/${id}/`, {
      key: renterKey,
      body: { state: 'stopped' },
    });
    expect(stop.status).toBe(200);
    // The agent stopped it; this report's measurement rides on the status move.
    await sync([{ id, state: 'stopped', disk_usage_bytes: 4.5 * GB }]);
    expect(await stored(t(), id)).toEqual({
      disk_usage_bytes: 4.5 * GB,
      gpu_util: 50,
      actual_status: 'stopped',
    });
    expect(await row()).toMatchObject({ actual_status: 'stopped', disk_usage: 4.5, gpu_util: null });
  });

  it('disk_util is null for an instance without disk', async () => {
    const { id, sync, row } = await setup(10);
    await t().deps.db.updateTable('instances').set({ disk: 0 }).where('id', '=', id).execute();
    await sync([{ id, state: 'running', ssh_port: 40022, disk_usage_bytes: 123_456_789 }]);
    expect(await row()).toMatchObject({ disk_usage: 0.123456789, disk_util: null });
  });

  it('refuses out-of-range measurements with 400 and leaves the row alone', async () => {
    const { id, sync } = await setup(10);
    await sync([{ id, state: 'running', ssh_port: 40022, disk_usage_bytes: GB, gpu_util: 1 }]);
    const bad: Record<string, unknown>[] = [
      { disk_usage_bytes: -1 },
      { disk_usage_bytes: 1.5 },
      { disk_usage_bytes: 2e15 },
      { disk_usage_bytes: '100' },
      { gpu_util: -0.1 },
      { gpu_util: 100.5 },
      { gpu_util: 'NaN' },
    ];
    for (const b of bad) {
      const r = await sync([{ id, state: 'running', ssh_port: 40022, ...b }]);
      expect(r.status, JSON.stringify(b)).toBe(400);
      expect(r.body.error).toBeTypeOf('string');
      expect(r.body.msg, JSON.stringify(b)).toMatch(Object.keys(b)[0]!);
    }
    expect(await stored(t(), id)).toMatchObject({ disk_usage_bytes: GB, gpu_util: 1 });
    // Why an agent asks first (usage_reports): a field the server does not know is refused too.
    const unknown = await sync([{ id, state: 'running', ssh_port: 40022, cpu_util: 3 }]);
    expect(unknown.status).toBe(400);
  });
});
