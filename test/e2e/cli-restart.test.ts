// `reboot|recycle instance [--wait]` through the built CLI against a real `serve`, with the host's
// agent played by the test over the agent protocol, so that every step happens when the test says:
// the instance reads loading from the request; asking again says so and the other kind waits; the
// wait shows the host's steps and does not end while the old container still runs; it ends once
// the host has answered and reported running, and a failed recycle ends it with why and exit 1.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProc, waitFor, type Proc } from '../helpers/process.js';
import { cli, createUser, makeHome, startWorld, type CliWorld } from './cli-harness.js';

const UID = 'agent-cli-restart-01';
let w: CliWorld;
let home: string;
let hostKey: string;
let mid: number;
let id: number;
const run = (args: string[]) => cli(home, args);

/** The agent's calls, made by the test. */
async function agent(call: 'register' | 'sync' | 'results', body: Record<string, unknown>) {
  const res = await fetch(`${w.url}/api/agent/v1/${call}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${hostKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ agent_uid: UID, ...body }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as {
    machines: { machine_id: number }[];
    requests: { id: number; instance_id: number; kind: string }[];
  };
}
const sync = (instances: unknown[]) => agent('sync', { machine_ids: [mid], instances });
const running = () => ({
  id,
  state: 'running',
  ssh_port: 41999,
  status_msg: 'running; SSH accepts connections',
});
const answer = (rid: number, ok: boolean, output: string) =>
  agent('results', { machine_ids: [mid], results: [{ id: rid, ok, output }] });

/** `openrig …` in the background, as the renter. */
function background(args: string[]): Proc {
  return startProc(args, { HOME: home, XDG_CONFIG_HOME: '', OPENRIG_URL: '', OPENRIG_API_KEY: '' });
}

beforeAll(async () => {
  // The sweeps never mark the scripted host quiet during the test.
  w = await startWorld({ OPENRIG_UNKNOWN_AFTER_S: '600', OPENRIG_OFFLINE_AFTER_S: '1200' });
  hostKey = (await createUser(w, 'restart-host@example.com')).api_key;
  const reg = await agent('register', {
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
  });
  mid = reg.machines[0]!.machine_id;
  const renter = await createUser(w, 'restart-renter@example.com');
  home = makeHome();
  expect((await run(['login', '--url', w.url, '--api-key', renter.api_key])).code).toBe(0);
  expect((await run(['ssh-key', 'add'])).code).toBe(0);
  const offers = JSON.parse((await run(['search', 'offers', 'verified=any', '--raw'])).stdout) as {
    offers: { id: number; machine_id: number }[];
  };
  const offer = offers.offers.find((o) => o.machine_id === mid)!;
  const c = await run(['create', 'instance', String(offer.id), '--image', 'ubuntu:22.04']);
  expect(c.code, c.stderr).toBe(0);
  id = Number(/Created instance (\d+)/.exec(c.stdout)![1]);
  await sync([{ id, state: 'loading', status_msg: 'preparing the instance' }]);
  await sync([running()]);
}, 60_000);
afterAll(() => w?.stop());

describe('reboot and recycle, the host played by the test', { timeout: 60_000 }, () => {
  it('loading from the request; a repeat says so; --wait ends only once the host has done it', async () => {
    const r1 = await run(['reboot', 'instance', String(id)]);
    expect([r1.code, r1.stdout]).toEqual([0, `instance ${id}: reboot requested\n`]);
    const shown = await run(['show', 'instance', String(id)]);
    expect(shown.stdout).toMatch(/^Status:\s+loading$/m);
    expect(shown.stdout).toMatch(/^Message:\s+reboot requested; waiting for the host to carry it out$/m);
    expect(shown.stdout).toMatch(/^SSH:\s+-$/m);
    const r2 = await run(['reboot', 'instance', String(id)]);
    expect([r2.code, r2.stdout]).toEqual([0, `instance ${id} is already being rebooted\n`]);
    const r3 = await run(['recycle', 'instance', String(id)]);
    expect(r3.code).toBe(1);
    expect(r3.stderr).toMatch(
      new RegExp(
        `^openrig: Cannot recycle instance ${id} while a reboot of it is under way \\(asked \\d+ s ago\\)`,
      ),
    );

    const waiting = background(['reboot', 'instance', String(id), '--wait', '--timeout', '60']);
    await waitFor(() => waiting.stderr().includes(`instance ${id}: loading: reboot requested`), 'the wait');
    expect(waiting.stdout()).toBe(`instance ${id} is already being rebooted\n`);
    // The host picks it up; its old container still answers `running`: the wait goes on.
    const req = (await sync([running()])).requests.find((r) => r.instance_id === id)!;
    expect(req.kind).toBe('reboot');
    await sync([{ id, state: 'loading', status_msg: 'rebooting: restarting the container' }]);
    await waitFor(
      () => waiting.stderr().includes(`instance ${id}: loading: rebooting: restarting the container (`),
      'the step to show',
    );
    await sync([running()]); // done here, not answered yet
    await new Promise((r) => setTimeout(r, 1500));
    expect(waiting.child.exitCode).toBeNull();
    await answer(req.id, true, 'rebooted: the container started again at 2026-11-24T15:00:00.000Z\n');
    await sync([running()]);
    const { code } = await waiting.exited;
    expect(code, waiting.stderr()).toBe(0);
    expect(waiting.stdout()).toMatch(
      new RegExp(
        `instance ${id} is rebooted and running again \\(after \\d+s\\)\\. Connect with:\\n  ssh -p 41999 root@`,
      ),
    );
    expect(waiting.stderr()).toMatch(new RegExp(`instance ${id}: running: running; SSH accepts connections`));
  });

  it('a recycle whose image could not be pulled: the old container runs on; --wait says why, exit 1', async () => {
    const waiting = background(['recycle', 'instance', String(id), '--wait', '--timeout', '60']);
    await waitFor(() => waiting.stderr().includes(`instance ${id}: loading: recycle requested`), 'the wait');
    const req = (await sync([running()])).requests.find((r) => r.instance_id === id)!;
    expect(req.kind).toBe('recycle');
    await sync([{ id, state: 'loading', status_msg: 'recycling: pulling ubuntu:22.04: 312/845 MB' }]);
    await waitFor(
      () => waiting.stderr().includes('loading: recycling: pulling ubuntu:22.04: 312/845 MB ('),
      'the pull progress to show',
    );
    await answer(req.id, false, 'pull access denied for ubuntu, repository does not exist');
    await sync([running()]);
    const { code } = await waiting.exited;
    expect(code).toBe(1);
    expect(waiting.stderr()).toMatch(
      new RegExp(
        `openrig: instance ${id}: the recycle failed: pull access denied for ubuntu, repository does not exist; the instance runs as it did before\\n$`,
      ),
    );
    expect((await run(['show', 'instance', String(id)])).stdout).toMatch(/^Status:\s+running$/m);
  });

  it('a reboot that left nothing running: exited with why, and the wait says how to bring it back', async () => {
    const waiting = background(['reboot', 'instance', String(id), '--wait', '--timeout', '60']);
    await waitFor(() => waiting.stderr().includes(`instance ${id}: loading`), 'the wait');
    const req = (await sync([running()])).requests.find((r) => r.instance_id === id)!;
    await answer(req.id, false, 'the container did not start');
    await sync([{ id, state: 'exited', status_msg: 'reboot failed: the container did not start' }]);
    const { code } = await waiting.exited;
    expect(code).toBe(1);
    expect(waiting.stderr()).toContain(
      `openrig: instance ${id}: the reboot failed: the container did not start; the instance is exited now. Start it again (openrig start instance ${id}) or destroy it (openrig destroy instance ${id}).\n`,
    );
    const again = await run(['reboot', 'instance', String(id)]);
    expect([again.code, again.stderr]).toEqual([1, 'openrig: Cannot reboot an instance in state exited\n']);
  });
});
