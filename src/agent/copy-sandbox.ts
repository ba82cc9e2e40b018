// The sending side of a copy runs the host's rsync (and its ssh) with a root of its own, so that
// no symbolic link in the source, not even one a renter's process swaps in during the copy, can
// lead it to a host file (docs/data.md). In a private mount namespace (`unshare --mount`), a
// tmpfs becomes the root: the host's /usr, /bin, /lib… bound read-only (the programs), an /etc
// with a root user only (and the host's hosts, resolv.conf, nsswitch.conf copied), /dev/null and
// the random devices, and each directory the copy needs bound at its own host path (the source
// read-only; the key's directory read-only; a destination volume of this host writable). The
// command then runs with that root (`nsenter --root`), its arguments unchanged. An absolute link
// in the source then points into that root, where no other file of the host is; `..` stops at it.
// A Docker container's root cannot be bound from another mount namespace: the source is found
// on the host instead (the container's overlay directory, or the host directory of the volume
// mounted at the source path), from the container's mount table.
// Without root, or without unshare, nsenter and mount, there is no sandbox (sandboxUnavailable).
import { spawn, spawnSync, type ChildProcessByStdio } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';

/** A host path bound into the sandbox at the same path. */
export interface SandboxBind {
  path: string;
  writable?: boolean;
}

/** What the sandbox needs; null when it can run, else why not. */
export function sandboxUnavailable(): string | null {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return 'the agent does not run as root';
  for (const tool of ['unshare', 'nsenter', 'mount']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status !== 0)
      return `${tool} is not installed (util-linux)`;
  }
  return null;
}

interface MountLine {
  dev: string;
  root: string;
  point: string;
  type: string;
  superOptions: string;
}

const unescapeMount = (s: string) =>
  s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** The lines of a mountinfo file (proc(5)). */
export function parseMountInfo(text: string): MountLine[] {
  const out: MountLine[] = [];
  for (const line of text.split('\n')) {
    const [head, tail] = line.split(' - ');
    if (!head || !tail) continue;
    const f = head.split(' ');
    const g = tail.split(' ');
    if (f.length < 5 || g.length < 1) continue;
    out.push({
      dev: f[2]!,
      root: unescapeMount(f[3]!),
      point: unescapeMount(f[4]!),
      type: g[0]!,
      superOptions: g[2] ?? '',
    });
  }
  return out;
}

/** File systems of a container that are its own (no host directory holds them) or the kernel's. */
const NOT_ON_HOST = new Set(['proc', 'sysfs', 'devpts', 'mqueue', 'cgroup', 'cgroup2', 'devtmpfs', 'tmpfs']);

const under = (p: string, dir: string) => dir === '/' || p === dir || p.startsWith(`${dir}/`);

/** The host directory (or file) of a container's mount, by device and root; undefined if none. */
function mountOnHost(m: MountLine, host: MountLine[]): string | undefined {
  const h = host.find((x) => x.dev === m.dev && !NOT_ON_HOST.has(x.type) && under(m.root, x.root));
  return h ? path.posix.join(h.point, path.posix.relative(h.root, m.root)) : undefined;
}

const isFile = (p: string) => {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
};

/**
 * Where a path of a Docker container (`inPath`, absolute, already resolved inside it) is on the
 * host: the mount of the container that holds it (its longest mount point above the path), found
 * in the host's mount table by device and root; the container's own root is its overlay's merged
 * directory. Throws when the path is on a mount the host has no directory for, and when a
 * directory the container mounts (a volume) lies below the path: the sandbox binds one directory,
 * which does not hold that mount, so the copy is refused rather than made without it.
 */
export function containerPathOnHost(
  inPath: string,
  container: MountLine[],
  host: MountLine[],
  fileOnHost: (p: string) => boolean = isFile,
): { path: string; mount: string } {
  let m: MountLine | undefined;
  for (const c of container) if (under(inPath, c.point) && (!m || c.point.length >= m.point.length)) m = c;
  if (!m) throw new Error(`${inPath}: not on any mount of the instance`);
  for (const c of container) {
    if (c.point === inPath || !under(c.point, inPath) || NOT_ON_HOST.has(c.type)) continue;
    const below = mountOnHost(c, host);
    // Docker's own files (hosts, resolv.conf, hostname) are mounted files, not data.
    if (below !== undefined && fileOnHost(below)) continue;
    throw new Error(
      `${c.point} is mounted below ${inPath} (a volume): copy it by its own path (or as V.ID), and the rest without it`,
    );
  }
  const rel = path.posix.relative(m.point, inPath);
  let mount: string | undefined;
  if (m.point === '/') {
    const upper = /(?:^|,)upperdir=([^,]+)/.exec(m.superOptions)?.[1];
    const merged = upper ? path.posix.join(path.posix.dirname(upper), 'merged') : undefined;
    if (m.type === 'overlay' && merged && host.some((h) => h.point === merged && h.dev === m.dev))
      mount = merged;
    else throw new Error(`the instance's root file system (${m.type}) is not found on the host`);
  } else {
    if (NOT_ON_HOST.has(m.type))
      throw new Error(`${inPath} is on a ${m.type} mount of the instance, not copied`);
    mount = mountOnHost(m, host);
    if (mount === undefined)
      throw new Error(`${inPath} is on a mount of the instance that is not found on the host`);
  }
  return { path: rel === '' ? mount : path.posix.join(mount, rel), mount };
}

