// Cloning a volume on both databases, as the official CLI sends it (POST /volumes/copy/
// {src_id, dst_id, size?, disable_compression?}): the new volume on the offer's machine, cloning
// until its copy ends; the agents' side of the copy (the destination's agent told to receive it
// and reporting its SSH port, the source's then told where to push, the one-time key confirmed
// for the volume); progress and the end on the new volume's status; a failed clone never ready;
// the refusals (not yours, not ready, smaller than the source, unknown offer, no space).
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { cliCreateBody } from '../../../../test/compat/official-cli.js';
import { agentMachine, renter } from '../../../../test/helpers/market.js';
import { ed25519KeyPair } from '../../../contract/ssh-keygen.js';

const P = '/api/agent/v1';
const SRC_UID = 'agent-clone-src-0001';
const DST_UID = 'agent-clone-dst-0001';

describeEachDb('volume clones', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off' });
  let host: { id: number; apiKey: string };
  let srcMachine: number;
  let srcMachine2: number;
  let dstMachine: number;
  let srcAsk: number;
  let dstAsk: number;
  let sameAgentAsk: number;
  let u: { id: number; apiKey: string };

  const register = async (uid: string, slots: number[]) => {
    const reg = await t().request('POST', `${P}/register`, {
      key: host.apiKey,
      body: { agent_uid: uid, machines: slots.map((s) => agentMachine(s)), price_gpu: 0.4 },
    });
    expect(reg.status, reg.raw).toBe(200);
    return reg.body.machines.map((m: { machine_id: number }) => m.machine_id) as [number, number];
  };
  const offer = async (machine: number, size: number) => {
    const l = await t().request('POST', '/api/v0/volumes/', {
      key: host.apiKey,
      body: { size, machine, price_disk: 0.1 },
    });
    expect(l.status, l.raw).toBe(200);
    return l.body.volume_asks[0].id as number;
  };

  beforeAll(async () => {
    host = await t().user();
    [srcMachine, srcMachine2] = await register(SRC_UID, [0, 1]);
    [dstMachine] = await register(DST_UID, [0]);
    await t()
      .deps.db.updateTable('machines')
      .set({ online_state: 'online', public_host: '203.0.113.9' })
      .where('id', 'in', [srcMachine, srcMachine2, dstMachine])
      .execute();
    srcAsk = await offer(srcMachine, 300);
    sameAgentAsk = await offer(srcMachine2, 300);
    dstAsk = await offer(dstMachine, 300);
    u = await renter(t());
  });

  const clone = (body: unknown, key = u.apiKey) =>
    t().request('POST', '/api/v0/volumes/copy/', { key, body });
  const makeVolume = async (size = 20, ask = srcAsk) => {
    const c = await t().request('PUT', '/api/v0/volumes/', {
      key: u.apiKey,
      body: { size, id: ask, name: 'ckpt' },
    });
    expect(c.status, c.raw).toBe(200);
    return c.body.volume_id as number;
  };
  const volume = async (id: number) =>
    (
      await t().request('GET', '/api/v0/volumes?owner=me&type=all_volume', { key: u.apiKey })
    ).body.volumes.find((v: { id: number }) => v.id === id);
  const copiesCall = (uid: string, machines: number[], more: Record<string, unknown> = {}) =>
    t().request('POST', `${P}/copies`, {
      key: host.apiKey,
      body: { agent_uid: uid, machine_ids: machines, reports: [], ...more },
    });
  const src = (more: Record<string, unknown> = {}) => copiesCall(SRC_UID, [srcMachine, srcMachine2], more);
  const dst = (more: Record<string, unknown> = {}) => copiesCall(DST_UID, [dstMachine], more);

  it("clones into another agent's machine: the destination receives, the source pushes there, the status follows", async () => {
    const vol = await makeVolume(20);
    const r = await clone({ src_id: vol, dst_id: dstAsk });
    expect(r.status, r.raw).toBe(200);
    expect(r.body).toMatchObject({
      success: true,
      volume_id: expect.any(Number),
      copy_id: expect.any(Number),
    });
    expect(r.body.msg).toContain(`machine ${dstMachine}`);
    const nv = r.body.volume_id as number;
    // The source's size and label; cloning until copied.
    expect(await volume(nv)).toMatchObject({
      status: 'cloning',
      disk_space: 20,
      label: 'ckpt',
      machine_id: dstMachine,
    });
    // A cloning volume is mounted by no instance, and its source is not deleted meanwhile.
    const rent = await t().request('PUT', `/api/v0/asks/${dstMachine}/`, {
      key: u.apiKey,
      body: cliCreateBody({ volume_info: { mount_path: '/data', create_new: false, volume_id: nv } }),
    });
    expect(rent.status, rent.raw).toBe(409);
    expect(rent.body.msg).toMatch(/not ready \(cloning\)/);
    const delSrc = await t().request('DELETE', `/api/v0/volumes/?id=${vol}`, { key: u.apiKey });
    expect(delSrc.status).toBe(409);
    expect(delSrc.body.msg).toMatch(/being copied into volume/);

    // The source's agent is told nothing until the destination's opened its SSH server.
    expect((await src()).body.copies).toEqual([]);
    const d1 = await dst();
    expect(d1.status, d1.raw).toBe(200);
    expect(d1.body.receives).toEqual([{ id: r.body.copy_id, volume_id: nv, size_gb: 20 }]);
    expect(d1.body.copies).toEqual([]);
    // The destination's agent reports the port of the SSH server it opened for the clone.
    await dst({ receiving: [{ id: r.body.copy_id, port: 40123 }] });
    const s1 = await src();
    expect(s1.body.copies).toHaveLength(1);
    const c = s1.body.copies[0];
    expect(c).toMatchObject({
      id: r.body.copy_id,
      src_kind: 'volume',
      src_id: vol,
      src_path: '/',
      dst_kind: 'volume',
      dst_id: nv,
      dst_path: '/',
      dst_host: '203.0.113.9',
      dst_port: 40123,
      dst_size_gb: 20,
      compress: true,
    });
    expect(c.key).toContain('PRIVATE KEY');

    // The destination's SSH server asks about the key for the volume: yes once, and for no other.
    const pub = ed25519KeyPair().public;
    const auth = (body: Record<string, unknown>) =>
      t().request('POST', `${P}/copy_auth`, { key: host.apiKey, body });
    expect((await auth({ volume_id: nv, public_key: pub })).body.ok).toBe(false);
    expect((await auth({ public_key: pub })).body.ok).toBe(false);

    // Progress, then the end: the volume's status follows, and it is ready once copied.
    await src({ reports: [{ id: c.id, state: 'running', progress: '1.2 MB 42% 3.4MB/s', bytes: 1200000 }] });
    expect((await volume(nv)).status).toBe('cloning 42%');
    await src({ reports: [{ id: c.id, state: 'done', bytes: 2000000 }] });
    expect((await volume(nv)).status).toBe('ready');
    expect((await dst()).body.receives).toEqual([]);
    expect((await src()).body.copies).toEqual([]);
    // Ready: mounted like any volume; the source can go.
    expect((await t().request('DELETE', `/api/v0/volumes/?id=${vol}`, { key: u.apiKey })).status).toBe(200);
  });

  it('a failed clone is never ready: its status says why, and its owner deletes it (the copy ends with it)', async () => {
    const vol = await makeVolume(10);
    const r = await clone({ src_id: vol, dst_id: dstAsk, size: 15.0, disable_compression: true });
    expect(r.status, r.raw).toBe(200);
    const nv = r.body.volume_id as number;
    expect((await volume(nv)).disk_space).toBe(15);
    await dst({ receiving: [{ id: r.body.copy_id, port: 40200 }] });
    const c = (await src()).body.copies[0];
    expect(c.compress).toBeUndefined();
    await src({ reports: [{ id: c.id, state: 'failed', msg: 'rsync: connection unexpectedly closed' }] });
    expect((await volume(nv)).status).toBe('clone failed: rsync: connection unexpectedly closed');
    // A late report changes nothing.
    await src({ reports: [{ id: c.id, state: 'done' }] });
    expect((await volume(nv)).status).toMatch(/^clone failed/);
    expect((await t().request('DELETE', `/api/v0/volumes/?id=${nv}`, { key: u.apiKey })).status).toBe(200);

    // Deleting a clone still copying cancels its copy: its source's agent is told no more.
    const r2 = await clone({ src_id: vol, dst_id: dstAsk });
    await dst({ receiving: [{ id: r2.body.copy_id, port: 40201 }] });
    expect((await src()).body.copies).toHaveLength(1);
    expect(
      (await t().request('DELETE', `/api/v0/volumes/?id=${r2.body.volume_id}`, { key: u.apiKey })).status,
    ).toBe(200);
    expect((await src()).body.copies).toEqual([]);
    expect((await dst()).body.receives).toEqual([]);
  });

  it('on a machine of the same agent (the same machine too) it is copied on the host', async () => {
    const vol = await makeVolume(10);
    for (const ask of [srcAsk, sameAgentAsk]) {
      const r = await clone({ src_id: vol, dst_id: ask });
      expect(r.status, r.raw).toBe(200);
      const listed = (await src()).body;
      const c = listed.copies.find((x: { id: number }) => x.id === r.body.copy_id);
      expect(c).toMatchObject({
        dst_kind: 'volume',
        dst_id: r.body.volume_id,
        dst_host: '',
        dst_port: 0,
        dst_size_gb: 10,
      });
      expect(listed.receives).toEqual([]);
      await src({ reports: [{ id: c.id, state: 'done' }] });
      expect((await volume(r.body.volume_id)).status).toBe('ready');
    }
  });

  it('refuses what cannot be cloned, changing nothing', async () => {
    const vol = await makeVolume(20);
    const other = await renter(t());
    const before = await t().deps.db.selectFrom('volumes').select('id').execute();
    const cases: [unknown, number, RegExp, string?][] = [
      [{ src_id: vol, dst_id: dstAsk }, 404, /No volume/, other.apiKey],
      [{ src_id: 999999, dst_id: dstAsk }, 404, /No volume 999999/],
      [{ src_id: vol, dst_id: 999999 }, 404, /No listed volume offer 999999/],
      [{ src_id: vol, dst_id: dstAsk, size: 10 }, 400, /less than the 20 GB/],
      [{ src_id: vol, dst_id: dstAsk, size: 20.5 }, 400, /whole GB/],
      [{ src_id: vol, dst_id: dstAsk, size: 5000 }, 400, /exceeds the \d+ GB left/],
      [{ src_id: vol, dst_id: dstAsk, name: 'x' }, 400, /name/],
      [{ src_id: vol }, 400, /dst_id/],
    ];
    for (const [body, status, msg, key] of cases) {
      const r = await clone(body, key);
      expect(r.status, `${JSON.stringify(body)}: ${r.raw}`).toBe(status);
      expect(r.body.success).toBe(false);
      expect(r.body.msg).toMatch(msg);
    }
    // A volume still being cloned is not cloned again.
    const r = await clone({ src_id: vol, dst_id: dstAsk });
    const again = await clone({ src_id: r.body.volume_id, dst_id: dstAsk });
    expect(again.status).toBe(409);
    expect(again.body.msg).toMatch(/not ready \(cloning\)/);
    const after = await t().deps.db.selectFrom('volumes').select('id').execute();
    expect(after.length).toBe(before.length + 1);
  });

  it('a clone and a delete of its source at once: never both (the database decides)', async () => {
    for (let i = 0; i < 6; i++) {
      const vol = await makeVolume(2);
      const [c, d] = await Promise.all([
        clone({ src_id: vol, dst_id: dstAsk }),
        t().request('DELETE', `/api/v0/volumes/?id=${vol}`, { key: u.apiKey }),
      ]);
      expect(
        [c.status, d.status].filter((s) => s === 200),
        `${c.raw} ${d.raw}`,
      ).toHaveLength(1);
      if (c.status === 200) {
        expect(d.status).toBe(409);
        await t().request('DELETE', `/api/v0/volumes/?id=${c.body.volume_id}`, { key: u.apiKey });
      }
    }
  });
});
