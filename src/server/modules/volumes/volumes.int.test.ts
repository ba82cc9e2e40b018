// Volumes on the wire, as the official CLI sends them: a host lists volume space (never more than
// the machine has free), a renter searches it with the offer query language, makes a volume,
// lists it, mounts it from an instance on that machine (volume_info), and deletes it once no live
// instance uses it; unlisting waits until no volume uses the listing.
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { cliCreateBody } from '../../../../test/compat/official-cli.js';
import { agentMachine, renter } from '../../../../test/helpers/market.js';

const P = '/api/agent/v1';
const UID = 'agent-volumes-00001';
/** The official CLI's default volume search. */
const DEFAULT_QUERY = { verified: { eq: true }, external: { eq: false }, disk_space: { gte: 1 } };

describeEachDb('volumes', (dialect) => {
  const t = useTestApp(dialect);
  let host: { id: number; apiKey: string };
  let machines: number[];
  let u: { id: number; apiKey: string };
  let other: { id: number; apiKey: string };

  beforeAll(async () => {
    host = await t().user();
    const reg = await t().request('POST', `${P}/register`, {
      key: host.apiKey,
      body: {
        agent_uid: UID,
        machines: [0, 1, 2].map((s) => agentMachine(s)),
        price_gpu: 0.4,
        runtime: 'docker',
      },
    });
    expect(reg.status, reg.raw).toBe(200);
    machines = reg.body.machines.map((m: { machine_id: number }) => m.machine_id);
    u = await renter(t());
    other = await renter(t());
  });

  const list = (body: unknown, key = host.apiKey) => t().request('POST', '/api/v0/volumes/', { key, body });
  const search = (body: unknown, key = u.apiKey) =>
    t().request('POST', '/api/v0/volumes/search/', { key, body });
  const createVol = (body: unknown, key = u.apiKey) => t().request('PUT', '/api/v0/volumes/', { key, body });
  const show = (key = u.apiKey, q = 'owner=me&type=all_volume') =>
    t().request('GET', `/api/v0/volumes?${q}`, { key });
  const del = (id: number, key = u.apiKey) => t().request('DELETE', `/api/v0/volumes/?id=${id}`, { key });
  const rent = (machine: number, over: Record<string, unknown> = {}, key = u.apiKey) =>
    t().request('PUT', `/api/v0/asks/${machine}/`, { key, body: cliCreateBody(over) });
  const destroy = (id: number, key = u.apiKey) =>
    t().request('DELETE', `/api/v0/instances/${id}/`, { key, body: {} });
  const heldMb = async (machine: number) =>
    Number(
      (
        await t()
          .deps.db.selectFrom('machines')
          .select('disk_held_mb')
          .where('id', '=', machine)
          .executeTakeFirstOrThrow()
      ).disk_held_mb,
    );

  it('lists volume space on a machine, never more than it has free, and only on the host’s own machines', async () => {
    const tooBig = await list({ size: 501, machine: machines[0], price_disk: 0.1 });
    expect(tooBig.status, tooBig.raw).toBe(400);
    expect(tooBig.body.msg).toMatch(/exceeds the 500 GB free/);
    const notMine = await list({ size: 10, machine: machines[0], price_disk: 0.1 }, u.apiKey);
    expect(notMine.status).toBe(404);
    const bad = await list({ size: 'x', machine: machines[0], price_disk: 0.1 });
    expect(bad.status).toBe(400);
    expect(bad.body.msg).toMatch(/size/);
    const past = await list({ size: 10, machine: machines[0], price_disk: 0.1, end_date: 1000 });
    expect(past.status).toBe(400);
    expect(await heldMb(machines[0]!)).toBe(0);

    const r = await list({ size: 100, machine: machines[0], price_disk: 0.2 });
    expect(r.status, r.raw).toBe(200);
    expect(r.body.success).toBe(true);
    expect(r.body.volume_asks).toMatchObject([
      { machine_id: machines[0], size: 100, used: 0, price_disk: 0.2 },
    ]);
    // The listed GB are held from the machine's disk: offer search and instance creates see them taken.
    expect(await heldMb(machines[0]!)).toBe(100_000);
    // Listing again changes the listing (one per machine) and moves only the difference.
    const again = await list({ size: 120, machine: [machines[0], machines[1]], price_disk: 0.25 });
    expect(again.status, again.raw).toBe(200);
    expect(again.body.volume_asks.map((a: { size: number }) => a.size)).toEqual([120, 120]);
    expect(again.body.volume_asks[0].id).toBe(r.body.volume_asks[0].id);
    expect(await heldMb(machines[0]!)).toBe(120_000);
    const offer = await t().request('POST', '/api/v0/bundles/', {
      key: u.apiKey,
      body: { machine_id: { eq: machines[0] } },
    });
    expect(offer.body.offers[0].disk_space).toBe(380);
  });

  it('searches volume offers with the offer query language, and refuses unknown or ill-typed filters', async () => {
    const r = await search({
      ...DEFAULT_QUERY,
      verified: { eq: false },
      order: [['score', 'desc']],
      limit: 10,
      allocated_storage: 1,
    });
    expect(r.status, r.raw).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.body.offers.length).toBe(2);
    const o = r.body.offers.find((x: { machine_id: number }) => x.machine_id === machines[0]);
    expect(o).toMatchObject({
      disk_space: 120,
      storage_cost: 0.25,
      host_id: host.id,
      verification: 'unverified',
    });
    for (const f of [
      'id',
      'disk_space',
      'storage_cost',
      'machine_id',
      'host_id',
      'geolocation',
      'reliability',
      'verification',
      'inet_up',
      'inet_down',
      'disk_bw',
      'driver_version',
      'cuda_max_good',
      'duration',
    ])
      expect(o, f).toHaveProperty(f);
    expect(o).not.toHaveProperty('score');
    // The CLI's default query asks for verified machines; these are not.
    expect((await search(DEFAULT_QUERY)).body.offers).toEqual([]);
    const one = await search({ machine_id: { eq: String(machines[1]) }, storage_cost: { lte: 1 } });
    expect(one.body.offers.map((x: { machine_id: number }) => x.machine_id)).toEqual([machines[1]]);
    for (const [body, word] of [
      [{ gpu_name: { eq: 'x' } }, 'gpu_name'],
      [{ disk_space: { gte: 'lots' } }, 'disk_space'],
      [{ geolocation: { gt: 'US' } }, 'geolocation'],
      [{ order: [['nope', 'asc']] }, 'nope'],
      [{ disk_space: { about: 1 } }, 'about'],
    ] as const) {
      const bad = await search(body);
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(bad.body.msg).toContain(word);
    }
  });

  let volId: number;
  let askId: number;

  it('makes a volume from an offer, lists it with a numeric start_date, and never sells more than listed', async () => {
    const s = await search({ machine_id: { eq: machines[0] } });
    askId = s.body.offers[0].id;
    const tooBig = await createVol({ size: 121, id: askId });
    expect(tooBig.status).toBe(400);
    expect(tooBig.body.msg).toMatch(/exceeds the 120 GB left/);
    const c = await createVol({ size: 20, id: askId, name: 'ckpt' });
    expect(c.status, c.raw).toBe(200);
    volId = c.body.volume_id;
    expect(c.body.success).toBe(true);
    const after = await search({ id: { eq: askId } });
    expect(after.body.offers[0].disk_space).toBe(100);
    const v = await show();
    expect(v.status, v.raw).toBe(200);
    expect(v.body.volumes).toEqual([
      expect.objectContaining({
        id: volId,
        label: 'ckpt',
        disk_space: 20,
        status: 'ready',
        machine_id: machines[0],
        host_id: host.id,
        instances: [],
        start_date: t().clock.now() / 1000,
      }),
    ]);
    expect((await show(u.apiKey, 'owner=me&type=network_volume')).body.volumes).toEqual([]);
    expect((await show(other.apiKey)).body.volumes).toEqual([]);
    expect((await show(u.apiKey, 'owner=7')).status).toBe(400);
    expect((await show(u.apiKey, 'owner=me&type=cloud')).status).toBe(400);
    expect((await createVol({ size: 1, id: 999999 })).status).toBe(404);
  });

  it('refuses to unlist a listing its volumes use', async () => {
    const r = await t().request('POST', '/api/v0/volumes/unlist', { key: host.apiKey, body: { id: askId } });
    expect(r.status).toBe(409);
    expect(r.body.msg).toMatch(/volumes/);
  });

  it('mounts a volume from an instance on its machine, one live instance at a time', async () => {
    // Another machine: refused, naming both.
    const wrong = await rent(machines[1]!, {
      volume_info: { mount_path: '/data', create_new: false, volume_id: volId },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.msg).toContain(`machine ${machines[0]}`);
    expect(wrong.body.msg).toContain(`machine ${machines[1]}`);
    // Nothing was rented by the refused create.
    expect(
      (await t().request('GET', '/api/v0/instances/?owner=me', { key: u.apiKey })).body.instances,
    ).toEqual([]);
    // Someone else's volume is not found.
    const theirs = await rent(
      machines[0]!,
      { volume_info: { mount_path: '/data', create_new: false, volume_id: volId } },
      other.apiKey,
    );
    expect(theirs.status).toBe(404);

    const ok = await rent(machines[0]!, {
      volume_info: { mount_path: '/data/', create_new: false, volume_id: volId },
    });
    expect(ok.status, ok.raw).toBe(200);
    const inst = ok.body.new_contract as number;
    const v = (await show()).body.volumes[0];
    expect(v).toMatchObject({ instances: [inst], mount_path: '/data' });
    // show instances carries it in volume_info (the CLI prints #id from it).
    const rows = (await t().request('GET', '/api/v0/instances/?owner=me', { key: u.apiKey })).body.instances;
    expect(rows.find((i: { id: number }) => i.id === inst).volume_info).toEqual([
      { id: volId, label: 'ckpt', mount_path: '/data', total_space: 20 },
    ]);
    // Its agent is told to mount it, and which volumes its machines keep.
    const sync = await t().request('POST', `${P}/sync`, {
      key: host.apiKey,
      body: { agent_uid: UID, machine_ids: machines, instances: [] },
    });
    expect(sync.status, sync.raw).toBe(200);
    expect(sync.body.instances.find((i: { id: number }) => i.id === inst).volumes).toEqual([
      { id: volId, mount_path: '/data', size_gb: 20 },
    ]);
    expect(sync.body.volumes).toEqual([{ id: volId, machine_id: machines[0], size_gb: 20 }]);
    // In use: not deleted.
    const busy = await del(volId);
    expect(busy.status).toBe(409);
    expect(busy.body.msg).toContain(`instance ${inst}`);
    expect((await show()).body.volumes.map((x: { id: number }) => x.id)).toEqual([volId]);

    expect((await destroy(inst)).status).toBe(200);
    expect((await show()).body.volumes[0]).toMatchObject({ instances: [], mount_path: null });
  });

  it('checks volume_info: the mount path, the fields, and never ignores it', async () => {
    for (const [vi, word] of [
      [{ mount_path: 'data', create_new: false, volume_id: volId }, 'mount_path'],
      [{ mount_path: '/', create_new: false, volume_id: volId }, 'mount_path'],
      [{ mount_path: '/a/../etc', create_new: false, volume_id: volId }, 'mount_path'],
      [{ create_new: false, volume_id: volId }, 'mount_path'],
      [{ mount_path: '/d', create_new: 'yes', volume_id: volId }, 'create_new'],
      [{ mount_path: '/d', create_new: false }, 'volume_id'],
      [{ mount_path: '/d', create_new: false, volume_id: volId, size: 5 }, 'size'],
      [{ mount_path: '/d', create_new: true, volume_id: askId, size: 0 }, 'size'],
      [{ mount_path: '/d', create_new: false, volume_id: volId, readonly: true }, 'readonly'],
      ['/data', 'volume_info'],
    ] as const) {
      const r = await rent(machines[0]!, { volume_info: vi });
      expect(r.status, JSON.stringify(vi)).toBe(400);
      expect(r.body.msg, JSON.stringify(vi)).toContain(word);
    }
  });

  it('makes a new volume with the instance (15 GB unless sized), on the same machine only', async () => {
    const s = await search({ machine_id: { eq: machines[1] } });
    const otherAsk = s.body.offers[0].id as number;
    const wrong = await rent(machines[0]!, {
      volume_info: { mount_path: '/w', create_new: true, volume_id: otherAsk },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.msg).toContain(`machine ${machines[1]}`);
    const r = await rent(machines[0]!, {
      volume_info: { mount_path: '/w', create_new: true, volume_id: askId, name: 'new' },
    });
    expect(r.status, r.raw).toBe(200);
    const vols = (await show()).body.volumes;
    const made = vols.find((v: { label: string }) => v.label === 'new');
    expect(made).toMatchObject({
      disk_space: 15,
      machine_id: machines[0],
      instances: [r.body.new_contract],
      mount_path: '/w',
    });
    expect((await destroy(r.body.new_contract)).status).toBe(200);
    expect((await del(made.id)).status).toBe(200);
  });

  it('deletes a volume: gone from the list, its space back on the offer, then the listing can go', async () => {
    const r = await del(volId);
    expect(r.status, r.raw).toBe(200);
    expect(r.body.success).toBe(true);
    expect((await del(volId)).status).toBe(404);
    expect((await show()).body.volumes).toEqual([]);
    // Its agent no longer finds it in the list: it deletes the data.
    const sync = await t().request('POST', `${P}/sync`, {
      key: host.apiKey,
      body: { agent_uid: UID, machine_ids: machines, instances: [] },
    });
    expect(sync.body.volumes).toEqual([]);
    expect((await search({ id: { eq: askId } })).body.offers[0].disk_space).toBe(120);
    const un = await t().request('POST', '/api/v0/volumes/unlist', { key: host.apiKey, body: { id: askId } });
    expect(un.status, un.raw).toBe(200);
    expect(un.body.msg).toContain(String(askId));
    expect(await heldMb(machines[0]!)).toBe(0);
    expect((await search({ id: { eq: askId } })).body.offers).toEqual([]);
    const twice = await t().request('POST', '/api/v0/volumes/unlist', {
      key: host.apiKey,
      body: { id: askId },
    });
    expect(twice.status).toBe(404);
  });
});
