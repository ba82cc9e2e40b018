// The host side of volumes (docs/volumes.md): each volume is kept under STATE_DIR/volumes/ID and
// outlives the instances that mount it, an agent restart and a host reboot; it is deleted only
// when the server's list of live volumes no longer holds it (its owner deleted it).
// Two methods, said at start and in the register:
// - `ext4-loop` (the Docker runtime, as root, with mkfs.ext4 and a loop device): an image file
//   of the volume's size (sparse) formatted ext4 and loop-mounted at STATE_DIR/volumes/ID/data. A
//   renter writing past the size gets "no space left on device" inside the container and no other
//   volume or instance of the host is touched.
// - `directory` (the process runtime, or where the above is not available): a plain directory;
//   the size is NOT enforced, and the agent says so at start.
import { execFile } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export type VolumeMethod = 'ext4-loop' | 'directory';

export interface VolumeLog {
  info(msg: string): void;
  warn(msg: string): void;
}

/** What an instance mounts: the volume, where, and its size. */
export interface VolumeMount {
  id: number;
  mountPath: string;
  sizeGb: number;
}

/** Whether this host can make size-limited volumes: root, mkfs.ext4, losetup and mount. */
export async function loopVolumesAvailable(): Promise<string | null> {
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return 'the agent does not run as root';
  for (const tool of ['mkfs.ext4', 'losetup', 'mount', 'umount']) {
    try {
      await run('sh', ['-c', `command -v ${tool}`]);
    } catch {
      return `${tool} is not installed (e2fsprogs, util-linux)`;
    }
  }
  return null;
}

/** The mount points listed in /proc/mounts (unescaped). */
function mountPoints(): Set<string> {
  try {
    return new Set(
      readFileSync('/proc/mounts', 'utf8')
        .split('\n')
        .map((l) => l.split(' ')[1])
        .filter((p): p is string => !!p)
        .map((p) => p.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)))),
    );
  } catch {
    return new Set();
  }
}

export class VolumeStore {
  readonly dir: string;
  /** Volumes being made or deleted: one operation per volume at a time. */
  private busy = new Map<number, Promise<unknown>>();

  constructor(
    stateDir: string,
    readonly method: VolumeMethod,
    private readonly log: VolumeLog,
  ) {
    this.dir = path.join(path.resolve(stateDir), 'volumes');
  }

  /** The store for a runtime: ext4-loop when `wantLoop` and the host can, else directory. Says which. */
  static async open(stateDir: string, wantLoop: boolean, log: VolumeLog): Promise<VolumeStore> {
    let method: VolumeMethod = 'directory';
    if (wantLoop) {
      const missing = await loopVolumesAvailable();
      if (missing === null) method = 'ext4-loop';
      else
        log.warn(
          `volumes: no size-limited volumes here (${missing}); volumes are plain directories and their size is not enforced`,
        );
    }
    const store = new VolumeStore(stateDir, method, log);
    log.info(
      method === 'ext4-loop'
        ? `volumes: ${store.dir}, each an ext4 image of its size, loop-mounted (the size is enforced)`
        : `volumes: ${store.dir}, plain directories (the size is NOT enforced)`,
    );
    return store;
  }

  private root(id: number): string {
    return path.join(this.dir, String(id));
  }

  /** Where a volume's files are on the host. */
  dataDir(id: number): string {
    return path.join(this.root(id), 'data');
  }

  private image(id: number): string {
    return path.join(this.root(id), 'volume.ext4');
  }

  /** The ids of the volumes held here. */
  held(): number[] {
    if (!existsSync(this.dir)) return [];
    return readdirSync(this.dir)
      .filter((n) => /^[1-9][0-9]*$/.test(n))
      .map(Number)
      .sort((a, b) => a - b);
  }

  private serial<T>(id: number, fn: () => Promise<T>): Promise<T> {
    const prev = this.busy.get(id) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    this.busy.set(id, next);
    void next
      .finally(() => {
        if (this.busy.get(id) === next) this.busy.delete(id);
      })
      .catch(() => {});
    return next;
  }

