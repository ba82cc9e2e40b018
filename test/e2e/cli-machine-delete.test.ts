// A host deletes a machine through the built CLI, against a real `serve` and a real `openrig
// agent` (process runtime): without a terminal the CLI asks for --yes; while a renter's instance
// runs on the machine the server refuses (exit 1, the reason on stderr) and nothing changes; once
// it is destroyed the machine goes, leaves the host's list and the search, and its agent logs the
// refusal and exits 1 with nothing left to serve.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Proc } from '../helpers/process.js';
import { cli, hasStack, startAgentWorld, type AgentWorld } from './cli-harness.js';
import type { Machine } from '../../src/contract/api-types.js';

const ENV = { OPENRIG_SECRET_KEY: '5d'.repeat(32), OPENRIG_HEARTBEAT_S: '0.5' };

let w: AgentWorld;
let agent: Proc | undefined;
let machine: number;
let home: string;
let hostKey: string;
let renterKey: string;
const as = (args: string[], k: string) => cli(home, args, { OPENRIG_URL: w.url, OPENRIG_API_KEY: k });

beforeAll(async () => {
  w = await startAgentWorld({
    env: ENV,
    host: 'del-host@example.com',
    renter: 'del-renter@example.com',
    // Its refusal of the deleted machine is a line of the log this test reads.
    agentEnv: { OPENRIG_LOG_LEVEL: 'info' },
  });
  ({ agent, machine, home, hostKey, renterKey } = w);
}, 120_000);

afterAll(() => w?.stop());

const searched = async () => {
  const r = await as(['search', 'offers', `machine_id=${machine} verified=any`, '--raw'], renterKey);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { offers: { machine_id: number }[] }).offers.map((o) => o.machine_id);
};

const machineIds = async () =>
  (
    JSON.parse((await as(['show', 'machines', '--raw'], hostKey)).stdout) as { machines: Machine[] }
  ).machines.map((m) => m.id);

describe('delete machine', { timeout: 90_000 }, () => {
  let instance: string;

  it('without a terminal and without --yes: nothing is sent, exit 1 saying to pass --yes', async () => {
    const r = await as(['delete', 'machine', String(machine)], hostKey);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`deleting machine ${machine} cannot be undone: pass --yes`);
    expect(hasStack(r.stderr)).toBe(false);
    expect(await machineIds()).toEqual([machine]);
    expect(await searched()).toEqual([machine]);
  });

  it("a renter's running instance: the server refuses, exit 1 with its reason; nothing changes", async () => {
    const c = await as(
      ['create', 'instance', String(machine), '--image', 'ubuntu', '--disk', '5', '--wait'],
      renterKey,
    );
    expect(c.code, `${c.stdout}${c.stderr}`).toBe(0);
    instance = /Created instance (\d+)/.exec(c.stdout)![1]!;
    const r = await as(['delete', 'machine', String(machine), '--yes'], hostKey);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `Machine ${machine} has 1 live instance of a client (running or stopped, not destroyed)`,
    );
    expect(hasStack(r.stderr)).toBe(false);
    expect(await machineIds()).toEqual([machine]);
    const s = await as(['show', 'instance', instance, '--raw'], renterKey);
    expect(s.stdout).toMatch(/"actual_status": ?"running"/);
  });

  it('once the instance is destroyed: deleted, gone from the list and the search; the agent says why and exits 1', async () => {
    expect((await as(['destroy', 'instance', instance], renterKey)).code).toBe(0);
    const r = await as(['delete', 'machine', String(machine), '--yes'], hostKey);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`Machine ${machine} deleted\n`);
    expect(await machineIds()).toEqual([]);
    expect(await searched()).toEqual([]);
    const again = await as(['delete', 'machine', String(machine), '--yes'], hostKey);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('No such machine, or it is not yours');

    const exit = await agent!.exited;
    expect(exit.code).toBe(1);
    const log = agent!.stdout() + agent!.stderr();
    expect(log).toContain(
      `machine ${machine} was deleted by its host: the server refuses it, and this agent serves it no more`,
    );
    expect(log).toContain('every machine of this agent was deleted by its host');
    expect(log).not.toContain('registering again');
  });
});
