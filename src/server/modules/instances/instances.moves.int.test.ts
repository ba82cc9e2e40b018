// The functions the agent gateway calls, tested as the agent calls them: conditional moves, the state machine, sweeps, and billing
// settled at each move so compute is charged exactly while running.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { offers, renter } from '../../../../test/helpers/market.js';
import {
  instancesForMachine,
  reportInstanceStatus,
  setActualStatus,
  sweepMachineInstances,
} from './instances.moves.js';

async function fresh(t: TestApp): Promise<{ id: number; machine: number }> {
  const u = await renter(t);
  const [machine] = await offers(t, 1, { priceGpu: 3.6, priceDisk: 0 });
  const r = await t.request('PUT', `/api/v0/asks/${machine}/`, {
    key: u.apiKey,
    body: { image: 'img', env: { A: '1', '-p 8080:8080': '1' }, onstart: 'echo hi' },
  });
  expect(r.status).toBe(200);
  return { id: r.body.new_contract, machine: machine! };
}

const row = (t: TestApp, id: number) =>
  t.deps.db.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

describeEachDb('instance moves (agent side)', (dialect) => {
  const t = useTestApp(dialect);

  it('moves only from the expected status, and never a destroyed instance', async () => {
    const { id } = await fresh(t());
    expect(await setActualStatus(t().deps, id, 'loading', 'running')).toBe(false);
    expect((await row(t(), id)).actual_status).toBeNull();
    expect(await setActualStatus(t().deps, id, null, 'loading', { status_msg: 'pulling' })).toBe(true);
    expect(await row(t(), id)).toMatchObject({ actual_status: 'loading', status_msg: 'pulling' });
    const both = await Promise.all([
      setActualStatus(t().deps, id, 'loading', 'running'),
      setActualStatus(t().deps, id, 'loading', 'exited'),
    ]);
    expect(both.filter(Boolean)).toHaveLength(1);
    await t()
      .deps.db.updateTable('instances')
      .set({ destroyed_at: t().clock.now() })
      .where('id', '=', id)
      .execute();
    const now = (await row(t(), id)).actual_status as 'running' | 'exited';
    expect(await setActualStatus(t().deps, id, now, 'offline')).toBe(false);
  });

  it('decides reports with the state machine and stores the connection fields', async () => {
    const { id } = await fresh(t());
    expect((await reportInstanceStatus(t().deps, id, 'stopped')).kind).toBe('reject');
    expect(await reportInstanceStatus(t().deps, id, 'loading')).toEqual({ kind: 'apply', next: 'loading' });
    expect((await reportInstanceStatus(t().deps, id, 'loading')).kind).toBe('noop');
    const ports = { '22/tcp': [{ HostIp: '0.0.0.0', HostPort: '40100' }] };
    expect(
      await reportInstanceStatus(t().deps, id, 'running', { ssh_host: 'h.example', ssh_port: 40100, ports }),
    ).toEqual({ kind: 'apply', next: 'running' });
    expect(await row(t(), id)).toMatchObject({
      actual_status: 'running',
      ssh_host: 'h.example',
      ssh_port: 40100,
      ports: JSON.stringify(ports),
    });
    expect(await reportInstanceStatus(t().deps, id, 'exited', { status_msg: 'crashed' })).toEqual({
      kind: 'apply',
      next: 'exited',
    });
    const again = await reportInstanceStatus(t().deps, id, 'running');
    expect(again.kind).toBe('reject');
    expect((await row(t(), id)).actual_status).toBe('exited');
    expect((await reportInstanceStatus(t().deps, 99999999, 'running')).kind).toBe('reject');
  });

  it('sweeps a quiet machine: live instances unknown, then everything offline; a survivor comes back', async () => {
    const { id, machine } = await fresh(t());
    await reportInstanceStatus(t().deps, id, 'running');
    expect(await sweepMachineInstances(t().deps, machine, 'unknown')).toEqual([id]);
    expect(await sweepMachineInstances(t().deps, machine, 'unknown')).toEqual([]);
    expect((await reportInstanceStatus(t().deps, id, 'loading')).kind).toBe('reject');
    expect(await sweepMachineInstances(t().deps, machine, 'offline')).toEqual([id]);
    expect((await row(t(), id)).actual_status).toBe('offline');
    // Its agent came back and still runs it (re-adopted): running again.
    expect((await reportInstanceStatus(t().deps, id, 'running')).kind).toBe('apply');
    expect((await row(t(), id)).actual_status).toBe('running');
  });

  it('charges compute from the moment the instance runs until it stops running', async () => {
    const { id } = await fresh(t());
    t().clock.advance(30_000); // provisioning: no compute
    await reportInstanceStatus(t().deps, id, 'running');
    expect((await row(t(), id)).accrued_micros).toBe(0);
    t().clock.advance(20_000); // running: 20 s × 1000 µ$/s
    await reportInstanceStatus(t().deps, id, 'exited');
    expect((await row(t(), id)).accrued_micros).toBe(20_000);
    t().clock.advance(60_000);
    await sweepMachineInstances(t().deps, (await row(t(), id)).machine_id, 'offline');
    expect((await row(t(), id)).accrued_micros).toBe(20_000);
  });

  it('hands the agent what to run', async () => {
    const { id, machine } = await fresh(t());
    const list = await instancesForMachine(t().deps.db, machine);
    expect(list).toEqual([
      expect.objectContaining({
        id,
        image: 'img',
        onstart: 'echo hi',
        env: { A: '1', '-p 8080:8080': '1' },
        actual_status: null,
        intended_status: 'running',
      }),
    ]);
  });
});
