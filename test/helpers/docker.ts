// Docker for tests: whether an engine answers, and tiny images built locally with `docker import`
// of a root filesystem made from the host's static busybox (no registry is reachable here). With
// `rsync`, the host's rsync binary and the shared libraries it loads are copied in as well.
import { execFileSync, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const DOCKER_SOCKET = '/var/run/docker.sock';

/** Null when an engine answers; otherwise why the docker tests skip. */
export function dockerUnavailable(): string | null {
  if (!existsSync(DOCKER_SOCKET)) return `no Docker engine: ${DOCKER_SOCKET} does not exist`;
  const r = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  if (r.error) return `no docker command: ${r.error.message}`;
  if (r.status !== 0) return `the Docker engine does not answer: ${r.stderr.trim()}`;
  const busybox = ['/bin/busybox', '/usr/bin/busybox'].find((b) => existsSync(b));
  if (!busybox) return 'no busybox binary to build a test image from (Debian busybox-static)';
  return null;
}

function busyboxPath(): string {
  return ['/bin/busybox', '/usr/bin/busybox'].find((b) => existsSync(b))!;
}

/** Builds (once per tag) an image holding busybox's applets, /root, /tmp and, optionally, rsync. */
export function buildTestImage(tag: string, o: { rsync?: boolean } = {}): string {
  if (spawnSync('docker', ['image', 'inspect', tag], { stdio: 'ignore' }).status === 0) return tag;
  const root = mkdtempSync(path.join(tmpdir(), 'openrig-rootfs-'));
  try {
    for (const d of ['bin', 'root', 'tmp', 'etc', 'usr/bin', 'proc', 'sys', 'dev'])
      mkdirSync(path.join(root, d), { recursive: true });
    copyFileSync(busyboxPath(), path.join(root, 'bin/busybox'));
    const applets = execFileSync(busyboxPath(), ['--list'], { encoding: 'utf8' }).split('\n').filter(Boolean);
    for (const a of applets) if (a !== 'busybox') symlinkSync('busybox', path.join(root, 'bin', a));
    writeFileSync(path.join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\n');
    writeFileSync(path.join(root, 'etc/group'), 'root:x:0:\n');
    if (o.rsync) {
      const bin = execFileSync('sh', ['-c', 'command -v rsync'], { encoding: 'utf8' }).trim();
      copyFileSync(bin, path.join(root, 'usr/bin/rsync'));
      const libs = execFileSync('ldd', [bin], { encoding: 'utf8' })
        .split('\n')
        .map((l) => /(\/\S+)/.exec(l.includes('=>') ? l.split('=>')[1]! : l)?.[1])
        .filter((x): x is string => !!x);
      for (const lib of libs) {
        mkdirSync(path.join(root, path.dirname(lib)), { recursive: true });
        copyFileSync(lib, path.join(root, lib));
      }
    }
    execFileSync('sh', ['-c', `tar -C '${root}' -c . | docker import -c 'CMD ["/bin/sh"]' - '${tag}'`], {
      stdio: 'ignore',
    });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return tag;
}

/** Ids of the containers (any state) carrying the label. */
export function containersWithLabel(label: string): string[] {
  return execFileSync('docker', ['ps', '-aq', '--no-trunc', '--filter', `label=${label}`], {
    encoding: 'utf8',
  })
    .split('\n')
    .filter(Boolean);
}

/** Removes, with their volumes, the containers of the agent whose state directory is `stateDir`. */
export function removeAgentContainers(stateDir: string | undefined): void {
  if (!stateDir) return;
  const file = path.join(stateDir, 'agent.json');
  if (!existsSync(file)) return;
  const uid = (JSON.parse(readFileSync(file, 'utf8')) as { agent_uid: string }).agent_uid;
  for (const c of containersWithLabel(`openrig.agent=${uid}`))
    spawnSync('docker', ['rm', '-f', '-v', c], { stdio: 'ignore' });
}

const LOCK = path.join(tmpdir(), 'openrig-docker-tests.lock');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Docker end-to-end files take turns on the engine: each starts its own server, whose instance ids
 * start at 1, and containers are named by instance id. Resolves with the release; a lock whose
 * holder is gone is taken over.
 */
export async function lockDocker(): Promise<() => void> {
  for (;;) {
    try {
      mkdirSync(LOCK);
      writeFileSync(path.join(LOCK, 'pid'), String(process.pid));
      return () => rmSync(LOCK, { recursive: true, force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let holder = 0;
    try {
      holder = Number(readFileSync(path.join(LOCK, 'pid'), 'utf8'));
    } catch {
      // Being written by its new holder.
    }
    if (holder > 0 && !alive(holder)) rmSync(LOCK, { recursive: true, force: true });
    else await new Promise((r) => setTimeout(r, 200));
  }
}

/** Removes, with their volumes, every container an openrig agent made (what an earlier run left). */
export function removeAllAgentContainers(): void {
  for (const c of containersWithLabel('openrig.agent'))
    spawnSync('docker', ['rm', '-f', '-v', c], { stdio: 'ignore' });
}
