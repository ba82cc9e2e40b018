// The instance row says how its host runs it (`machine_runtime`, from the agent's registration)
// and when its host last reported (`host_last_seen`), so a console can say "no isolation" for the
// process runtime and "offline since" for a host out of sight.
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { agentMachine, renter } from '../../../../test/helpers/market.js';

let agents = 0;

async function rentOn(t: TestApp, renterKey: string, runtime: 'process' | 'docker' | undefined) {
  const h = await t.user();
  const r = await t.request('POST', '/api/agent/v1/register', {
    key: h.apiKey,
    body: {
      agent_uid: `agent-runtime-${process.pid}-${++agents}`,
      ...(runtime ? { runtime } : {}),
      price_gpu: 0.4,
      machines: [agentMachine(0)],
    },
  });
  expect(r.status, r.raw).toBe(200);
  const machine = r.body.machines[0].machine_id as number;
  const c = await t.request('PUT', `/api/v0/asks/${machine}/`, {
    key: renterKey,
    body: { image: 'ubuntu:22.04', disk: 10 },
  });
  expect(c.status, c.raw).toBe(200);
  const got = await t.request('GET', `/api/v0/instances/${c.body.new_contract}/`, { key: renterKey });
  expect(got.status, got.raw).toBe(200);
  return got.body.instances as Record<string, unknown>;
}

describeEachDb('instance row: machine_runtime and host_last_seen', (dialect) => {
  const t = useTestApp(dialect);
  let me: { id: number; apiKey: string };
  beforeAll(async () => {
    me = await renter(t());
  });

  it('carries the runtime its host registered with, and when the host last reported', async () => {
    const proc = await rentOn(t(), me.apiKey, 'process');
    expect(proc.machine_runtime).toBe('process');
    const m = await t()
      .deps.db.selectFrom('machines')
      .select('last_heartbeat_at')
      .where('id', '=', proc.machine_id as number)
      .executeTakeFirstOrThrow();
    expect(m.last_heartbeat_at).not.toBeNull();
    expect(proc.host_last_seen).toBe(m.last_heartbeat_at! / 1000);
    expect((await rentOn(t(), me.apiKey, 'docker')).machine_runtime).toBe('docker');
    // An agent that does not say: null, never a guess.
    expect((await rentOn(t(), me.apiKey, undefined)).machine_runtime).toBeNull();
  });
});
