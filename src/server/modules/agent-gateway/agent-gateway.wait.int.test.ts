// POST wait, the agent's long poll: held until something is queued for one of the agent's own
// machines (a client's logs or command request of one of their instances), answered `wake` at
// once then; at once too when a pending request is newer than the agent's cursor; `wake: false`
// at its timeout; never woken by another host's machines; ended when the server closes.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { makeTestApp, useTestApp, type TestApp } from '../../../../test/helpers/app.js';

const P = '/api/agent/v1';
const hw = (slot: number) => ({
  slot,
  hostname: `h${slot}`,
  gpu_name: 'RTX 4090',
  num_gpus: 1,
  gpu_ram: 24564,
  cpu_ram: 64000,
  disk_space: 500,
});

let n = 0;
/** A host whose agent registered one machine, with a running instance of a renter on it. */
async function hostWithInstance(t: TestApp) {
  const host = await t.user();
  const renter = await t.user();
  const agentUid = `agent-wait-${++n}-${Date.now()}`;
  const reg = await t.request('POST', `${P}/register`, {
    key: host.apiKey,
    body: { agent_uid: agentUid, machines: [hw(0)] },
  });
  expect(reg.status, reg.raw).toBe(200);
  expect(reg.body.long_polls).toBe(true);
  const machineId = reg.body.machines[0].machine_id as number;
  const now = t.clock.now();
  const inst = await t.deps.db
    .insertInto('instances')
    .values({
      machine_id: machineId,
      user_id: renter.id,
      team_id: null,
      image: 'ubuntu',
      disk: 10,
      onstart: '',
      env: '{}',
      label: '',
      runtype: 'ssh',
      args: null,
      is_bid: 0,
      dph_compute: 0.5,
      dph_disk: 0.01,
      intended_status: 'running',
      actual_status: 'running',
      status_msg: '',
      ssh_host: null,
      ssh_port: null,
      ports: '{}',
      start_date: now,
      created_at: now,
      destroyed_at: null,
      accrued_micros: 0,
      billed_until: now,
      image_login_enc: null,
      extra: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const wait = (body: Record<string, unknown> = {}) =>
    t.request('POST', `${P}/wait`, {
      key: host.apiKey,
      body: { agent_uid: agentUid, machine_ids: [machineId], ...body },
    });
  const askLogs = () =>
    t.request('PUT', `/api/v0/instances/request_logs/${inst.id}/`, {
      key: renter.apiKey,
      body: { tail: '10' },
    });
  return { host, renter, agentUid, machineId, instanceId: inst.id, wait, askLogs };
}

/** Settles `p` or says it is still held after `ms`. */
const within = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<'held'>((r) => setTimeout(() => r('held'), ms))]);

describeEachDb('agent wait (long poll)', (dialect) => {
  const t = useTestApp(dialect);

  it("is held until a client's request of one of its instances, then answers wake at once", async () => {
    const a = await hostWithInstance(t());
    const held = a.wait({ timeout_s: 20 });
    expect(await within(held, 300)).toBe('held');
    const t0 = Date.now();
    expect((await a.askLogs()).status).toBe(200);
    const r = await held;
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, wake: true });
    expect(Date.now() - t0).toBeLessThan(1000);

    // A command request wakes it the same way.
    const again = a.wait({ timeout_s: 20, after_request_id: 1e9 });
    expect(await within(again, 200)).toBe('held');
    const cmd = await t().request('PUT', `/api/v0/instances/command/${a.instanceId}/`, {
      key: a.renter.apiKey,
      body: { command: 'ls -l /root' },
    });
    expect(cmd.status, cmd.raw).toBe(200);
    expect((await again).body.wake).toBe(true);
  });

  it('answers at once while a pending request is newer than the cursor, and holds once it is not', async () => {
    const a = await hostWithInstance(t());
    expect((await a.askLogs()).status).toBe(200);
    const req = await t()
      .deps.db.selectFrom('instance_requests')
      .select('id')
      .where('instance_id', '=', a.instanceId)
      .executeTakeFirstOrThrow();
    const fresh = await within(a.wait({ timeout_s: 20, after_request_id: req.id - 1 }), 1000);
    expect(fresh !== 'held' && fresh.body.wake).toBe(true);
    // Handed over already (the cursor is at it): held, then runs out with wake false.
    const t0 = Date.now();
    const seen = await a.wait({ timeout_s: 1, after_request_id: req.id });
    expect(seen.body).toEqual({ success: true, wake: false });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
  });

  it("is not woken by another host's machine, nor by a machine it names that is not its own", async () => {
    const a = await hostWithInstance(t());
    const b = await hostWithInstance(t());
    // Agent a names b's machine too: it is not a's, so b's requests do not wake a.
    const held = t().request('POST', `${P}/wait`, {
      key: a.host.apiKey,
      body: { agent_uid: a.agentUid, machine_ids: [a.machineId, b.machineId], timeout_s: 2 },
    });
    const bHeld = b.wait({ timeout_s: 20 });
    expect((await b.askLogs()).status).toBe(200);
    expect((await bHeld).body.wake).toBe(true);
    expect((await held).body.wake).toBe(false);
  });

  it('refuses a body the protocol does not describe, with 400', async () => {
    const a = await hostWithInstance(t());
    for (const body of [{ timeout_s: 0 }, { timeout_s: 301 }, { after_request_id: -1 }, { surprise: 1 }]) {
      const r = await a.wait(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
    }
  });

  it("ends every held wait (wake false) when the server closes, not at the wait's timeout", async () => {
    const own = await makeTestApp(dialect);
    try {
      const a = await hostWithInstance(own);
      const t0 = Date.now();
      const held = a.wait({ timeout_s: 300 });
      expect(await within(held, 300)).toBe('held');
      expect(own.deps.agentWake.held).toBe(1);
      await own.app.close();
      expect((await held).body).toEqual({ success: true, wake: false });
      expect(Date.now() - t0).toBeLessThan(5000);
    } finally {
      await own.db.cleanup();
    }
  });
});
