// The launch mode reaches the agent: an instance created as the official client creates it with
// `--entrypoint /bin/sh --args -c '…'` (runtype `args`, the entrypoint sent as onstart) is handed
// to its agent with its arguments and entrypoint; an ssh instance with neither field.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { renter } from '../../../../test/helpers/market.js';

const P = '/api/agent/v1';

/** The official client's create body, every option it did not get sent as null. */
const cliBody = (over: Record<string, unknown>) => ({
  client_id: 'me',
  image: 'ubuntu:22.04',
  env: {},
  price: null,
  disk: 10,
  label: null,
  extra: null,
  onstart: null,
  image_login: null,
  python_utf8: false,
  lang_utf8: false,
  use_jupyter_lab: false,
  jupyter_dir: null,
  force: false,
  cancel_unavail: false,
  template_hash_id: null,
  user: null,
  runtype: 'ssh',
  ...over,
});

describeEachDb('agent sync: the launch mode of an instance', (dialect) => {
  const t = useTestApp(dialect);

  it('runtype args carries its arguments and entrypoint to the agent; ssh carries neither', async () => {
    const host = await t().user();
    const machine = (slot: number) => ({
      slot,
      hostname: `h${slot}`,
      gpu_name: 'RTX 4090',
      num_gpus: 1,
      gpu_ram: 24564,
      cpu_ram: 64000,
      disk_space: 500,
    });
    const reg = await t().request('POST', `${P}/register`, {
      key: host.apiKey,
      body: {
        agent_uid: 'agent-launch-0001',
        machines: [0, 1, 2].map(machine),
        price_gpu: 0.4,
        price_disk: 0.1,
      },
    });
    expect(reg.status).toBe(200);
    const [m0, m1, m2] = reg.body.machines.map((m: { machine_id: number }) => m.machine_id) as number[];
    const u = await renter(t());
    const create = async (mid: number, body: Record<string, unknown>) => {
      const r = await t().request('PUT', `/api/v0/asks/${mid}/`, { key: u.apiKey, body: cliBody(body) });
      expect(r.status).toBe(200);
      return r.body.new_contract as number;
    };
    const withEntrypoint = await create(m0!, {
      runtype: 'args',
      onstart: '/bin/sh',
      args: ['-c', 'echo from-args; sleep 1000'],
    });
    const imageEntrypoint = await create(m1!, { runtype: 'args', args: ['serve', '--port', '80'] });
    const ssh = await create(m2!, { onstart: 'echo hi' });

    const s = await t().request('POST', `${P}/sync`, {
      key: host.apiKey,
      body: { agent_uid: 'agent-launch-0001', machine_ids: [m0, m1, m2], instances: [] },
    });
    expect(s.status).toBe(200);
    const byId = new Map(s.body.instances.map((i: { id: number }) => [i.id, i]));
    expect(byId.get(withEntrypoint)).toMatchObject({
      desired: 'running',
      onstart: '/bin/sh',
      args: ['-c', 'echo from-args; sleep 1000'],
      entrypoint: '/bin/sh',
    });
    expect(byId.get(imageEntrypoint)).toMatchObject({ args: ['serve', '--port', '80'], entrypoint: null });
    const plain = byId.get(ssh) as Record<string, unknown>;
    expect(plain).toMatchObject({ onstart: 'echo hi' });
    expect(plain).not.toHaveProperty('args');
    expect(plain).not.toHaveProperty('entrypoint');
  });
});
