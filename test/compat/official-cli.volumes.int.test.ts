// The official CLI's volume commands, each request exactly as it builds it, each checked by a
// follow-up read: `list volume`, `list volumes`, `search volumes`, `create volume`,
// `show volumes`, `create instance` with --create-volume / --link-volume, `delete volume`,
// `unlist volume`, `clone volume`.
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { agentMachine, renter } from '../helpers/market.js';
import { cli, cliCreateBody, expectOk, f } from './official-cli.js';

const P = '/api/agent/v1';

describeEachDb('official CLI: volumes', (dialect) => {
  const t = useTestApp(dialect);
  let host: { id: number; apiKey: string };
  let u: { id: number; apiKey: string };
  let machines: number[];

  beforeAll(async () => {
    host = await t().user();
    const reg = await t().request('POST', `${P}/register`, {
      key: host.apiKey,
      body: {
        agent_uid: 'agent-cli-volumes-1',
        machines: [0, 1].map((s) => agentMachine(s)),
        price_gpu: 0.4,
      },
    });
    expect(reg.status, reg.raw).toBe(200);
    machines = reg.body.machines.map((m: { machine_id: number }) => m.machine_id);
    u = await renter(t());
  });

  /** search volumes -n (the default query asks for verified machines), as the CLI builds it. */
  const searchVolumes = async (query: Record<string, unknown>) => {
    const r = await cli(t(), {
      method: 'POST',
      path: '/volumes/search/',
      key: u.apiKey,
      json: { ...query, order: [['score', 'desc']], allocated_storage: f(1) },
    });
    expectOk(r);
    return r.body.offers as Record<string, unknown>[];
  };
  const showVolumes = async () => {
    const r = await cli(t(), {
      method: 'GET',
      path: '/volumes',
      query: { owner: 'me', type: 'local_volume' },
      key: u.apiKey,
    });
    expectOk(r);
    // The CLI computes each row's age from start_date: it must be a number.
    for (const v of r.body.volumes) expect(typeof v.start_date).toBe('number');
    return r.body.volumes as Record<string, unknown>[];
  };

  it('list volume and list volumes offer disk; search volumes finds it', async () => {
    const one = await cli(t(), {
      method: 'POST',
      path: '/volumes/',
      key: host.apiKey,
      json: { size: 50, machine: machines[0], price_disk: f(0.1) },
    });
    expectOk(one);
    const many = await cli(t(), {
      method: 'POST',
      path: '/volumes/',
      key: host.apiKey,
      json: { size: 40, machine: machines, price_disk: f(0.15), end_date: f(Date.now() / 1000 + 86400) },
    });
    expectOk(many);
    const offers = await searchVolumes({ disk_space: { gte: 1 } });
    expect(offers.map((o) => [o.machine_id, o.disk_space, o.storage_cost])).toEqual([
      [machines[0], 40, 0.15],
      [machines[1], 40, 0.15],
    ]);
    for (const f of [
      'id',
      'cuda_max_good',
      'cpu_ghz',
      'disk_bw',
      'disk_space',
      'disk_name',
      'storage_cost',
      'driver_version',
      'inet_up',
      'inet_down',
      'reliability',
      'duration',
      'machine_id',
      'verification',
      'host_id',
      'geolocation',
    ])
      expect(offers[0], f).toHaveProperty(f);
    const bad = await cli(t(), {
      method: 'POST',
      path: '/volumes/search/',
      key: u.apiKey,
      json: { gpu_ram: { gte: 1 } },
    });
    expect(bad.status).toBe(400);
  });

  it('create volume, show volumes, create instance --link-volume and --create-volume, delete volume, unlist volume', async () => {
    const [offer] = await searchVolumes({ machine_id: { eq: machines[0] } });
    const made = await cli(t(), {
      method: 'PUT',
      path: '/volumes/',
      key: u.apiKey,
      json: { size: 10, id: offer!.id, name: 'ckpt' },
    });
    expectOk(made);
    let vols = await showVolumes();
    expect(vols).toMatchObject([{ label: 'ckpt', disk_space: 10, machine_id: machines[0], instances: [] }]);
    const volId = vols[0]!.id as number;

    const linked = await cli(t(), {
      method: 'PUT',
      path: `/asks/${machines[0]}/`,
      key: u.apiKey,
      json: cliCreateBody({
        volume_info: { mount_path: '/workspace/ckpt', create_new: false, volume_id: volId },
      }),
    });
    expectOk(linked);
    const inst = linked.body.new_contract as number;
    vols = await showVolumes();
    expect(vols[0]).toMatchObject({ id: volId, instances: [inst] });
    // In use: delete volume is refused, and the volume stays.
    const refused = await cli(t(), {
      method: 'DELETE',
      path: '/volumes/',
      query: { id: volId },
      key: u.apiKey,
    });
    expect(refused.status).toBe(409);
    expect((await showVolumes()).length).toBe(1);
    const gone = await cli(t(), { method: 'DELETE', path: `/instances/${inst}/`, key: u.apiKey, json: {} });
    expectOk(gone);

    // --create-volume with --volume-size 12 on the other machine's offer.
    const [offer1] = await searchVolumes({ machine_id: { eq: machines[1] } });
    const created = await cli(t(), {
      method: 'PUT',
      path: `/asks/${machines[1]}/`,
      key: u.apiKey,
      json: cliCreateBody({
        volume_info: { mount_path: '/data', create_new: true, volume_id: offer1!.id, size: 12 },
      }),
    });
    expectOk(created);
    vols = await showVolumes();
    expect(vols.find((v) => v.machine_id === machines[1])).toMatchObject({
      disk_space: 12,
      instances: [created.body.new_contract],
    });

    const del = await cli(t(), { method: 'DELETE', path: '/volumes/', query: { id: volId }, key: u.apiKey });
    expectOk(del);
    expect((await showVolumes()).map((v) => v.id)).not.toContain(volId);
    const unlist = await cli(t(), {
      method: 'POST',
      path: '/volumes/unlist',
      key: host.apiKey,
      json: { id: offer!.id },
    });
    expectOk(unlist);
    expect(typeof unlist.body.msg).toBe('string');
    expect((await searchVolumes({ machine_id: { eq: machines[0] } })).length).toBe(0);
  });

  it("clone volume SRC DST_OFFER [-s GB] [-d]: a new volume on the offer's machine, cloning until copied", async () => {
    // The earlier test unlisted machine 0's offer: listed again.
    const listed = await cli(t(), {
      method: 'POST',
      path: '/volumes/',
      key: host.apiKey,
      json: { size: 100, machine: machines[0], price_disk: f(0.1) },
    });
    expectOk(listed);
    const [offer0] = await searchVolumes({ machine_id: { eq: machines[0] } });
    const [offer1] = await searchVolumes({ machine_id: { eq: machines[1] } });
    const made = await cli(t(), {
      method: 'PUT',
      path: '/volumes/',
      key: u.apiKey,
      json: { size: 4, id: offer0!.id },
    });
    expectOk(made);
    const src = made.body.volume_id as number;
    // The CLI's -s is a float; -d sends disable_compression true.
    const cloned = await cli(t(), {
      method: 'POST',
      path: '/volumes/copy/',
      key: u.apiKey,
      json: { src_id: src, dst_id: offer1!.id, size: f(6), disable_compression: true },
    });
    expectOk(cloned);
    expect(cloned.body).toMatchObject({ volume_id: expect.any(Number), copy_id: expect.any(Number) });
    expect(typeof cloned.body.msg).toBe('string');
    const vols = await showVolumes();
    expect(vols.find((v) => v.id === cloned.body.volume_id)).toMatchObject({
      machine_id: machines[1],
      disk_space: 6,
      status: 'cloning',
    });
    // Without -s: the source's size. Smaller than the source: refused, with the reason printed.
    const plain = await cli(t(), {
      method: 'POST',
      path: '/volumes/copy/',
      key: u.apiKey,
      json: { src_id: src, dst_id: offer0!.id },
    });
    expectOk(plain);
    const small = await cli(t(), {
      method: 'POST',
      path: '/volumes/copy/',
      key: u.apiKey,
      json: { src_id: src, dst_id: offer1!.id, size: f(2) },
    });
    expect(small.status).toBe(400);
    expect(small.body.msg).toMatch(/less than the 4 GB/);
  });
});
