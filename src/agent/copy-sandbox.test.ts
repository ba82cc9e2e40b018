import { describe, expect, it } from 'vitest';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  existsSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  readlinkSync,
} from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { containerPathOnHost, parseMountInfo, sandboxUnavailable, spawnSandboxed } from './copy-sandbox.js';

const CONTAINER = `72 48 0:39 / / rw,relatime master:2 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/A,upperdir=/var/lib/docker/overlay2/abc/diff,workdir=/var/lib/docker/overlay2/abc/work
73 72 0:41 / /proc rw,nosuid - proc proc rw
80 72 7:3 / /data rw,nodev - ext4 /dev/loop3 rw
81 72 8:1 /var/lib/docker/containers/abc/hosts /etc/hosts rw - ext4 /dev/sda1 rw
82 72 0:50 / /dev/shm rw - tmpfs shm rw,size=65536k
83 72 8:1 /srv/with\\040space /sp rw - ext4 /dev/sda1 rw`;
const HOST = `20 1 8:1 / / rw - ext4 /dev/sda1 rw
40 20 0:39 / /var/lib/docker/overlay2/abc/merged rw - overlay overlay rw,upperdir=/var/lib/docker/overlay2/abc/diff
41 20 7:3 / /state/volumes/5/data rw - ext4 /dev/loop3 rw`;

describe('where a container path is on the host', () => {
  const c = parseMountInfo(CONTAINER);
  const h = parseMountInfo(HOST);

  it('finds the overlay merged directory for the container root, and volumes by device', () => {
    expect(containerPathOnHost('/work/sub', c, h)).toEqual({
      path: '/var/lib/docker/overlay2/abc/merged/work/sub',
      mount: '/var/lib/docker/overlay2/abc/merged',
    });
    expect(containerPathOnHost('/data/x', c, h)).toEqual({
      path: '/state/volumes/5/data/x',
      mount: '/state/volumes/5/data',
    });
    expect(containerPathOnHost('/etc/hosts', c, h).path).toBe('/var/lib/docker/containers/abc/hosts');
    expect(containerPathOnHost('/sp/a', c, h).path).toBe('/srv/with space/a');
    // `/datax` is not under the volume's mount point.
    expect(containerPathOnHost('/datax', c, h).path).toBe('/var/lib/docker/overlay2/abc/merged/datax');
  });

  it('refuses a path with a volume mounted below it (not held by the one directory bound), but not for mounted files', () => {
    const file = (p: string) => p.endsWith('/hosts');
    expect(() => containerPathOnHost('/', c, h, file)).toThrow(/\/data is mounted below \/ \(a volume\)/);
    expect(containerPathOnHost('/etc', c, h, file).path).toBe('/var/lib/docker/overlay2/abc/merged/etc');
    expect(containerPathOnHost('/data', c, h, file).path).toBe('/state/volumes/5/data');
  });

  it("refuses the kernel's and the container's own file systems, and a root it cannot find", () => {
    expect(() => containerPathOnHost('/proc/1/root', c, h)).toThrow(/proc mount/);
    expect(() => containerPathOnHost('/dev/shm/x', c, h)).toThrow(/tmpfs mount/);
    expect(() =>
      containerPathOnHost('/work', c, parseMountInfo('20 1 8:1 / / rw - ext4 /dev/sda1 rw')),
    ).toThrow(/root file system/);
  });
});

const NO_SANDBOX = sandboxUnavailable();
const HAS_RSYNC = spawnSync('rsync', ['--version']).status === 0;

describe.skipIf(NO_SANDBOX !== null || !HAS_RSYNC)('rsync in the sandbox', () => {
  it('copies the tree, and no link in it, followed or not, reaches a host file', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-sandbox-test-'));
    try {
      const secret = path.join(dir, 'host-secret');
      writeFileSync(secret, 'host only\n');
      const root = path.join(dir, 'instance');
      mkdirSync(path.join(root, 'work/sub'), { recursive: true });
      writeFileSync(path.join(root, 'work/sub/f'), 'inside\n');
      symlinkSync(secret, path.join(root, 'work/abs'));
      symlinkSync('../../host-secret', path.join(root, 'work/rel'));
      symlinkSync(secret, path.join(root, 'work/sub/deep'));
      const dst = path.join(dir, 'dst');
      mkdirSync(dst);
      // -L makes rsync follow every link: the worst a race could make of a link in the source.
      const child = spawnSandboxed(
        'rsync',
        ['-a', '-L', `${root}/work/`, `${dst}/`],
        [{ path: root }, { path: dst, writable: true }],
        { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      );
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const code = await new Promise<number | null>((r) => child.once('close', r));
      expect(code, err).toBe(23); // some files (the links with no referent) not transferred
      expect(readFileSync(path.join(dst, 'sub/f'), 'utf8')).toBe('inside\n');
      for (const l of ['abs', 'rel', 'sub/deep']) expect(existsSync(path.join(dst, l))).toBe(false);
      expect(err).toMatch(/symlink has no referent/);
      // Without -L, the links arrive as links, as they were.
      const again = spawnSandboxed(
        'rsync',
        ['-a', `${root}/work/`, `${dst}/`],
        [{ path: root }, { path: dst, writable: true }],
        { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      );
      expect(await new Promise((r) => again.once('close', r))).toBe(0);
      expect(readlinkSync(path.join(dst, 'abs'))).toBe(secret);
      // The source was bound read-only, and nothing is left mounted.
      expect(readFileSync(secret, 'utf8')).toBe('host only\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses to bind a path that does not exist', () => {
    expect(() => spawnSandboxed('true', [], [{ path: '/no/such/dir' }], {})).toThrow(/cannot bind/);
  });
});
