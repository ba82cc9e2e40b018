// Shared set-up of the CLI end-to-end tests: a real `serve` on a temp data dir, users made with
// `openrig admin create-user`, a host's `openrig agent` on the process runtime, and `openrig …`
// run as a subprocess with its own HOME (so the config file and ~/.ssh are the test's), never the
// developer's environment.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { expect } from 'vitest';
import path from 'node:path';
import {
  endInstanceGroups,
  processAgentArgs,
  runCli,
  startProc,
  startServe,
  waitRegistered,
  type Proc,
} from '../helpers/process.js';

export interface CliWorld {
  url: string;
  data: string;
  stop(): void;
}

/** True when `cmd args` runs here (a tool a test needs, such as `script` or `ssh`). */
export function hasCommand(cmd: string, args: string[]): boolean {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export async function startWorld(env: Record<string, string> = {}): Promise<CliWorld> {
  const data = mkdtempSync(path.join(tmpdir(), 'openrig-cli-e2e-'));
  const s = await startServe(['--data', data], {
    OPENRIG_LOG_LEVEL: 'warn',
    OPENRIG_RATE_LIMITS: 'off',
    ...env,
  });
  return { url: s.url, data, stop: () => s.child.kill('SIGTERM') };
}

export async function createUser(
  w: CliWorld,
  email: string,
  extra: string[] = [],
): Promise<{ id: number; api_key: string }> {
  const r = await runCli([
    'admin',
    'create-user',
    '--data',
    w.data,
    '--email',
    email,
    '--email-verified',
    '--balance',
    '100',
    ...extra,
  ]);
  if (r.code !== 0) throw new Error(`create-user failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as { id: number; api_key: string };
}

/** A fresh HOME with an ed25519 key pair in ~/.ssh. */
export function makeHome(): string {
  const home = mkdtempSync(path.join(tmpdir(), 'openrig-cli-home-'));
  mkdirSync(path.join(home, '.ssh'), { mode: 0o700 });
  execFileSync('ssh-keygen', [
    '-q',
    '-t',
    'ed25519',
    '-N',
    '',
    '-C',
    'e2e@test',
    '-f',
    path.join(home, '.ssh', 'id_ed25519'),
  ]);
  return home;
}

/** Runs the built CLI with HOME set and the user's OPENRIG_* settings cleared. */
export function cli(home: string, args: string[], env: Record<string, string> = {}) {
  return runCli(args, { HOME: home, XDG_CONFIG_HOME: '', OPENRIG_URL: '', OPENRIG_API_KEY: '', ...env });
}

/** A usage error: exit 2, `msg` on stderr without a stack trace, nothing on stdout. */
export function expectUsageError(
  r: { code: number | null; stdout: string; stderr: string },
  msg: string,
): void {
  expect(r.code).toBe(2);
  expect(r.stderr).toContain(msg);
  expect(r.stdout).toBe('');
  expect(hasStack(r.stderr)).toBe(false);
}

/** No stack trace: no `    at file:line` frames on stderr. */
export function hasStack(stderr: string): boolean {
  return /^\s+at .+:\d+:\d+\)?$/m.test(stderr);
}

/**
 * An agent's options for prices at which a few seconds cost whole cents: $360/h compute is ten
 * cents a second, $1000/GB-month for 10 GB about 0.4 cents a second.
 */
export const HIGH_PRICES = { priceGpu: '360', extra: ['--price-disk', '1000'] };

/** A serve whose meter bills every half second (and agents that sync as often), for billing tests. */
export const meteredEnv = (secretKey: string): Record<string, string> => ({
  OPENRIG_SECRET_KEY: secretKey,
  OPENRIG_HEARTBEAT_S: '0.5',
  OPENRIG_SWEEP_INTERVAL_MS: '200',
  OPENRIG_METER_INTERVAL_MS: '500',
});

export const DAY_MS = 86_400_000;
/** The UTC date (YYYY-MM-DD) of an epoch-ms time. */
export const dateOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
/** `--from` the start of yesterday (UTC), so a range holds charges made just after midnight too. */
export const SINCE_YESTERDAY = () => ['--from', dateOf(Date.now() - DAY_MS)];

export interface AgentWorld extends CliWorld {
  /** The host's agent on the process runtime, registered with its one machine. */
  agent: Proc;
  stateDir: string;
  machine: number;
  hostKey: string;
  renterKey: string;
  /** A HOME with an SSH key pair whose public key the renter registered (`ssh-key add`). */
  home: string;
}

/**
 * A world with a machine to rent: `serve` with `env`, a host and a renter (their e-mails), the
 * host's process-runtime agent (`agent` its options, one RTX 4090 by default; its environment
 * `env`, at log level warn, then `agentEnv`) registered, and the renter's SSH key
 * added from a fresh HOME. `stop()` kills the agent and the server and ends the instances' process
 * groups, which outlive a killed agent by design.
 */
export async function startAgentWorld(o: {
  env: Record<string, string>;
  host: string;
  renter: string;
  agent?: Parameters<typeof processAgentArgs>[2];
  agentEnv?: Record<string, string>;
}): Promise<AgentWorld> {
  const w = await startWorld(o.env);
  const stateDir = path.join(w.data, 'agent-state');
  let agent: Proc | undefined;
  const stop = () => {
    agent?.child.kill('SIGKILL');
    w.stop();
    endInstanceGroups(stateDir);
  };
  try {
    const hostKey = (await createUser(w, o.host)).api_key;
    const renterKey = (await createUser(w, o.renter)).api_key;
    agent = startProc(processAgentArgs(w.url, stateDir, { gpus: 'RTX 4090x1', ...o.agent }), {
      ...o.env,
      OPENRIG_LOG_LEVEL: 'warn',
      ...o.agentEnv,
      OPENRIG_API_KEY: hostKey,
    });
    const [machine] = await waitRegistered(agent);
    const home = makeHome();
    const add = await cli(home, ['ssh-key', 'add'], { OPENRIG_URL: w.url, OPENRIG_API_KEY: renterKey });
    if (add.code !== 0) throw new Error(`ssh-key add failed: ${add.stderr}`);
    return { ...w, agent, stateDir, machine: machine!, hostKey, renterKey, home, stop };
  } catch (err) {
    stop();
    throw err;
  }
}
