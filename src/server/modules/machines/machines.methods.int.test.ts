// A host's machine row says how its agent runs instances (`runtime`) and keeps volumes
// (`volume_method`: size-limited ext4 images or plain directories), as the agent said at its last
// registration; an agent that does not say leaves null, and a method openrig does not know is
// refused.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { agentMachine } from '../../../../test/helpers/market.js';

let agents = 0;

describeEachDb('machine row: runtime and volume_method', (dialect) => {
  const t = useTestApp(dialect);

  it('carries what the agent said at its last registration, and null where it said nothing', async () => {
    const h = await t().user();
    const uid = `agent-methods-${process.pid}-${++agents}`;
    const register = (extra: Record<string, unknown>) =>
      t().request('POST', '/api/agent/v1/register', {
        key: h.apiKey,
        body: { agent_uid: uid, ...extra, machines: [agentMachine(0)] },
      });
    const first = await register({ runtime: 'docker', volume_method: 'ext4-loop' });
    expect(first.status, first.raw).toBe(200);
    const id = first.body.machines[0].machine_id as number;
    const show = async () => {
      const r = await t().request('GET', `/api/v0/machines/${id}`, { key: h.apiKey });
      expect(r.status, r.raw).toBe(200);
      return r.body[0] as Record<string, unknown>;
    };
    expect(await show()).toMatchObject({ runtime: 'docker', volume_method: 'ext4-loop' });

    // The same agent restarted on the process runtime: directories, said again.
    expect((await register({ runtime: 'process', volume_method: 'directory' })).status).toBe(200);
    expect(await show()).toMatchObject({ runtime: 'process', volume_method: 'directory' });

    // An older agent that says nothing of volumes: null, never the last value kept.
    expect((await register({ runtime: 'process' })).status).toBe(200);
    expect((await show()).volume_method).toBeNull();

    const bad = await register({ runtime: 'process', volume_method: 'zfs' });
    expect(bad.status).toBe(400);
    expect(bad.body.msg).toMatch(/volume_method/);
    expect((await show()).volume_method).toBeNull();
  });
});
