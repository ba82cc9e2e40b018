// The user CLI's stored settings: `openrig login` writes the
// URL and API key to `$XDG_CONFIG_HOME/openrig/config.json` (default `~/.config/openrig/`), and
// `tfa login` adds the session key. The file holds credentials, so it is written 0600 in a 0700
// directory, atomically (temp file + rename), and its mode is set explicitly (umask ignored).
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { homedir } from 'node:os';

export interface StoredConfig {
  url?: string;
  api_key?: string;
  /** Session key of a 2FA login (CLI flow), valid for `session_url` + the API key it came from. */
  session_key?: string;
  session_url?: string;
  /** SHA-256 (hex) of the API key the session was opened with: a session is per login. */
  session_api_key_sha256?: string;
  /**
   * A private key outside ~/.ssh that `openrig login` found registered on the account (the demo
   * key of a `serve --demo` in the directory it ran in): `openrig ssh` tries it from anywhere.
   */
  ssh_identity?: string;
}

export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CONFIG_HOME;
  if (xdg && xdg.startsWith('/')) return join(xdg, 'openrig');
  const home = env.HOME && env.HOME.length > 0 ? env.HOME : homedir();
  return join(home, '.config', 'openrig');
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(configDir(env), 'config.json');
}

export class ConfigFileError extends Error {}

/** The stored settings; `{}` when there is no file. A broken file is an error, not silently ignored. */
export function readConfig(env: NodeJS.ProcessEnv = process.env): StoredConfig {
  const p = configPath(env);
  let text: string;
  try {
    text = readFileSync(p, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new ConfigFileError(`cannot read ${p}: ${(err as Error).message}`);
  }
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
    const out: StoredConfig = {};
    for (const k of [
      'url',
      'api_key',
      'session_key',
      'session_url',
      'session_api_key_sha256',
      'ssh_identity',
    ] as const) {
      const x = (v as Record<string, unknown>)[k];
      if (typeof x === 'string') out[k] = x;
    }
    return out;
  } catch (err) {
    throw new ConfigFileError(
      `${p} is not valid JSON (${(err as Error).message}); fix it or run \`openrig login\` again`,
    );
  }
}

export function writeConfig(cfg: StoredConfig, env: NodeJS.ProcessEnv = process.env): string {
  const dir = configDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // A directory that already existed keeps its mode unless it is set here.
  chmodSync(dir, 0o700);
  const p = configPath(env);
  const tmp = `${p}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(cfg, null, 2) + '\n', { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, p);
  return p;
}

/**
 * Writes the stored settings with `patch` applied. A broken file is an error, unless `onBroken` is
 * given: then it is told why and the file is replaced by `patch` alone.
 */
export function updateConfig(
  patch: Partial<Record<keyof StoredConfig, string | undefined>>,
  env: NodeJS.ProcessEnv = process.env,
  onBroken?: (e: ConfigFileError) => void,
): string {
  let cur: StoredConfig;
  try {
    cur = readConfig(env);
  } catch (e) {
    if (!onBroken || !(e instanceof ConfigFileError)) throw e;
    onBroken(e);
    cur = {};
  }
  const next: Record<string, string | undefined> = { ...cur, ...patch };
  for (const k of Object.keys(next)) if (next[k] === undefined) delete next[k];
  return writeConfig(next, env);
}

export function removeConfig(env: NodeJS.ProcessEnv = process.env): boolean {
  const p = configPath(env);
  try {
    statSync(p);
  } catch {
    return false;
  }
  rmSync(p, { force: true });
  return true;
}

/** The file's permission bits, or null when absent (the CLI warns when others can read it). */
export function configMode(env: NodeJS.ProcessEnv = process.env): number | null {
  try {
    return statSync(configPath(env)).mode & 0o777;
  } catch {
    return null;
  }
}
