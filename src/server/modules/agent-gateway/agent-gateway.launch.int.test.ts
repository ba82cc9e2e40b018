// The launch mode reaches the agent: an instance created as the official client creates it with
// `--entrypoint /bin/sh --args -c '…'` (runtype `args`, the entrypoint sent as onstart) is handed
// to its agent with its arguments and entrypoint; an ssh instance with neither field.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { cliCreateBody } from '../../../../test/compat/official-cli.js';
import { agentMachine, renter } from '../../../../test/helpers/market.js';

const P = '/api/agent/v1';

describeEachDb('agent sync: the launch mode of an instance', (dialect) => {
  const t = useTestApp(dialect);

  it('runtype args carries its arguments and entrypoint to the agent; ssh carries neither', async () => {
    const host = await t().user();
    const reg = await t().request('POST', `${P}/register`, {
      key: host.apiKey,
      body: {
        agent_uid: 'agent-launch-0001',
        machines: [0, 1, 2].map((slot) => agentMachine(slot)),
        price_gpu: 0.4,
        price_disk: 0.1,
      },
    });
    expect(reg.status).toBe(200);
    const [m0, m1, m2] = reg.body.machines.map((m: { machine_id: number }) => m.machine_id) as number[];
    const u = await renter(t());
    const create = async (mid: number, body: Record<string, unknown>) => {
      const r = await t().request('PUT', `/api/v0/asks/${mid}/`, {
        key: u.apiKey,
        body: cliCreateBody(body),
      });
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