  /**
   * Makes the volume if it is new, mounts it if it is not (after a reboot), and answers its data
   * directory. Its data is never touched when it exists.
   */
  ensure(id: number, sizeGb: number): Promise<string> {
    return this.serial(id, async () => {
      const data = this.dataDir(id);
      mkdirSync(data, { recursive: true });
      if (this.method === 'directory') return data;
      const img = this.image(id);
      if (!existsSync(img)) {
        const tmp = `${img}.new`;
        rmSync(tmp, { force: true });
        await run('truncate', ['-s', `${Math.max(1, Math.round(sizeGb * 1000))}M`, tmp]);
        await run('mkfs.ext4', ['-q', '-F', '-m', '0', tmp]);
        // Renamed once formatted: an image file that exists is a whole volume.
        await run('mv', [tmp, img]);
        this.log.info(`volume ${id}: made (${sizeGb} GB, ext4 image)`);
      }
      if (!mountPoints().has(data)) {
        await run('mount', ['-o', 'loop,nodev,nosuid', img, data]);
        // Any user of the container may write there (the volume is its owner's alone).
        chmodSync(data, 0o777);
      }
      return data;
    });
  }

  /**
   * The data directory of a volume made here, mounted again if it is an image not mounted (after a
   * reboot); null for a volume never made here (nothing ever wrote it: it is empty).
   */
  existing(id: number): Promise<string | null> {
    return this.serial(id, async () => {
      const data = this.dataDir(id);
      if (this.method === 'directory') return existsSync(data) ? data : null;
      const img = this.image(id);
      if (!existsSync(img)) return null;
      if (!mountPoints().has(data)) {
        mkdirSync(data, { recursive: true });
        await run('mount', ['-o', 'loop,nodev,nosuid', img, data]);
      }
      return data;
    });
  }

  /** Deletes a volume and its data on the host. */
  remove(id: number): Promise<void> {
    return this.serial(id, async () => {
      const data = this.dataDir(id);
      if (mountPoints().has(data)) await run('umount', [data]);
      rmSync(this.root(id), { recursive: true, force: true });
      this.log.info(`volume ${id}: deleted with its data`);
    });
  }

  /**
   * Deletes every volume held here that `live` (the server's list for this agent's machines) does
   * not hold. A volume still mounted by a container is left for the next time (the server refuses
   * to delete a volume a live instance mounts, so that is only a destroy still under way).
   */
  async reconcile(live: readonly { id: number }[]): Promise<void> {
    const keep = new Set(live.map((v) => v.id));
    for (const id of this.held()) {
      if (keep.has(id)) continue;
      try {
        await this.remove(id);
      } catch (err) {
        this.log.warn(`volume ${id}: could not delete it yet (${(err as Error).message}); will retry`);
      }
    }
  }
}

/**
 * The process runtime's mounts: each volume's directory linked at its mount path under the
 * instance's root directory (the process's working directory: `/data` is `./data`), and its host
 * path in OPENRIG_VOLUME_<ID>. The variables to add to the instance's environment.
 */
export async function linkProcessVolumes(
  store: VolumeStore,
  rootDir: string,
  mounts: readonly VolumeMount[] | undefined,
): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  for (const m of mounts ?? []) {
    const data = await store.ensure(m.id, m.sizeGb);
    const rel = m.mountPath.replace(/^\/+/, '');
    const link = path.join(rootDir, rel);
    // The mount path was checked by the server (absolute, no `..`); this keeps it inside anyway.
    if (!link.startsWith(rootDir + path.sep)) continue;
    mkdirSync(path.dirname(link), { recursive: true });
    // A link left from an earlier start is replaced; a file or directory of the renter's is kept.
    let isLink = false;
    let exists = true;
    try {
      isLink = lstatSync(link).isSymbolicLink();
    } catch {
      exists = false;
    }
    if (isLink) rmSync(link);
    if (isLink || !exists) symlinkSync(data, link);
    env[`OPENRIG_VOLUME_${m.id}`] = data;
  }
  return env;
}
