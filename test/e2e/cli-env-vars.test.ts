// Account environment variables through the built CLI against a real `serve` and a real
// `openrig agent` (process runtime): create (the value as an argument, from a pipe), show with
// values hidden and shown, update, delete; then an instance started by the agent sees the
// variables in its environment, its own env winning for the same name, and neither its view nor
// the list shows a value. Bad names are usage errors that send nothing (exit 2); the server's
// refusals are exit 1 with its message.
import { privateRootFlags } from '../../src/agent/runtime-process.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { BIN, ROOT, waitFor } from '../helpers/process.js';
import { cli, startAgentWorld, type AgentWorld, expectUsageError } from './cli-harness.js';
import type { EnvVarsReply } from '../../src/contract/api-types.js';

const ENV = { OPENRIG_SECRET_KEY: '5a'.repeat(32), OPENRIG_HEARTBEAT_S: '0.5' };

let w: AgentWorld;
let stateDir: string;
let machine: number;
let home: string;
let key: string;
const settings = () => ({ OPENRIG_URL: w.url, OPENRIG_API_KEY: key });
const as = (args: string[]) => cli(home, args, settings());

/** The built CLI with `input` on its standard input (a pipe, not a terminal). */
function withStdin(
  args: string[],
  input: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: { ...process.env, HOME: home, XDG_CONFIG_HOME: '', ...settings() },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

beforeAll(async () => {
  w = await startAgentWorld({ env: ENV, host: 'env-host@example.com', renter: 'env-renter@example.com' });
  ({ stateDir, machine, home, renterKey: key } = w);
}, 120_000);

afterAll(() => w?.stop());

const SECRET = 'hf_s3cr3t value';
const PIPED = 'line one\nline two';

describe('env vars', { timeout: 90_000 }, () => {
  it('show env-vars with none: says so', async () => {
    const r = await as(['show', 'env-vars']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('No environment variables\n');
  });

  it('create env-var NAME VALUE, and NAME with the value from a pipe (one final line break dropped)', async () => {
    const a = await as(['create', 'env-var', 'HF_TOKEN', SECRET]);
    expect(a.code, a.stderr).toBe(0);
    expect(a.stdout).toBe('Environment variable HF_TOKEN created\n');
    const b = await withStdin(['create', 'env-var', 'PIPED'], `${PIPED}\n`);
    expect(b.code, b.stderr).toBe(0);
    expect(b.stdout).toBe('Environment variable PIPED created\n');
    for (const [name, value] of [
      ['SHARED', 'from-account'],
      ['HOME', '/from-account'],
    ])
      expect((await as(['create', 'env-var', name!, value!])).code).toBe(0);
  });

  it('show env-vars hides the values, in the table and with --raw; --show-values prints them', async () => {
    const hidden = await as(['show', 'env-vars']);
    expect(hidden.code, hidden.stderr).toBe(0);
    expect(hidden.stdout).toBe(
      [
        'Name      Value',
        'HF_TOKEN  *****',
        'HOME      *****',
        'PIPED     *****',
        'SHARED    *****',
        '',
      ].join('\n'),
    );
    const raw = JSON.parse((await as(['show', 'env-vars', '--raw'])).stdout) as EnvVarsReply;
    expect(raw.secrets).toEqual({ HF_TOKEN: '*****', HOME: '*****', PIPED: '*****', SHARED: '*****' });

    const shown = await as(['show', 'env-vars', '--show-values']);
    expect(shown.stdout).toContain(`HF_TOKEN  ${SECRET}\n`);
    expect(shown.stdout).toContain('PIPED     line one\\nline two\n');
    const all = JSON.parse((await as(['show', 'env-vars', '-s', '--raw'])).stdout) as EnvVarsReply;
    expect(all.secrets).toEqual({
      HF_TOKEN: SECRET,
      HOME: '/from-account',
      PIPED: PIPED,
      SHARED: 'from-account',
    });
  });

  it('update env-var from a pipe; create of an existing name and update of a missing one: exit 1, the server says why', async () => {
    const u = await withStdin(['update', 'env-var', 'PIPED'], PIPED);
    expect(u.code, u.stderr).toBe(0);
    expect(u.stdout).toBe('Environment variable PIPED updated\n');
    const dup = await as(['create', 'env-var', 'HF_TOKEN', 'x']);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toBe(
      'openrig: An environment variable named HF_TOKEN already exists: change its value with update env-var\n',
    );
    const missing = await as(['update', 'env-var', 'NOPE', 'x']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('openrig: You have no environment variable named NOPE\n');
    const reserved = await as(['create', 'env-var', 'CONTAINER_ID', 'x']);
    expect(reserved.code).toBe(2);
    expect(reserved.stderr).toContain('CONTAINER_ID is set by openrig in every instance');
  });

  it('an instance the agent starts sees the variables; its own env wins; its view and the list show no value', async () => {
    const c = await as([
      'create',
      'instance',
      String(machine),
      '--image',
      'ubuntu:22.04',
      '--disk',
      '5',
      '--env',
      'SHARED=from-instance',
      '--onstart-cmd',
      'printf "%s|%s|%s|%s" "$HF_TOKEN" "$PIPED" "$SHARED" "$HOME" > seen.txt',
    ]);
    expect(c.code, `${c.stdout}${c.stderr}`).toBe(0);
    const id = /Created instance (\d+)/.exec(c.stdout)![1]!;
    const seenFile = path.join(stateDir, 'instances', id, 'root', 'seen.txt');
    const seen = await waitFor(
      () => (existsSync(seenFile) ? readFileSync(seenFile, 'utf8') : null),
      'the onstart script to write what it sees',
      30_000,
    );
    const [token, piped, shared, instanceHome] = seen.split('|');
    expect(token).toBe(SECRET);
    expect(piped).toBe(PIPED);
    expect(shared).toBe('from-instance');
    // The process runtime sets HOME to the instance's directory itself, which a mount namespace of
    // its own shows at /root where the host allows one (docs/env-vars.md).
    expect(instanceHome).toBe(privateRootFlags() ? '/root' : path.join(stateDir, 'instances', id, 'root'));

    for (const args of [
      ['show', 'instance', id, '--raw'],
      ['show', 'instances', '--raw'],
    ]) {
      const r = await as(args);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).not.toContain('s3cr3t');
      expect(r.stdout).not.toContain('from-account');
    }
    expect((await as(['destroy', 'instance', id])).code).toBe(0);
  });

  it('delete env-var; again is exit 1', async () => {
    const d = await as(['delete', 'env-var', 'HF_TOKEN']);
    expect(d.code, d.stderr).toBe(0);
    expect(d.stdout).toBe('Environment variable HF_TOKEN deleted\n');
    const again = await as(['delete', 'env-var', 'HF_TOKEN']);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe('openrig: You have no environment variable named HF_TOKEN\n');
    const list = JSON.parse((await as(['show', 'env-vars', '-s', '--raw'])).stdout) as EnvVarsReply;
    expect(Object.keys(list.secrets)).toEqual(['HOME', 'PIPED', 'SHARED']);
  });

  it.each([
    [['create', 'env-var', '1BAD', 'x'], 'NAME must be an environment variable name'],
    [['create', 'env-var', 'A-B', 'x'], 'NAME must be an environment variable name'],
    [['update', 'env-var', 'OPENRIG_X', 'x'], 'OPENRIG_X is set by openrig in every instance'],
    [['delete', 'env-var', 'x y'], 'NAME must be an environment variable name'],
    [['create', 'env-var'], "missing required argument 'name'"],
    [['create', 'env-var', 'BIG', 'x'.repeat(16385)], 'VALUE must be at most 16384 characters'],
  ])('usage error %#: exit 2, says why, sends nothing', async (args, msg) => {
    const r = await as(args);
    expectUsageError(r, msg);
  });
});
