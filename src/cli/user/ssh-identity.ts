// What `openrig ssh` needs to work with no options: the private key whose public half the
// instance accepts (an account key it was created with, or one attached to it since), and
// openrig's own known-hosts file, where an instance's host key is accepted on first use and a
// changed one is refused.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { configDir } from '../config-file.js';

/** ssh finds these by itself; any other key must be named with -i. */
export const DEFAULT_KEY_NAMES = ['id_ed25519', 'id_ecdsa', 'id_rsa'];

export interface IdentityCandidate {
  /** The private key file. */
  file: string;
  /** `type base64` of its public half. */
  publicKey: string;
}

function home(env: NodeJS.ProcessEnv): string {
  return env.HOME && env.HOME.length > 0 ? env.HOME : homedir();
}

/** `ssh-ed25519 AAAA… comment` → `ssh-ed25519 AAAA…`. */
export function keyBody(line: string): string {
  const parts = line.trim().split(/\s+/);
  return parts.length >= 2 ? `${parts[0]} ${parts[1]}` : line.trim();
}

/**
 * Private keys that could log in: each `*.pub` in ~/.ssh with its private half beside it (the
 * default names first), then the demo key of a `serve --demo` started in this directory, then the
 * key `openrig login` stored, then OPENRIG_SSH_KEY.
 */
export function identityCandidates(
  env: NodeJS.ProcessEnv,
  cwd = process.cwd(),
  stored?: string,
): IdentityCandidate[] {
  const files: string[] = [];
  const sshDir = path.join(home(env), '.ssh');
  let names: string[] = [];
  try {
    names = readdirSync(sshDir).filter((n) => n.endsWith('.pub'));
  } catch {
    names = [];
  }
  const rank = (n: string) => {
    const i = DEFAULT_KEY_NAMES.indexOf(n.replace(/\.pub$/, ''));
    return i < 0 ? DEFAULT_KEY_NAMES.length : i;
  };
  names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  for (const n of names) files.push(path.join(sshDir, n.replace(/\.pub$/, '')));
  files.push(path.join(cwd, 'data', 'demo', 'id_ed25519'));
  if (stored) files.push(stored);
  if (env.OPENRIG_SSH_KEY) files.push(path.resolve(env.OPENRIG_SSH_KEY));
  const out: IdentityCandidate[] = [];
  for (const file of [...new Set(files)]) {
    if (!existsSync(file) || !existsSync(`${file}.pub`)) continue;
    try {
      out.push({ file, publicKey: keyBody(readFileSync(`${file}.pub`, 'utf8')) });
    } catch {
      // An unreadable key is not a candidate.
    }
  }
  return out;
}

/** The first candidate whose public key is one of the registered ones, or null. */
export function matchIdentity(
  candidates: IdentityCandidate[],
  registered: string[],
): IdentityCandidate | null {
  const bodies = new Set(registered.map(keyBody));
  return candidates.find((c) => bodies.has(c.publicKey)) ?? null;
}

/** True when the key is in ~/.ssh (found there by every command, from any directory). */
export function inSshDir(file: string, env: NodeJS.ProcessEnv): boolean {
  return path.dirname(file) === path.join(home(env), '.ssh');
}

/** True when ssh would try this key without -i. */
export function isDefaultKey(file: string, env: NodeJS.ProcessEnv): boolean {
  return DEFAULT_KEY_NAMES.some((n) => path.join(home(env), '.ssh', n) === file);
}

/** openrig's own known-hosts file, beside its config. */
export function knownHostsFile(env: NodeJS.ProcessEnv): string {
  return path.join(configDir(env), 'known_hosts');
}

/**
 * The name an instance's host key is filed under: the server and the instance ID, so a port
 * reused by a later instance is not mistaken for a changed key.
 */
export function hostKeyAlias(serverUrl: string, instanceId: number): string {
  return `openrig-${new URL(serverUrl).host.replace(/[^A-Za-z0-9.-]/g, '-')}-instance-${instanceId}`;
}

/** Shows a path with the home directory as `~`. */
export function tildePath(file: string, env: NodeJS.ProcessEnv): string {
  const h = home(env);
  return file.startsWith(h + path.sep) ? `~${file.slice(h.length)}` : file;
}
