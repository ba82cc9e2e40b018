// update instance end to end: a real `serve`, a real `openrig agent` on the process runtime and the
// built CLI. After an update (the official CLI's request, then `openrig update instance … --wait`)
// the instance runs again on the same machine and SSH port, and what runs is the new onstart with
// the new env, in a directory that started afresh; a stopped instance stays stopped and its next
// start runs the new configuration; bad options send nothing (exit 2) and the server's refusals
// are exit 1 with its message.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { callApi, waitFor, type Proc } from '../helpers/process.js';
import { cli, startAgentWorld, type AgentWorld, expectUsageError } from './cli-harness.js';
import type { Instance } from '../../src/contract/api-types.js';

const ENV = { OPENRIG_SECRET_KEY: '5d'.repeat(32), OPENRIG_HEARTBEAT_S: '0.5' };

let w: AgentWorld;
let agent: Proc | undefined;
let stateDir: string;
let machine: number;
let home: string;
let key: string;
let id: number;
const as = (args: string[]) => cli(home, args, { OPENRIG_URL: w.url, OPENRIG_API_KEY: key });
const show = async (): Promise<Instance> =>
  (await callApi(w.url, 'GET', `/api/v0/instances/${id}/`, key)).body.instances as Instance;
const rootFile = (name: string) => path.join(stateDir, 'instances', String(id), 'root', name);
const read = (name: string) => (existsSync(rootFile(name)) ? readFileSync(rootFile(name), 'utf8') : null);
const mainPid = () => readFileSync(path.join(stateDir, 'instances', String(id), 'main.pid'), 'utf8').trim();
/** Waits for `ok`; on a timeout says what it last read and what the agent said. */
async function until<T>(fn: () => T | Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> {
  let last: T | undefined;
  try {
    const hit = await waitFor(
      async () => {
        last = await fn();
        return ok(last) ? { v: last } : null;
      },
      what,
      30_000,
      100,
    );
    return hit.v;
  } catch (err) {
    throw new Error(
      `${(err as Error).message}; last ${JSON.stringify(last)}; agent said: ${agent?.stdout()}${agent?.stderr()}`,
    );
  }
}

beforeAll(async () => {
  w = await startAgentWorld({ env: ENV, host: 'upd-host@example.com', renter: 'upd-renter@example.com' });
  ({ agent, stateDir, machine, home, renterKey: key } = w);
}, 120_000);

afterAll(() => w?.stop());

describe('update instance', { timeout: 120_000 }, () => {
  let sshPort: number | null = null;

  it("the official CLI's request: the new onstart runs with the new env, in a fresh directory, same SSH port", async () => {
    const c = await as([
      'create',
      'instance',
      String(machine),
      '--image',
      'ubuntu:22.04',
      '--env',
      '-e MSG=one',
      '--onstart-cmd',
      'echo "v1 $MSG" > v1.txt; sleep 600',
      '--wait',
    ]);
    expect(c.code, `${c.stdout}${c.stderr}`).toBe(0);
    id = Number(/Created instance (\d+)/.exec(c.stdout)![1]);
    expect(
      await until(
        () => read('v1.txt'),
        (s) => s !== null,
        'the first onstart',
      ),
    ).toBe('v1 one\n');
    const first = await show();
    sshPort = first.ssh_port ?? null;
    const pid = mainPid();

    // vastai update instance ID --env '{"MSG": "two"}' --onstart 'echo "v2 $MSG" > v2.txt; sleep 600'
    const r = await callApi(w.url, 'PUT', `/api/v0/instances/update_template/${id}/`, key, {
      id,
      env: { MSG: 'two' },
      onstart: 'echo "v2 $MSG" > v2.txt; sleep 600',
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.updated_instance).toMatchObject({ id, actual_status: 'loading' });
    const after = await until(show, (i) => i.actual_status === 'running', 'the new container to run');
    expect(after).toMatchObject({ machine_id: machine, ssh_port: sshPort });
    expect(
      await until(
        () => read('v2.txt'),
        (s) => s !== null,
        'the new onstart',
      ),
    ).toBe('v2 two\n');
    expect(read('v1.txt')).toBeNull();
    expect(mainPid()).not.toBe(pid);
  });

  it('openrig update instance … --wait: prints the update, waits until the new container runs', async () => {
    const r = await as([
      'update',
      'instance',
      String(id),
      '--env',
      '-e MSG=three',
      '--onstart-cmd',
      'echo "v3 $MSG" > v3.txt; sleep 600',
      '--wait',
    ]);
    expect(r.code, `${r.stdout}${r.stderr}`).toBe(0);
    expect(r.stdout).toContain(`Instance ${id} updated; its host recreates the container`);
    expect(r.stdout).toContain(`-p ${sshPort}`);
    expect(
      await until(
        () => read('v3.txt'),
        (s) => s !== null,
        'the third onstart',
      ),
    ).toBe('v3 three\n');
    expect(read('v2.txt')).toBeNull();
    expect(await show()).toMatchObject({ actual_status: 'running', ssh_port: sshPort });
  });

  it('a stopped instance stays stopped; its next start runs the new configuration', async () => {
    expect((await as(['stop', 'instance', String(id), '--wait'])).code).toBe(0);
    const r = await as([
      'update',
      'instance',
      String(id),
      '--onstart-cmd',
      'echo "v4 $MSG" > v4.txt; sleep 600',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      `Instance ${id} updated; it stays stopped, and its next start runs the new configuration (its disk starts afresh).\n`,
    );
    // The agent replaces it without starting it: the directory empties, nothing runs.
    await until(
      () => read('v3.txt'),
      (s) => s === null,
      'the old files to go',
    );
    expect((await show()).actual_status).toBe('stopped');
    expect(read('v4.txt')).toBeNull();
    expect((await as(['start', 'instance', String(id), '--wait'])).code).toBe(0);
    expect(
      await until(
        () => read('v4.txt'),
        (s) => s !== null,
        'the new onstart',
      ),
    ).toBe('v4 three\n');
  });

  it.each([
    [['update', 'instance', '1'], 'nothing to update'],
    [['update', 'instance', '1', '--env', '-x 1'], '--env: '],
    [['update', 'instance', 'x', '--image', 'i'], 'instance ID'],
  ])('usage error %j: exit 2, says why, sends nothing', async (args, msg) => {
    const r = await as(args);
    expectUsageError(r, msg);
  });

  it("the server's refusal is exit 1 with its message", async () => {
    const r = await as(['update', 'instance', String(id), '--image', 'two words']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^openrig: image must be one image reference/);
    const gone = await as(['update', 'instance', '99999', '--image', 'x']);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toBe('openrig: No such instance: 99999\n');
  });
});
