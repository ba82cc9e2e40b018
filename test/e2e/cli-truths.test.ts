// Small truths of the built CLI against a real `serve`, the host's agent played by the test:
// `openrig execute` prints the command's output as the host sent it and exits with the remote
// command's status, as `openrig ssh` does (0 when it succeeded, its code when it failed); the
// offer table's VRAM is the console's figure (24 GB for the 24564 MiB nvidia-smi reports).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProc, waitFor } from '../helpers/process.js';
import { cli, createUser, makeHome, startWorld, type CliWorld } from './cli-harness.js';

const UID = 'agent-cli-execute-01';
let w: CliWorld;
let home: string;
let hostKey: string;
let mid: number;
let id: number;
const run = (args: string[]) => cli(home, args);

async function agent(call: 'register' | 'sync' | 'results', body: Record<string, unknown>) {
  const res = await fetch(`${w.url}/api/agent/v1/${call}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${hostKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ agent_uid: UID, ...body }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as {
    machines: { machine_id: number }[];
    requests: { id: number; instance_id: number; kind: string; argv?: string[] }[];
  };
}
const running = () => ({ id, state: 'running', ssh_port: 41998, status_msg: 'running' });
const sync = () => agent('sync', { machine_ids: [mid], instances: [running()] });

/** Runs `openrig execute ID CMD` in the background and answers its request with `output`. */
async function execute(command: string, output: string) {
  const p = startProc(['execute', String(id), command], {
    HOME: home,
    XDG_CONFIG_HOME: '',
    OPENRIG_URL: '',
    OPENRIG_API_KEY: '',
  });
  let req: { id: number; kind: string; argv?: string[] } | undefined;
  await waitFor(async () => {
    req = (await sync()).requests.find((r) => r.instance_id === id && r.kind === 'command');
    return req;
  }, 'the command request');
  expect(req!.argv).toEqual(command.split(' '));
  await agent('results', { machine_ids: [mid], results: [{ id: req!.id, ok: true, output }] });
  const { code } = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

beforeAll(async () => {
  w = await startWorld({ OPENRIG_UNKNOWN_AFTER_S: '600', OPENRIG_OFFLINE_AFTER_S: '1200' });
  hostKey = (await createUser(w, 'execute-host@example.com')).api_key;
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
      {
        slot: 1,
        hostname: 'h1',
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
  const renter = await createUser(w, 'execute-renter@example.com');
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
  await sync();
}, 60_000);
afterAll(() => w?.stop());

describe('openrig execute exits with the remote status', { timeout: 60_000 }, () => {
  it('0 and the output when the command succeeded', async () => {
    const r = await execute('ls /root', 'a.txt\nb.txt\n');
    expect([r.code, r.stdout]).toEqual([0, 'a.txt\nb.txt\n']);
  });

  it("the command's code when it failed, its output printed as sent", async () => {
    const out = "ls: cannot access '/nope': No such file or directory\n(exit code 2)\n";
    const r = await execute('ls /nope', out);
    expect([r.code, r.stdout]).toEqual([2, out]);
  });

  it('127 when the command could not start on the host', async () => {
    const r = await execute('du /root', 'spawn du ENOENT(exit code ENOENT)\n');
    expect(r.code).toBe(127);
  });
});

describe('the same VRAM figure as the console', { timeout: 30_000 }, () => {
  it('24564 MiB reads 24 GB in search offers', async () => {
    const r = await run(['search', 'offers', 'verified=any']);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(
      lines.some((l) => /\bVRAM\b/.test(l)),
      r.stdout,
    ).toBe(true);
    const row = lines.find((l) => /RTX 4090/.test(l))!;
    expect(row).toMatch(/\b24 GB\b/);
    expect(row).not.toContain('24.6 GB');
  });
});
