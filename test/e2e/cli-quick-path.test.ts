// The instance quick path (search, create, poll, connect, stop, destroy), driven only through the built CLI: a real
// `serve`, a real `openrig agent` simulating an RTX 4090, and a renter who registers an SSH key,
// searches, creates with --wait, reads the ssh command, logs in over SSH, stops, starts, waits,
// destroys; then the agent dies and `wait` stops on `unknown` with a clear message and exit 1.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BIN,
  endInstanceGroups,
  runCli,
  startProc,
  waitFor,
  type Proc,
  processAgentArgs,
  waitRegistered,
} from '../helpers/process.js';
import { cli, createUser, hasCommand, makeHome, startWorld, type CliWorld } from './cli-harness.js';

let w: CliWorld;
let agent: Proc;
let stateDir: string | undefined;
let home: string;
let run: (args: string[]) => ReturnType<typeof cli>;

const hasScript = hasCommand('script', ['--version']);
const hasSsh = hasCommand('ssh', ['-V']);

beforeAll(async () => {
  w = await startWorld({
    OPENRIG_HEARTBEAT_S: '1',
    OPENRIG_UNKNOWN_AFTER_S: '3',
    OPENRIG_OFFLINE_AFTER_S: '600',
  });
  const host = await createUser(w, 'host@example.com');
  stateDir = mkdtempSync(path.join(tmpdir(), 'openrig-agent-'));
  agent = startProc(processAgentArgs(w.url, stateDir, { gpus: 'RTX 4090x1', sshBind: null }), {
    OPENRIG_LOG_LEVEL: 'warn',
    OPENRIG_API_KEY: host.api_key,
  });
  await waitRegistered(agent, 30_000);
  const renter = await createUser(w, 'renter@example.com');
  home = makeHome();
  run = (args) => cli(home, args);
  expect((await run(['login', '--url', w.url, '--api-key', renter.api_key])).code).toBe(0);
}, 90_000);
afterAll(() => {
  agent?.child.kill('SIGKILL');
  // The host-dies test kills the agent: its instance's supervisor is still running.
  if (stateDir) endInstanceGroups(stateDir);
  w?.stop();
});

