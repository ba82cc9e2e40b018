// Real processes for end-to-end tests: `node bin/openrig.js …` from the built dist/ (npm test
// builds first). Every process started here is killed when the test file ends.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { afterAll } from 'vitest';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = path.join(ROOT, 'bin/openrig.js');

const live = new Set<ChildProcess>();
afterAll(() => {
  for (const p of live) killGroup(p, 'SIGKILL');
});

/**
 * Signals a process started here and every process it started (a `serve` and its cluster
 * workers: each runs in a process group of its own). SIGKILL so stands for the machine dying.
 */
export function killGroup(p: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-p.pid!, signal);
  } catch {
    p.kill(signal); // the group is gone already
  }
}

export interface Proc {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function startProc(args: string[], env: Record<string, string> = {}): Proc {
  // An agent benchmarks its machine after registering (seconds of CPU and disk): tests of other
  // things run it with --no-benchmarks, on two shared cores; OPENRIG_TEST_BENCHMARKS=1 keeps them.
  if (args[0] === 'agent' && env.OPENRIG_TEST_BENCHMARKS !== '1' && !args.includes('--no-benchmarks'))
    args = [...args, '--no-benchmarks'];
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, OPENRIG_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group (killGroup)
  });
  live.add(child);
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    }),
  );
  return { child, stdout: () => out, stderr: () => err, exited };
}

/**
 * Polls `fn` until it returns a truthy value. `what` names the wait in the timeout's error; as a
 * function it is asked at the timeout, so the error can say what was seen last.
 */
export async function waitFor<T>(
  fn: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  what: string | (() => string),
  timeoutMs = 20_000,
  stepMs = 50,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end)
      throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/**
 * Resolves once the agent `p` printed that it registered: the ids of its machines, in order. An
 * agent that exits first fails the wait with what it said on stderr.
 */
export async function waitRegistered(p: Proc, timeoutMs = 20_000): Promise<number[]> {
  const m = await waitFor(
    () => {
      if (p.child.exitCode !== null) throw new Error(`agent exited: ${p.stderr()}`);
      return /machines ([\d, ]+) registered with/.exec(p.stdout());
    },
    'the agent to register',
    timeoutMs,
  );
  return m[1]!.split(', ').map(Number);
}

/** Starts `openrig serve --port 0 …` and resolves once it printed its URL and /healthz is 200. */
/**
 * The arguments of `openrig agent` for a host on the process runtime (no isolation: tests and
 * demos), registering with `url` and keeping its state in `stateDir`: by default one machine of
 * two RTX 4090 at 0.5 $/h per GPU, its instances' SSH on loopback.
 */
export interface AgentArgOptions {
  gpus?: string;
  priceGpu?: string;
  sshBind?: string | null;
  extra?: string[];
}

/** `openrig agent` arguments for a runtime (GPUs, price, state directory, SSH address). */
export function agentArgs(
  url: string,
  stateDir: string,
  o: AgentArgOptions & { runtime: 'process' | 'docker' },
): string[] {
  return [
    'agent',
    '--url',
    url,
    '--runtime',
    o.runtime,
    '--gpus',
    o.gpus ?? 'RTX 4090x2',
    '--price-gpu',
    o.priceGpu ?? '0.5',
    '--state-dir',
    stateDir,
    ...(o.sshBind === null ? [] : ['--ssh-bind', o.sshBind ?? '127.0.0.1']),
    ...(o.extra ?? []),
  ];
}

export function processAgentArgs(url: string, stateDir: string, o: AgentArgOptions = {}): string[] {
  return agentArgs(url, stateDir, { ...o, runtime: 'process' });
}

export async function startServe(
  args: string[],
  env: Record<string, string> = {},
): Promise<Proc & { url: string }> {
  const p = startProc(['serve', '--port', '0', ...args], env);
  const url = await waitFor(() => {
    if (p.child.exitCode !== null) throw new Error(`serve exited early: ${p.stderr()} ${p.stdout()}`);
    return /(?:listening on|running at) (http:\/\/\S+)/.exec(p.stdout())?.[1];
  }, 'serve to print its URL');
  await waitFor(async () => (await fetch(`${url}/healthz`).catch(() => null))?.ok, '/healthz');
  return { ...p, url };
}

/** Runs a command to completion; returns exit code and output. */
export async function runCli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = startProc(args, env);
  const { code } = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

/** An API call with a Bearer key: the status and the body, parsed when it is JSON. */
export async function callApi(
  baseUrl: string,
  method: string,
  p: string,
  key: string,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${baseUrl}${p}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

/** `openrig admin create-user` on a data directory, e-mail verified; its JSON (with `api_key`). */
export async function createUser(
  dataDir: string,
  env: Record<string, string>,
  email: string,
  extra: string[] = [],
): Promise<{ id: number; api_key: string }> {
  const r = await runCli(
    ['admin', 'create-user', '--data', dataDir, '--email', email, '--email-verified', ...extra],
    env,
  );
  if (r.code !== 0) throw new Error(`create-user ${email} failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as { id: number; api_key: string };
}

/**
 * Ends the process groups of the instances under an agent's state directory. Instances outlive a
 * killed agent by design (their supervisors run detached), so a test that kills its agent ends
 * them itself, or they stay behind on the machine after the run.
 */
export function endInstanceGroups(stateDir: string): void {
  const base = path.join(stateDir, 'instances');
  if (!existsSync(base)) return;
  for (const id of readdirSync(base)) {
    try {
      const pid = Number(readFileSync(path.join(base, id, 'main.pid'), 'utf8').trim() || 0);
      if (pid) process.kill(-pid, 'SIGKILL');
    } catch {
      /* stopped, or gone */
    }
  }
}
