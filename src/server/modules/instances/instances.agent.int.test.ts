// Several instances on one machine, one of them active (a stopped instance releases its machine):
// the agent protocol hands the agent every live instance with its own desired state, and each
// moves by its own reports.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { renter } from '../../../../test/helpers/market.js';

const P = '/api/agent/v1';

describeEachDb('agent sync with stopped and active instances on one machine', (dialect) => {
  const t = useTestApp(dialect);

  it('the agent keeps the stopped one stopped and runs the active one; a swap follows the clients', async () => {
    const host = await t().user();
    const reg = await t().request('POST', `${P}/register`, {
      key: host.apiKey,
      body: {
        agent_uid: 'agent-multi-0001',
        machines: [
          {
            slot: 0,
            hostname: 'h0',
            gpu_name: 'RTX 4090',
            num_gpus: 1,
            gpu_ram: 24564,
            cpu_ram: 64000,
            disk_space: 500,
          },
        ],
        price_gpu: 0.4,
        price_disk: 0.1,
      },
    });
    expect(reg.status).toBe(200);
    const mid = reg.body.machines[0].machine_id as number;
    const sync = async (instances: unknown[]) => {
      const r = await t().request('POST', `${P}/sync`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-multi-0001', machine_ids: [mid], instances },
      });
      expect(r.status).toBe(200);
      return Object.fromEntries(
        r.body.instances.map((i: { id: number; desired: string }) => [i.id, i.desired]),
      );
    };
    const [a, b] = [await renter(t()), await renter(t())];
    const ia = (await t().request('PUT', `/api/v0/asks/${mid}/`, { key: a.apiKey, body: { image: 'x' } }))
      .body.new_contract as number;
    await sync([{ id: ia, state: 'running', ssh_port: 40022 }]);
    expect(
      (await t().request('PUT', `/api/v0/instances/${ia}/`, { key: a.apiKey, body: { state: 'stopped' } }))
        .status,
    ).toBe(200);
    const ib = (await t().request('PUT', `/api/v0/asks/${mid}/`, { key: b.apiKey, body: { image: 'y' } }))
      .body.new_contract as number;
    expect(ib).toBeTypeOf('number');

    expect(await sync([{ id: ia, state: 'running', ssh_port: 40022 }])).toEqual({
      [ia]: 'stopped',
      [ib]: 'running',
    });
    // The agent halts A and brings B up: each report moves its own instance.
    expect(
      await sync([
        { id: ia, state: 'stopped' },
        { id: ib, state: 'running', ssh_port: 40023 },
      ]),
    ).toEqual({ [ia]: 'stopped', [ib]: 'running' });
    const rows = await t()
      .deps.db.selectFrom('instances')
      .select(['id', 'actual_status', 'intended_status'])
      .where('machine_id', '=', mid)
      .orderBy('id')
      .execute();
    expect(rows).toEqual([
      { id: ia, actual_status: 'stopped', intended_status: 'stopped' },
      { id: ib, actual_status: 'running', intended_status: 'running' },
    ]);
    // B stops, A starts again: the agent is told to swap them.
    expect(
      (await t().request('PUT', `/api/v0/instances/${ib}/`, { key: b.apiKey, body: { state: 'stopped' } }))
        .status,
    ).toBe(200);
    expect(
      (await t().request('PUT', `/api/v0/instances/${ia}/`, { key: a.apiKey, body: { state: 'running' } }))
        .status,
    ).toBe(200);
    expect(
      await sync([
        { id: ia, state: 'stopped' },
        { id: ib, state: 'running', ssh_port: 40023 },
      ]),
    ).toEqual({ [ia]: 'running', [ib]: 'stopped' });
    await sync([
      { id: ia, state: 'loading' },
      { id: ib, state: 'stopped' },
    ]);
    await sync([
      { id: ia, state: 'running', ssh_port: 40022 },
      { id: ib, state: 'stopped' },
    ]);
    const after = await t()
      .deps.db.selectFrom('instances')
      .select(['id', 'actual_status'])
      .where('machine_id', '=', mid)
      .orderBy('id')
      .execute();
    expect(after).toEqual([
      { id: ia, actual_status: 'running' },
      { id: ib, actual_status: 'stopped' },
    ]);
  });
});