describe('search → create --wait → ssh → stop/start → destroy', { timeout: 120_000 }, () => {
  let offerId: number;
  let instanceId: number;
  let sshPort: number;

  it('ssh-key add registers ~/.ssh/id_ed25519.pub', async () => {
    expect((await run(['ssh-key', 'add'])).code).toBe(0);
  });

  it('search offers finds the agent machine, in a table with units', async () => {
    const q = 'gpu_name=RTX_4090 num_gpus>=1 gpu_ram>=20 verified=any';
    const raw = await run(['search', 'offers', q, '-o', 'dph_total', '--raw']);
    expect(raw.code).toBe(0);
    const offers = (JSON.parse(raw.stdout) as { offers: { id: number; gpu_name: string }[] }).offers;
    expect(offers.length).toBe(1);
    expect(offers[0]!.gpu_name).toBe('RTX 4090');
    offerId = offers[0]!.id;
    const human = await run(['search', 'offers', q, '-o', 'dph_total']);
    expect(human.stdout).toMatch(/^\s*ID\s+GPUs\s+VRAM/);
    expect(human.stdout).toMatch(
      new RegExp(`^\\s*${offerId}\\s+1x RTX 4090\\s+24 GB\\s.*\\$0\\.5\\d*\\s`, 'm'),
    );
    // The default filters hold back unverified machines, and the CLI says how many would match.
    const none = await run(['search', 'offers', 'gpu_name=RTX_4090']);
    expect(none.stdout, none.stderr).toMatch(/^No verified offers match\. 1 unverified offer/);
    expect(none.stdout).toContain('add verified=any');
    expect((await run(['search', 'offers', 'gpu_ram>=48 verified=any'])).stdout).toBe('No offers match.\n');
  }, 60_000);

  it('create instance --wait polls until running and prints the ssh command', async () => {
    const r = await run([
      'create',
      'instance',
      String(offerId),
      '--image',
      'ubuntu:22.04',
      '--disk',
      '10',
      '--label',
      'e2e',
      '--onstart-cmd',
      'echo ready',
      '--wait',
      '--interval',
      '1',
    ]);
    expect(r.code).toBe(0);
    instanceId = Number(/^Created instance (\d+) from offer/m.exec(r.stdout)![1]);
    const m = /^\s+ssh -p (\d+) root@127\.0\.0\.1$/m.exec(r.stdout);
    expect(m).not.toBeNull();
    sshPort = Number(m![1]);
    // Not a terminal: no spinner on stdout, state changes on stderr.
    expect(r.stdout).not.toContain('\r');
    expect(r.stderr).toContain(`instance ${instanceId}: running`);
  });

  it('show instances and show instance describe it; ssh-url prints the URL', async () => {
    const list = await run(['show', 'instances']);
    expect(list.stdout).toMatch(
      new RegExp(
        `^\\s*${instanceId}\\s+\\d+\\s+running\\s+1x RTX 4090\\s.*ubuntu:22\\.04\\s+127\\.0\\.0\\.1:${sshPort}\\s+(just now|\\d+s ago)\\s+e2e$`,
        'm',
      ),
    );
    const one = await run(['show', 'instance', String(instanceId)]);
    expect(one.stdout).toMatch(/^Status:\s+running$/m);
    expect(one.stdout).toMatch(new RegExp(`^SSH:\\s+ssh -p ${sshPort} root@127\\.0\\.0\\.1$`, 'm'));
    expect((await run(['ssh-url', String(instanceId)])).stdout).toBe(`ssh://root@127.0.0.1:${sshPort}\n`);
    const missing = await run(['show', 'instance', '999']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('instance 999 not found');
    const missingRaw = await run(['show', 'instance', '999', '--raw']);
    expect(missingRaw.code).toBe(1);
    expect(JSON.parse(missingRaw.stdout)).toEqual({ instances: null });
  }, 60_000);

  it.runIf(hasSsh)(
    'ssh runs a command in the instance with the system ssh and returns its exit code',
    async () => {
      const opts = [
        '-i',
        path.join(home, '.ssh', 'id_ed25519'),
        '-o',
        'StrictHostKeyChecking=no',
        '-o',
        'UserKnownHostsFile=/dev/null',
        '-o',
        'LogLevel=ERROR',
      ];
      const r = await run(['ssh', String(instanceId), ...opts, '--', 'echo', 'hello-from-instance']);
      expect(r.stdout).toBe('hello-from-instance\n');
      expect(r.code).toBe(0);
      expect((await run(['ssh', String(instanceId), ...opts, '--', 'exit', '3'])).code).toBe(3);
    },
  );

  it('stop, then ssh-url says it is stopped; start and wait bring it back', async () => {
    expect((await run(['stop', 'instance', String(instanceId)])).stdout).toBe(
      `instance ${instanceId}: stopping\n`,
    );
    await waitFor(
      async () => /^Status:\s+stopped$/m.test((await run(['show', 'instance', String(instanceId)])).stdout),
      'stopped',
      30_000,
      500,
    );
    const url = await run(['ssh-url', String(instanceId)]);
    expect(url.code).toBe(1);
    expect(url.stderr).toContain(`openrig start instance ${instanceId}`);
    const w1 = await run(['wait', String(instanceId), '--interval', '1']);
    expect(w1.code).toBe(1);
    expect(w1.stderr).toContain('is stopped');
    expect((await run(['start', 'instance', String(instanceId)])).code).toBe(0);
    const w2 = await run(['wait', String(instanceId), '--interval', '1', '--timeout', '60']);
    expect(w2.code, w2.stderr).toBe(0);
    expect(w2.stdout).toMatch(/ssh -p \d+ root@127\.0\.0\.1/);
  }, 120_000);

  it('destroy several: reports each, exit 1 when one fails', async () => {
    const r = await run(['destroy', 'instance', String(instanceId), '424242']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe(`instance ${instanceId}: destroyed\n`);
    expect(r.stderr).toContain('instance 424242:');
    expect((await run(['show', 'instances'])).stdout).toContain('No instances.');
  });

  it('when the host dies, wait stops on unknown, says to destroy and retry, exit 1', async () => {
    const c = await run([
      'create',
      'instance',
      String(offerId),
      '--image',
      'ubuntu:22.04',
      '--disk',
      '10',
      '--wait',
      '--interval',
      '1',
    ]);
    expect(c.code).toBe(0);
    const id = Number(/^Created instance (\d+)/m.exec(c.stdout)![1]);
    agent.child.kill('SIGKILL');
    await waitFor(
      async () => /^Status:\s+unknown/m.test((await run(['show', 'instance', String(id)])).stdout),
      'unknown',
      30_000,
      500,
    );
    const r = await run(['wait', String(id), '--interval', '1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`instance ${id} is unknown`);
    expect(r.stderr).toContain(`destroy it (openrig destroy instance ${id}) and try another offer`);
    expect((await run(['destroy', 'instance', String(id)])).code).toBe(0);
  }, 90_000);

  it.runIf(hasScript)(
    'on a terminal, wait draws a live spinner with state and elapsed time, then times out clearly',
    async () => {
      // A machine with no agent: its instance stays provisioning, so the spinner has time to turn.
      const m = await runCli([
        'admin',
        'create-machines',
        '--data',
        w.data,
        '--owner-email',
        'host@example.com',
        '--gpu-name',
        'RTX 3090',
        '--num-gpus',
        '1',
        '--count',
        '1',
        '--price-gpu',
        '0.3',
      ]);
      const machineId = (JSON.parse(m.stdout) as { machine_ids: number[] }).machine_ids[0]!;
      const offers = JSON.parse(
        (await run(['search', 'offers', `machine_id=${machineId} verified=any`, '--raw'])).stdout,
      ) as { offers: { id: number }[] };
      const c = await run([
        'create',
        'instance',
        String(offers.offers[0]!.id),
        '--image',
        'ubuntu:22.04',
        '--disk',
        '10',
      ]);
      const id = Number(/^Created instance (\d+)/m.exec(c.stdout)![1]);
      // `script` gives the CLI a pseudo-terminal as stdout.
      const cmd = ['node', BIN, 'wait', String(id), '--interval', '1', '--timeout', '3']
        .map((a) => `'${a}'`)
        .join(' ');
      const r = await runProgram('script', ['-qec', cmd, '/dev/null'], {
        HOME: home,
        XDG_CONFIG_HOME: '',
        OPENRIG_URL: '',
        OPENRIG_API_KEY: '',
      });
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(
        new RegExp(`\\r\\u001b\\[2K[|/\\\\-] instance ${id}: provisioning \\(\\d+s\\)`),
      );
      // Several different frames: the spinner turned.
      // eslint-disable-next-line no-control-regex
      expect(new Set(r.stdout.match(/\r\u001b\[2K[|/\\-]/g)).size).toBeGreaterThan(1);
      expect(r.stdout).toContain(`instance ${id} is still provisioning after`);
      expect((await run(['destroy', 'instance', String(id)])).code).toBe(0);
    },
    90_000,
  );
});

function runProgram(
  file: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => resolve({ code, stdout: out }));
  });
}
