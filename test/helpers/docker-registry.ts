// Debian's docker-registry as a plain process on a loopback port (the engine trusts a TLS-less
// registry on 127.0.0.1), optionally with htpasswd auth for the given users, and images pushed to
// it with a docker config of their own (the host's stays untouched).
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { waitFor } from './process.js';

export interface RegistryUser {
  name: string;
  password: string;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

/** A bcrypt hash for htpasswd (the registry takes bcrypt only). */
function bcrypt(password: string): string {
  return execFileSync(
    'python3',
    [
      '-W',
      'ignore',
      '-c',
      'import crypt,sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH)))',
      password,
    ],
    { encoding: 'utf8' },
  ).trim();
}

export async function startRegistry(
  dir: string,
  users: RegistryUser | RegistryUser[] = [],
): Promise<{ port: number; child: ChildProcess }> {
  const list = Array.isArray(users) ? users : [users];
  const port = await freePort();
  let auth = '';
  if (list.length > 0) {
    writeFileSync(path.join(dir, 'htpasswd'), list.map((u) => `${u.name}:${bcrypt(u.password)}\n`).join(''));
    auth = `auth:\n  htpasswd:\n    realm: test\n    path: ${path.join(dir, 'htpasswd')}\n`;
  }
  const config = path.join(dir, 'config.yml');
  writeFileSync(
    config,
    `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${path.join(dir, 'data')}\nhttp:\n  addr: 127.0.0.1:${port}\n${auth}`,
  );
  const child: ChildProcess = spawn('docker-registry', ['serve', config], { stdio: 'ignore' });
  await waitFor(
    async () => (await fetch(`http://127.0.0.1:${port}/v2/`).catch(() => null)) !== null,
    'the registry',
  );
  return { port, child };
}

/** Tags `local` as `ref` and pushes it (logged in as `user` when given), then drops the tag here. */
export function pushImage(dir: string, local: string, ref: string, user?: RegistryUser): void {
  const cfg = mkdtempSync(path.join(dir, 'dockercfg-'));
  if (user) {
    const login = spawnSync(
      'docker',
      ['--config', cfg, 'login', '-u', user.name, '--password-stdin', ref.split('/')[0]!],
      { input: user.password, encoding: 'utf8' },
    );
    if (login.status !== 0) throw new Error(`docker login: ${login.stderr}`);
  }
  execFileSync('docker', ['tag', local, ref], { stdio: 'ignore' });
  execFileSync('docker', ['--config', cfg, 'push', ref], { stdio: 'ignore' });
  execFileSync('docker', ['rmi', ref], { stdio: 'ignore' });
}

/** Whether docker-registry is installed (the pull tests skip without it). */
export function registryUnavailable(): string | null {
  return spawnSync('sh', ['-c', 'command -v docker-registry']).status === 0
    ? null
    : 'no docker-registry (Debian package docker-registry)';
}
