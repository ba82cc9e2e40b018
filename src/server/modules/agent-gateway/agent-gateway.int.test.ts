// The agent protocol against a real database: registration upserts,
// reports moved by the state machine, container keys, heartbeat sweeps and clean shutdown.
import { describe, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { turnsDuring } from '../../../../test/helpers/turns.js';
import { sweepHeartbeats } from '../../jobs/heartbeat-sweep.js';
import { resolveCredential } from '../../http/auth.js';

const P = '/api/agent/v1';
const hw = (slot: number, gpu = 'RTX 4090', n = 2) => ({
  slot,
  hostname: `h${slot}`,
  gpu_name: gpu,
  num_gpus: n,
  gpu_ram: 24564,
  cpu_ram: 64000,
  disk_space: 500,
});
const PUB = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl renter@laptop';

async function newInstance(
  t: TestApp,
  machineId: number,
  userId: number,
  over: Record<string, unknown> = {},
): Promise<number> {
  const now = t.clock.now();
  const row = await t.deps.db
    .insertInto('instances')
    .values({
      machine_id: machineId,
      user_id: userId,
      team_id: null,
      image: 'pytorch/pytorch',
      disk: 10,
      onstart: 'echo hi',
      env: JSON.stringify({ FOO: 'bar', '-p 8080:8080': '1', N: 3 }),
      label: '',
      runtype: 'ssh',
      args: null,
      is_bid: 0,
      dph_compute: 0.8,
      dph_disk: 0.01,
      intended_status: 'running',
      actual_status: null,
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
      ...over,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  // As creation does: the instance accepts the account's keys of this moment.
  const keys = await t.deps.db
    .selectFrom('ssh_keys')
    .select(['id', 'public_key', 'fingerprint'])
    .where('user_id', '=', userId)
    .where('instance_id', 'is', null)
    .where('deleted_at', 'is', null)
    .execute();
  for (const k of keys)
    await t.deps.db
      .insertInto('instance_ssh_keys')
      .values({
        instance_id: row.id,
        ssh_key_id: k.id,
        public_key: k.public_key,
        fingerprint: k.fingerprint,
        created_at: now,
      })
      .execute();
  return row.id;
}

const inst = (t: TestApp, id: number) =>
  t.deps.db.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

describeEachDb('agent gateway', (dialect) => {
  const t = useTestApp(dialect, {
    OPENRIG_UNKNOWN_AFTER_S: '60',
    OPENRIG_OFFLINE_AFTER_S: '300',
    OPENRIG_HEARTBEAT_S: '10',
  });

  describe('register', () => {
    it('upserts one machine per (agent_uid, slot), lists it at the per-GPU price, and refuses the uid to another host', async () => {
      const host = await t().user();
      const body = {
        agent_uid: 'agent-aaaa-0001',
        machines: [hw(0), hw(1, 'RTX 3090', 1)],
        price_gpu: 0.4,
        price_disk: 0.1,
      };
      const r1 = await t().request('POST', `${P}/register`, { key: host.apiKey, body });
      expect(r1.status).toBe(200);
      expect(r1.body).toMatchObject({
        success: true,
        heartbeat_s: 10,
        unknown_after_s: 60,
        offline_after_s: 300,
      });
      const ids = r1.body.machines.map((m: { machine_id: number }) => m.machine_id);
      expect(ids).toHaveLength(2);
      const r2 = await t().request('POST', `${P}/register`, {
        key: host.apiKey,
        body: { ...body, price_gpu: undefined },
      });
      expect(r2.body.machines.map((m: { machine_id: number }) => m.machine_id)).toEqual(ids);
      const m = await t()
        .deps.db.selectFrom('machines')
        .selectAll()
        .where('id', '=', ids[0])
        .executeTakeFirstOrThrow();
      expect(m).toMatchObject({
        host_id: host.id,
        gpu_name: 'RTX 4090',
        num_gpus: 2,
        listed: 1,
        price_gpu_dph: 0.4,
        price_disk_gb_month: 0.1,
        online_state: 'online',
      });
      const other = await t().user();
      const r3 = await t().request('POST', `${P}/register`, { key: other.apiKey, body });
      expect(r3.status).toBe(409);
      expect(r3.body.error).toBe('agent_conflict');
      const still = await t()
        .deps.db.selectFrom('machines')
        .select('host_id')
        .where('id', '=', ids[0])
        .executeTakeFirstOrThrow();
      expect(still.host_id).toBe(host.id);
      // All or nothing: a new slot beside a refused one is not left behind.
      const r4 = await t().request('POST', `${P}/register`, {
        key: other.apiKey,
        body: { ...body, machines: [hw(7), hw(0)] },
      });
      expect(r4.status).toBe(409);
      const slot7 = await t()
        .deps.db.selectFrom('machines')
        .select('id')
        .where('agent_uid', '=', body.agent_uid)
        .where('agent_slot', '=', 7)
        .execute();
      expect(slot7).toEqual([]);
    });

    it('refuses bad bodies with 400 and a key without the machines scope with 403', async () => {
      const host = await t().user();
      const bad = await t().request('POST', `${P}/register`, {
        key: host.apiKey,
        body: { agent_uid: 'x', machines: [] },
      });
      expect(bad.status).toBe(400);
      expect(bad.body).toHaveProperty('msg');
      const dup = await t().request('POST', `${P}/register`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-dup-0001', machines: [hw(0), hw(0)] },
      });
      expect(dup.status).toBe(400);
      const k = await t().request('POST', '/api/v0/auth/apikeys/', {
        key: host.apiKey,
        body: { name: 'ro', permissions: { offers: 'read' } },
      });
      const key = k.body.key ?? k.body.api_key;
      const r = await t().request('POST', `${P}/register`, {
        key,
        body: { agent_uid: 'agent-scope-01', machines: [hw(0)] },
      });
      expect(r.status).toBe(403);
      const none = await t().request('POST', `${P}/sync`, {
        body: { agent_uid: 'agent-scope-01', machine_ids: [], instances: [] },
      });
      expect(none.status).toBe(401);
    });

    it('takes answers larger than the server-wide body limit (log output of several MB); other agent calls keep that limit', async () => {
      const host = await t().user();
      const reg = await t().request('POST', `${P}/register`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-biglog-01', machines: [hw(0)] },
      });
      const mid = reg.body.machines[0].machine_id;
      const output = 'x'.repeat(2 * 1024 * 1024);
      const big = await t().request('POST', `${P}/results`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-biglog-01', machine_ids: [mid], results: [{ id: 1, ok: true, output }] },
      });
      expect(big.status).toBe(200);
      const sync = await t().request('POST', `${P}/sync`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-biglog-01', machine_ids: [mid], instances: [], pad: output },
      });
      expect(sync.status).toBe(413);
    });
  });

  describe('authorized-keys', () => {
    it("answers an instance's current keys to its host only, none once detached or destroyed, and refuses a body without an id", async () => {
      const host = await t().user();
      const other = await t().user();
      const renter = await t().user();
      await t().request('POST', '/api/v0/ssh/', { key: renter.apiKey, body: { ssh_key: PUB } });
      const reg = await t().request('POST', `${P}/register`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-keys-0001', machines: [hw(0)] },
      });
      const id = await newInstance(t(), reg.body.machines[0].machine_id, renter.id);
      const ask = (key: string, body: unknown) => t().request('POST', `${P}/authorized-keys`, { key, body });

      expect((await ask(host.apiKey, { instance_id: id })).body).toEqual({ authorized_keys: [PUB] });
      expect((await ask(other.apiKey, { instance_id: id })).body).toEqual({ authorized_keys: [] });
      expect((await ask(host.apiKey, {})).status).toBe(400);
      expect((await ask(host.apiKey, { instance_id: 'x' })).status).toBe(400);
      // Past the 64-bit ids of the databases: a 400, never the database's overflow error.
      const huge = await ask(host.apiKey, { instance_id: 1e19 });
      expect(huge.status).toBe(400);
      expect(huge.body.error).toBe('bad_request');
      const hugeSync = await t().request('POST', `${P}/sync`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-keys-0001', machine_ids: [2 ** 63], instances: [] },
      });
      expect(hugeSync.status).toBe(400);

      const keyId = (await t().request('GET', '/api/v0/ssh/', { key: renter.apiKey })).body.ssh_keys[0].id;
      const det = await t().request('DELETE', `/api/v0/instances/${id}/ssh/${keyId}/`, {
        key: renter.apiKey,
        body: {},
      });
      expect(det.status).toBe(200);
      expect((await ask(host.apiKey, { instance_id: id })).body).toEqual({ authorized_keys: [] });

      await t().request('POST', `/api/v0/instances/${id}/ssh/`, {
        key: renter.apiKey,
        body: { ssh_key: PUB },
      });
      expect((await ask(host.apiKey, { instance_id: id })).body).toEqual({ authorized_keys: [PUB] });
      await t()
        .deps.db.updateTable('instances')
        .set({ destroyed_at: t().clock.now() })
        .where('id', '=', id)
        .execute();
      expect((await ask(host.apiKey, { instance_id: id })).body).toEqual({ authorized_keys: [] });
    });
  });

  describe('sync', () => {
    it('hands out the instance with env, keys and a working container key, and moves it by reports', async () => {
      const host = await t().user();
      const renter = await t().user();
      await t().request('POST', '/api/v0/ssh/', { key: renter.apiKey, body: { ssh_key: PUB } });
      const reg = await t().request('POST', `${P}/register`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-sync-0001', machines: [hw(0)] },
      });
      const mid = reg.body.machines[0].machine_id;
      const id = await newInstance(t(), mid, renter.id);
      const sync = (instances: unknown[]) =>
        t().request('POST', `${P}/sync`, {
          key: host.apiKey,
          body: { agent_uid: 'agent-sync-0001', machine_ids: [mid], instances },
        });

      const s1 = await sync([]);
      expect(s1.status).toBe(200);
      expect(s1.body.unknown_machine_ids).toEqual([]);
      const d = s1.body.instances.find((i: { id: number }) => i.id === id);
      expect(d).toMatchObject({
        id,
        machine_id: mid,
        desired: 'running',
        image: 'pytorch/pytorch',
        onstart: 'echo hi',
        env: { FOO: 'bar', N: '3' },
      });
      expect(d.authorized_keys).toEqual([PUB]);
      expect(d.actual_status).toBeNull();
      expect(d.container_api_key).toMatch(/^ori_/);
      const auth = await resolveCredential(t().deps, d.container_api_key);
      expect(auth).toMatchObject({ via: 'instance_key', instanceId: id });
      const s2 = await sync([]);
      expect(s2.body.instances[0].container_api_key).toBe(d.container_api_key); // sealed once

      await sync([{ id, state: 'loading', status_msg: 'preparing' }]);
      expect(await inst(t(), id)).toMatchObject({ actual_status: 'loading', agent_state: 'loading' });
      await sync([{ id, state: 'running' }]); // no port: not running yet
      expect((await inst(t(), id)).actual_status).toBe('loading');
      await sync([{ id, state: 'running', ssh_port: 41022, status_msg: 'ok' }]);
      const row = await inst(t(), id);
      expect(row).toMatchObject({
        actual_status: 'running',
        ssh_host: t().config.publicHost,
        ssh_port: 41022,
      });
      expect(JSON.parse(row.ports)).toEqual({ '22/tcp': [{ HostIp: '0.0.0.0', HostPort: '41022' }] });

      // Stopped, then started by the client: a start that finished between two syncs is reported
      // `running` straight away, and passes through loading.
      await t()
        .deps.db.updateTable('instances')
        .set({ actual_status: 'stopped', intended_status: 'running' })
        .where('id', '=', id)
        .execute();
      await sync([{ id, state: 'running', ssh_port: 41023 }]);
      expect(await inst(t(), id)).toMatchObject({ actual_status: 'running', ssh_port: 41023 });
      // But a stop the client asked for is not undone by a late `running`.
      await t()
        .deps.db.updateTable('instances')
        .set({ actual_status: 'stopped', intended_status: 'stopped' })
        .where('id', '=', id)
        .execute();
      await sync([{ id, state: 'running', ssh_port: 41023 }]);
      expect((await inst(t(), id)).actual_status).toBe('stopped');

      // The agent registers again with a public host: running instances report it as ssh_host.
      const again = await t().request('POST', `${P}/register`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-sync-0001', public_host: '203.0.113.7', machines: [hw(0)] },
      });
      expect(again.body.machines[0].machine_id).toBe(mid);
      await t()
        .deps.db.updateTable('instances')
        .set({ actual_status: 'running', intended_status: 'running' })
        .where('id', '=', id)
        .execute();
      await sync([{ id, state: 'running', ssh_port: 41023 }]);
      expect(await inst(t(), id)).toMatchObject({ ssh_host: '203.0.113.7', ssh_port: 41023 });
      const view = await t().request('GET', `/api/v0/instances/${id}/`, { key: renter.apiKey });
      expect(view.body.instances.public_ipaddr).toBe('203.0.113.7');
      const bad = await t().request('POST', `${P}/register`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-sync-0001', public_host: 'a b;c', machines: [hw(0)] },
      });
      expect(bad.status).toBe(400);

      await t()
        .deps.db.updateTable('instances')
        .set({ destroyed_at: t().clock.now() })
        .where('id', '=', id)
        .execute();
      const s3 = await sync([{ id, state: 'running', ssh_port: 41022 }]);
      expect(s3.body.instances).toEqual([
        expect.objectContaining({ id, desired: 'destroyed', container_api_key: null }),
      ]);
      const s4 = await sync([{ id: 999999, state: 'running', ssh_port: 1 }]);
      expect(s4.body.instances).toEqual([expect.objectContaining({ id: 999999, desired: 'destroyed' })]);
    });

    it('a client start of an exited instance goes back to null; the stale exited report does not undo it; the agent restarts it', async () => {
      const host = await t().user();
      const renter = await t().user();
      const reg = await t().request('POST', `${P}/register`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-restart-01', machines: [hw(0)] },
      });
      const mid = reg.body.machines[0].machine_id;
      const id = await newInstance(t(), mid, renter.id, { env: JSON.stringify({ FOO: 'bar' }) });
      const sync = (instances: unknown[]) =>
        t().request('POST', `${P}/sync`, {
          key: host.apiKey,
          body: { agent_uid: 'agent-restart-01', machine_ids: [mid], instances },
        });
      await sync([{ id, state: 'running', ssh_port: 41030 }]);
      const dead = { id, state: 'exited', status_msg: 'main process exited (signal SIGKILL)' };
      await sync([dead]);
      expect(await inst(t(), id)).toMatchObject({
        actual_status: 'exited',
        intended_status: 'running',
        status_msg: dead.status_msg,
      });
      // A late `running` does not bring it back by itself.
      await sync([{ id, state: 'running', ssh_port: 41030 }]);
      expect((await inst(t(), id)).actual_status).toBe('exited');
      await sync([dead]); // what the agent keeps saying while the instance is dead
      expect((await inst(t(), id)).agent_state).toBe('exited');

      const put = await t().request('PUT', `/api/v0/instances/${id}/`, {
        key: renter.apiKey,
        body: { state: 'running' },
      });
      expect(put.status).toBe(200);
      expect(await inst(t(), id)).toMatchObject({
        actual_status: null,
        intended_status: 'running',
        status_msg: 'Start requested',
      });
      const view = await t().request('GET', `/api/v0/instances/${id}/`, { key: renter.apiKey });
      const shown = view.body.instances;
      expect(shown.actual_status).toBeNull();
      expect(shown.intended_status).toBe('running');
      // The agent has not seen the answer yet and still says exited: that changes nothing, and the
      // answer tells it to run the instance the server shows null (the agent's restart signal).
      const s1 = await sync([dead]);
      expect((await inst(t(), id)).actual_status).toBeNull();
      expect(s1.body.instances.find((i: { id: number }) => i.id === id)).toMatchObject({
        desired: 'running',
        actual_status: null,
      });
      await sync([{ id, state: 'loading', status_msg: 'preparing the instance' }]);
      expect((await inst(t(), id)).actual_status).toBe('loading');
      await sync([{ id, state: 'running', ssh_port: 41031 }]);
      expect(await inst(t(), id)).toMatchObject({ actual_status: 'running', ssh_port: 41031 });

      // Crashes again; started again; this time the restart itself fails: announced as loading
      // first, its `exited` lands.
      await sync([dead]);
      await t().request('PUT', `/api/v0/instances/${id}/`, {
        key: renter.apiKey,
        body: { state: 'running' },
      });
      expect((await inst(t(), id)).actual_status).toBeNull();
      await sync([{ id, state: 'loading' }]);
      await sync([{ id, state: 'exited', status_msg: 'failed to start: boom' }]);
      expect(await inst(t(), id)).toMatchObject({
        actual_status: 'exited',
        status_msg: 'failed to start: boom',
      });
    });

    it('a reboot reads loading from the request until its host has done it and reports running; a repeat says so; a failed recycle answers its error', async () => {
      const host = await t().user();
      const renter = await t().user();
      const reg = await t().request('POST', `${P}/register`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-reboot-01', machines: [hw(0)] },
      });
      const mid = reg.body.machines[0].machine_id;
      const id = await newInstance(t(), mid, renter.id, { env: '{}' });
      const sync = (instances: unknown[]) =>
        t().request('POST', `${P}/sync`, {
          key: host.apiKey,
          body: { agent_uid: 'agent-reboot-01', machine_ids: [mid], instances },
        });
      const answer = (rid: number, ok: boolean, output: string) =>
        t().request('POST', `${P}/results`, {
          key: host.apiKey,
          body: { agent_uid: 'agent-reboot-01', machine_ids: [mid], results: [{ id: rid, ok, output }] },
        });
      const put = (kind: string) =>
        t().request('PUT', `/api/v0/instances/${kind}/${id}/`, { key: renter.apiKey, body: {} });
      const result = (url: string) => t().app.inject({ method: 'GET', url: new URL(url).pathname });
      const running = {
        id,
        state: 'running',
        ssh_port: 41040,
        status_msg: 'running; SSH accepts connections',
      };
      await sync([running]);
      expect((await inst(t(), id)).actual_status).toBe('running');

      const r = await put('reboot');
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({
        success: true,
        result_url: expect.stringMatching(/\/results\/[\w-]+\/$/),
      });
      expect(await inst(t(), id)).toMatchObject({
        actual_status: 'loading',
        intended_status: 'running',
        status_msg: 'reboot requested; waiting for the host to carry it out',
      });
      // Asked again: a success that says so, nothing new; the other kind waits for it.
      const again = await put('reboot');
      expect(again.body).toEqual({ success: true, msg: expect.stringMatching(/already being rebooted/) });
      const other = await put('recycle');
      expect(other.status).toBe(409);
      expect(other.body.msg).toMatch(/while a reboot of it is under way/);
      expect(
        await t()
          .deps.db.selectFrom('instance_requests')
          .select('id')
          .where('instance_id', '=', id)
          .execute(),
      ).toHaveLength(1);

      // The old container still runs: the agent's `running` does not end the reboot.
      const s1 = await sync([running]);
      const req = s1.body.requests.find((q: { instance_id: number }) => q.instance_id === id);
      expect(req).toMatchObject({ kind: 'reboot' });
      expect((await inst(t(), id)).actual_status).toBe('loading');
      // Its steps show while it is carried out.
      await sync([{ id, state: 'loading', status_msg: 'rebooting: restarting the container' }]);
      expect((await inst(t(), id)).status_msg).toBe('rebooting: restarting the container');
      await sync([running]); // done here, not yet answered: still held
      expect((await inst(t(), id)).actual_status).toBe('loading');
      expect((await result(r.body.result_url)).statusCode).toBe(404);
      expect((await answer(req.id, true, 'rebooted: the container started again at T\n')).body.accepted).toBe(
        1,
      );
      const done = await result(r.body.result_url);
      expect([done.statusCode, done.body]).toEqual([200, 'rebooted: the container started again at T\n']);
      expect((await sync([running])).body.requests).toEqual([]);
      expect(await inst(t(), id)).toMatchObject({ actual_status: 'running', ssh_port: 41040 });

      // A recycle whose pull failed: the container kept running; the result says why.
      const rc = await put('recycle');
      expect(rc.status).toBe(200);
      const s2 = await sync([running]);
      const rq = s2.body.requests.find((q: { instance_id: number }) => q.instance_id === id);
      await sync([{ id, state: 'loading', status_msg: 'recycling: pulling pytorch/pytorch: 3/10 MB' }]);
      expect((await inst(t(), id)).status_msg).toBe('recycling: pulling pytorch/pytorch: 3/10 MB');
      await answer(rq.id, false, 'pull access denied');
      await sync([running]);
      expect((await inst(t(), id)).actual_status).toBe('running');
      expect((await result(rc.body.result_url)).body).toBe('error: pull access denied\n');
      // Not running: refused with the state.
      await sync([{ id, state: 'exited', status_msg: 'main process exited (code 1)' }]);
      const dead = await put('reboot');
      expect([dead.status, dead.body.msg]).toEqual([409, 'Cannot reboot an instance in state exited']);
    });

    it('concurrent reboots of one instance make one request; the others say it is under way', async () => {
      const host = await t().user();
      const renter = await t().user();
      const reg = await t().request('POST', `${P}/register`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-reboot-02', machines: [hw(0)] },
      });
      const mid = reg.body.machines[0].machine_id;
      const id = await newInstance(t(), mid, renter.id, { env: '{}', actual_status: 'running' });
      const all = await Promise.all(
        Array.from({ length: 8 }, () =>
          t().request('PUT', `/api/v0/instances/reboot/${id}/`, { key: renter.apiKey, body: {} }),
        ),
      );
      expect(all.map((r) => r.status)).toEqual(Array(8).fill(200));
      expect(all.filter((r) => r.body.result_url).length).toBe(1);
      expect(
        await t()
          .deps.db.selectFrom('instance_requests')
          .select('id')
          .where('instance_id', '=', id)
          .execute(),
      ).toHaveLength(1);
    });

    it('a client start of unknown or offline instances stays refused and changes nothing', async () => {
      const host = await t().user();
      const renter = await t().user();
      const reg = await t().request('POST', `${P}/register`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-restart-02', machines: [hw(0)] },
      });
      const mid = reg.body.machines[0].machine_id;
      for (const actual of ['unknown', 'offline'] as const) {
        const id = await newInstance(t(), mid, renter.id, { actual_status: actual });
        const put = await t().request('PUT', `/api/v0/instances/${id}/`, {
          key: renter.apiKey,
          body: { state: 'running' },
        });
        expect(put.status).toBe(409);
        expect(put.body.error).toBe('invalid_state');
        expect(put.body.msg).toContain(actual);
        expect(await inst(t(), id)).toMatchObject({ actual_status: actual, intended_status: 'running' });
        await t()
          .deps.db.updateTable('instances')
          .set({ destroyed_at: t().clock.now() })
          .where('id', '=', id)
          .execute();
      }
    });

    it("names machines that are not the agent's and never touches them", async () => {
      const host = await t().user();
      const other = await t().user();
      const reg = await t().request('POST', `${P}/register`, {
        key: other.apiKey,
        body: { agent_uid: 'agent-other-001', machines: [hw(0)] },
      });
      const theirs = reg.body.machines[0].machine_id;
      const s = await t().request('POST', `${P}/sync`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-other-001', machine_ids: [theirs], instances: [] },
      });
      expect(s.body.unknown_machine_ids).toEqual([theirs]);
      expect(s.body.instances).toEqual([]);
      const none = await t().request('POST', `${P}/sync`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-none-0001', machine_ids: [], instances: [{ id: 1, state: 'loading' }] },
      });
      expect(none.status).toBe(200);
      expect(none.body.instances).toEqual([expect.objectContaining({ id: 1, desired: 'destroyed' })]);
    });
  });

  describe('heartbeats', () => {
    it('sweeps quiet machines to unknown, then offline; the agent coming back re-adopts what survived', async () => {
      const host = await t().user();
      const renter = await t().user();
      const reg = await t().request('POST', `${P}/register`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-sweep-001', machines: [hw(0), hw(1)] },
      });
      const [mid, mid2] = reg.body.machines.map((m: { machine_id: number }) => m.machine_id);
      const id = await newInstance(t(), mid, renter.id, { actual_status: 'running' });
      const gone = await newInstance(t(), mid2, renter.id, { actual_status: 'running' });
      t().clock.advance(59_000);
      expect((await sweepHeartbeats(t().deps)).unknown).not.toContain(id);
      t().clock.advance(2_000);
      const r1 = await sweepHeartbeats(t().deps);
      expect(r1.unknown).toContain(id);
      expect((await inst(t(), id)).actual_status).toBe('unknown');
      expect((await sweepHeartbeats(t().deps)).unknown).not.toContain(id); // idempotent
      // The agent syncs again and still runs it: running again (a re-adoption, not a new start).
      const sync = (instances: unknown[]) =>
        t().request('POST', `${P}/sync`, {
          key: host.apiKey,
          body: { agent_uid: 'agent-sweep-001', machine_ids: [mid, mid2], instances },
        });
      await sync([
        { id, state: 'running', ssh_port: 2222 },
        { id: gone, state: 'running', ssh_port: 2223 },
      ]);
      expect(await inst(t(), id)).toMatchObject({ actual_status: 'running', ssh_port: 2222 });
      t().clock.advance(301_000);
      const r2 = await sweepHeartbeats(t().deps);
      expect(r2.offline).toContain(id);
      expect((await inst(t(), id)).actual_status).toBe('offline');
      const m = await t()
        .deps.db.selectFrom('machines')
        .select('online_state')
        .where('id', '=', mid)
        .executeTakeFirstOrThrow();
      expect(m.online_state).toBe('offline');
      // Back after offline: the survivor is running, the one whose container is gone is exited.
      await sync([
        { id, state: 'running', ssh_port: 2222 },
        { id: gone, state: 'exited', status_msg: 'its container is gone from the host' },
      ]);
      expect((await inst(t(), id)).actual_status).toBe('running');
      expect(await inst(t(), gone)).toMatchObject({
        actual_status: 'exited',
        status_msg: 'its container is gone from the host',
      });
    });

    it('several sweeps at once (several serve processes) move each instance exactly once', async () => {
      const host = await t().user();
      const reg = await t().request('POST', `${P}/register`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-race-0001', machines: [hw(0), hw(1), hw(2), hw(3)] },
      });
      const ids: number[] = [];
      for (const m of reg.body.machines)
        ids.push(await newInstance(t(), m.machine_id, (await t().user()).id, { actual_status: 'running' }));
      t().clock.advance(61_000);
      const results = await Promise.all([1, 2, 3, 4].map(() => sweepHeartbeats(t().deps)));
      const moved = results.flatMap((r) => r.unknown).filter((id) => ids.includes(id));
      expect(moved.sort()).toEqual([...ids].sort());
      for (const id of ids) expect((await inst(t(), id)).actual_status).toBe('unknown');
    });

    it('a clean shutdown takes the machines and their instances offline at once', async () => {
      const host = await t().user();
      const renter = await t().user();
      const reg = await t().request('POST', `${P}/register`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-shut-0001', machines: [hw(0)] },
      });
      const mid = reg.body.machines[0].machine_id;
      const id = await newInstance(t(), mid, renter.id, { actual_status: 'running' });
      const r = await t().request('POST', `${P}/shutdown`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-shut-0001', machine_ids: [mid] },
      });
      expect(r.body).toEqual({ success: true, machines_offline: 1, instances_offline: 1 });
      expect((await inst(t(), id)).actual_status).toBe('offline');
      const m = await t()
        .deps.db.selectFrom('machines')
        .select('online_state')
        .where('id', '=', mid)
        .executeTakeFirstOrThrow();
      expect(m.online_state).toBe('offline');
    });

    it('lets the event loop serve other work between machines', async () => {
      const host = await t().user();
      const reg = await t().request('POST', `${P}/register`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-turn-0001', machines: [hw(0), hw(1), hw(2), hw(3)] },
      });
      for (const m of reg.body.machines)
        await newInstance(t(), m.machine_id, (await t().user()).id, { actual_status: 'running' });
      t().clock.advance(61_000);
      const { result: r, turns } = await turnsDuring(() => sweepHeartbeats(t().deps));
      expect(r.unknown.length).toBeGreaterThanOrEqual(4);
      expect(turns).toBeGreaterThanOrEqual(3);
    });

    it('leaves machines that never had an agent alone', async () => {
      const host = await t().user();
      const renter = await t().user();
      const now = t().clock.now();
      const m = await t()
        .deps.db.insertInto('machines')
        .values({
          host_id: host.id,
          gpu_name: 'RTX 4090',
          num_gpus: 1,
          hostname: '',
          gpu_ram: 0,
          cpu_name: '',
          cpu_cores: 0,
          cpu_ghz: 0,
          cpu_ram: 0,
          disk_space: 0,
          disk_bw: 0,
          inet_up: 0,
          inet_down: 0,
          pcie_bw: 0,
          direct_port_count: 0,
          cuda_max_good: 0,
          driver_version: '',
          reliability: 0,
          verified: 0,
          geolocation: '',
          dlperf: 0,
          listed: 1,
          price_gpu_dph: 1,
          price_disk_gb_month: 0,
          min_bid_dph: 0,
          rented: 0,
          online_state: 'offline',
          created_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      const id = await newInstance(t(), m.id, renter.id);
      t().clock.advance(400_000);
      await sweepHeartbeats(t().deps);
      expect((await inst(t(), id)).actual_status).toBeNull();
    });
  });
});
