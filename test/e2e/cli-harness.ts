// Shared set-up of the CLI end-to-end tests: a real `serve` on a temp data dir, users made with
// `openrig admin create-user`, and `openrig …` run as a subprocess with its own HOME (so the config
// file and ~/.ssh are the test's), never the developer's environment.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCli, startServe } from '../helpers/process.js';

export interface CliWorld {
  url: string;
  data: string;
  stop(): void;
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

/** No stack trace: no `    at file:line` frames on stderr. */
export function hasStack(stderr: string): boolean {
  return /^\s+at .+:\d+:\d+\)?$/m.test(stderr);
}