/**
 * A copy's source as a host path the sandbox can bind, and the directory to bind: the resolved
 * path itself under a host directory root (the process runtime, a volume), or, for a container
 * root seen as /proc/PID/root, its host location (containerPathOnHost).
 */
export function sourceOnHost(root: string, resolved: string): { path: string; mount: string } {
  const slash = resolved.endsWith('/') ? '/' : '';
  const pid = /^\/proc\/(\d+)\/root\/?$/.exec(root)?.[1];
  if (!pid) return { path: resolved, mount: root };
  const rel = path.posix.relative(root, resolved.replace(/\/+$/, '') || '/');
  const inPath = `/${rel}`.replace(/\/+$/, '') || '/';
  const where = containerPathOnHost(
    inPath,
    parseMountInfo(readFileSync(`/proc/${pid}/mountinfo`, 'utf8')),
    parseMountInfo(readFileSync('/proc/self/mountinfo', 'utf8')),
  );
  return { path: `${where.path.replace(/\/+$/, '')}${slash}`, mount: where.mount };
}

/** The script run in the new mount namespace: $1 the new root, then PATH MODE pairs, `--`, the command. */
const SCRIPT = `set -eu
T=$1; shift
mount -t tmpfs -o mode=0755,size=16m openrig-copy "$T"
while [ "$1" != "--" ]; do
  p=$1; mode=$2; shift 2
  if [ -d "$p" ]; then mkdir -p "$T$p"; else mkdir -p "$T$(dirname "$p")"; : > "$T$p"; fi
  mount --bind "$p" "$T$p"
  if [ "$mode" = ro ]; then mount -o remount,bind,ro "$T$p"; fi
done
shift
for d in usr bin sbin lib lib32 lib64 libx32; do
  if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$T/$d"
  elif [ -d "/$d" ] && [ ! -e "$T/$d" ]; then
    mkdir "$T/$d"; mount --bind "/$d" "$T/$d"; mount -o remount,bind,ro "$T/$d"
  fi
done
mkdir -p "$T/etc" "$T/dev" "$T/tmp"
chmod 1777 "$T/tmp"
echo 'root:x:0:0:root:/tmp:/bin/sh' > "$T/etc/passwd"
echo 'root:x:0:' > "$T/etc/group"
for f in hosts resolv.conf nsswitch.conf; do if [ -f "/etc/$f" ]; then cp "/etc/$f" "$T/etc/$f"; fi; done
for n in null zero random urandom; do : > "$T/dev/$n"; mount --bind "/dev/$n" "$T/dev/$n"; done
exec nsenter --root="$T" --wd="$T" -- "$@"
`;

/**
 * Runs `cmd args` in the sandbox, `binds` at their host paths (read-only unless writable). The
 * arguments are passed as they are: every path they name must be under a bind.
 */
export function spawnSandboxed(
  cmd: string,
  args: string[],
  binds: SandboxBind[],
  env: Record<string, string>,
): ChildProcessByStdio<null, Readable, Readable> {
  const root = mkdtempSync(path.join(tmpdir(), 'openrig-sandbox-'));
  const pairs = binds.flatMap((b) => {
    if (!path.isAbsolute(b.path) || /[\0\n]/.test(b.path) || !existsSync(b.path))
      throw new Error(`cannot bind ${b.path} into the copy's sandbox`);
    return [path.resolve(b.path), b.writable ? 'rw' : 'ro'];
  });
  const child = spawn(
    'unshare',
    [
      '--mount',
      '--propagation',
      'private',
      '--',
      'sh',
      '-c',
      SCRIPT,
      'openrig-sandbox',
      root,
      ...pairs,
      '--',
      cmd,
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env, cwd: '/' },
  );
  // The namespace and its mounts end with the process; on the host the directory is empty.
  const cleanup = () => {
    try {
      rmdirSync(root);
    } catch {
      /* not empty: left as it is, never removed recursively */
    }
  };
  child.once('close', cleanup);
  child.once('error', cleanup);
  return child;
}
