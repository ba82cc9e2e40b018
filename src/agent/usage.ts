// What the agent measures of its instances for the server (docs/agent.md): the bytes each one's
// disk holds and the utilisation of its GPUs. Measuring costs something (a walk of a directory
// tree, the engine's size of a writable layer, a run of nvidia-smi), so each figure is taken at
// most once per interval, in the background, and every sync reports the latest one: a measurement
// never holds up a heartbeat.
import { execFile } from 'node:child_process';
import { lstat, opendir } from 'node:fs/promises';
import path from 'node:path';
import type { DiskUsage } from './runtime.js';

/**
 * How often an instance's disk (and the host's GPUs) are measured by default: a walk of a large
 * tree or Docker's size of a container takes seconds of disk reads, and a renter loses nothing
 * with a figure a minute old. OPENRIG_USAGE_INTERVAL_S overrides it.
 */
export const USAGE_INTERVAL_MS = 60_000;

export interface WalkLimits {
  /** Entries (files, directories, links) looked at before the walk gives up. */
  maxEntries: number;
  /** Milliseconds before the walk gives up. */
  maxMs: number;
}

/** A tree larger than this is not worth a full count every minute: what was counted is reported. */
export const WALK_LIMITS: WalkLimits = { maxEntries: 1_000_000, maxMs: 30_000 };

/** Entries whose lstat runs at once: enough to keep the disk busy, few of libuv's threads. */
const BATCH = 32;

/**
 * The bytes under `root` as Docker counts a container's writable layer: the apparent size of every
 * entry that is not a directory (symbolic links not followed), each hard-linked file once.
 * Asynchronous, and bounded by `limits`: a walk cut short, or a directory it could not read,
 * returns what it counted with `partial` saying why. Null when `root` does not exist.
 */
export async function dirSize(
  root: string,
  limits: WalkLimits = WALK_LIMITS,
  now: () => number = Date.now,
): Promise<DiskUsage | null> {
  try {
    const st = await lstat(root);
    if (!st.isDirectory()) return { bytes: st.size };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const end = now() + limits.maxMs;
  const linked = new Set<string>(); // dev:ino of files with more than one link
  const dirs = [root];
  let bytes = 0;
  let entries = 0;
  let partial: string | undefined;
  const count = async (batch: string[]) => {
    const stats = await Promise.all(batch.map((p) => lstat(p).catch(() => null))); // gone meanwhile
    stats.forEach((st, i) => {
      if (!st) return;
      if (st.isDirectory()) {
        dirs.push(batch[i]!);
        return;
      }
      if (st.nlink > 1) {
        const key = `${st.dev}:${st.ino}`;
        if (linked.has(key)) return;
        linked.add(key);
      }
      bytes += st.size;
    });
  };
  while (dirs.length > 0) {
    const dir = dirs.pop()!;
    let handle;
    try {
      handle = await opendir(dir, { bufferSize: BATCH });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') partial ??= `${path.relative(root, dir) || '.'} is unreadable (${code})`;
      continue;
    }
    let batch: string[] = [];
    // Leaving the loop early (return) closes the directory.
    for await (const d of handle) {
      if (++entries > limits.maxEntries)
        return { bytes, partial: `the walk stopped after ${limits.maxEntries} entries` };
      const p = path.join(dir, d.name);
      if (d.isDirectory()) dirs.push(p);
      else batch.push(p); // a type the directory does not tell is found by lstat
      if (batch.length >= BATCH) {
        await count(batch);
        batch = [];
        if (now() > end) return { bytes, partial: `the walk stopped after ${limits.maxMs / 1000} s` };
      }
    }
    await count(batch);
    if (now() > end) return { bytes, partial: `the walk stopped after ${limits.maxMs / 1000} s` };
  }
  return partial === undefined ? { bytes } : { bytes, partial };
}

/**
 * `nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits`: utilisation in
 * percent by GPU index. A GPU without a figure (`[N/A]`, `[Not Supported]`) is left out.
 */
export function parseGpuUtil(csv: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of csv.split('\n')) {
    const [index, util] = line.split(',').map((c) => c.trim());
    if (!index || !/^\d+$/.test(index) || !util || !/^\d+(\.\d+)?$/.test(util)) continue;
    const n = Number(util);
    if (n <= 100) out.set(index, n);
  }
  return out;
}

/** The mean utilisation of the GPUs `indexes` (one decimal); null when none of them has a figure. */
export function meanGpuUtil(all: ReadonlyMap<string, number>, indexes: readonly string[]): number | null {
  const known = indexes.map((i) => all.get(i)).filter((v): v is number => v !== undefined);
  if (known.length === 0) return null;
  return Math.round((known.reduce((a, b) => a + b, 0) / known.length) * 10) / 10;
}

/** Utilisation of the host's GPUs by index, from nvidia-smi; null when it cannot say. */
export function queryGpuUtil(): Promise<Map<string, number> | null> {
  return new Promise((resolve) => {
    execFile(
      'nvidia-smi',
      ['--query-gpu=index,utilization.gpu', '--format=csv,noheader,nounits'],
      { encoding: 'utf8', timeout: 10_000 },
      (err, stdout) => resolve(err ? null : parseGpuUtil(stdout)),
    );
  });
}

export interface UsageMeterOptions {
  /** The disk an instance holds (Runtime.diskUsage); absent: disk usage is not reported. */
  disk?: (id: number) => Promise<DiskUsage | null>;
  /** Utilisation of the host's GPUs by index (queryGpuUtil); absent: the GPUs are simulated. */
  gpus?: () => Promise<Map<string, number> | null>;
  intervalMs?: number;
  log: { warn(msg: string): void };
  now?: () => number;
}

interface Sample<T> {
  /** When the last measurement began (ms). */
  at: number;
  value: T | undefined;
  busy: boolean;
  warned: boolean;
}

/** The latest figures, each refreshed in the background at most once per interval. */
export class UsageMeter {
  private readonly disks = new Map<number, Sample<number>>();
  private readonly gpu: Sample<Map<string, number> | null> = {
    at: -Infinity,
    value: undefined,
    busy: false,
    warned: false,
  };
  private readonly pending = new Set<Promise<void>>();
  private readonly intervalMs: number;
  private readonly now: () => number;

  constructor(private readonly o: UsageMeterOptions) {
    this.intervalMs = o.intervalMs ?? USAGE_INTERVAL_MS;
    this.now = o.now ?? Date.now;
  }

  /**
   * The bytes the instance's disk held at its last measurement; undefined before the first (or
   * when the runtime cannot tell). Begins a new measurement when the last began an interval ago.
   */
  disk(id: number): number | undefined {
    const measure = this.o.disk;
    if (!measure) return undefined;
    let s = this.disks.get(id);
    if (!s) this.disks.set(id, (s = { at: -Infinity, value: undefined, busy: false, warned: false }));
    const sample = s;
    this.refresh(sample, async () => {
      const r = await measure(id);
      // Nothing there yet (a start still pulling): not a measurement, the next sync tries again.
      if (r === null) sample.at = -Infinity;
      else if (r.partial && !sample.warned) {
        sample.warned = true;
        this.o.log.warn(`instance ${id}: its disk usage is a lower bound: ${r.partial}`);
      }
      return r?.bytes;
    }).catch((err: Error) => {
      if (!sample.warned) this.o.log.warn(`instance ${id}: its disk usage is unknown: ${err.message}`);
      sample.warned = true;
    });
    return sample.value;
  }

  /**
   * The mean utilisation of the GPUs `indexes` at the last run of nvidia-smi: null with simulated
   * GPUs, none given, or none measured; undefined before the first run has answered.
   */
  gpuUtil(indexes: readonly string[]): number | null | undefined {
    const query = this.o.gpus;
    if (!query || indexes.length === 0) return null;
    this.refresh(this.gpu, query).catch(() => {});
    if (this.gpu.value === undefined) return undefined;
    return this.gpu.value === null ? null : meanGpuUtil(this.gpu.value, indexes);
  }

  /** Forgets the instances that are no longer on the host. */
  retain(ids: ReadonlySet<number>): void {
    for (const id of this.disks.keys()) if (!ids.has(id)) this.disks.delete(id);
  }

  /** Resolves once the measurements under way have ended (for tests). */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled(this.pending);
  }

  /** Runs `measure` into `s` when the last one began an interval ago and none runs now. */
  private refresh<T>(s: Sample<T>, measure: () => Promise<T | undefined>): Promise<void> {
    const now = this.now();
    if (s.busy || now - s.at < this.intervalMs) return Promise.resolve();
    s.at = now;
    s.busy = true;
    const run = measure()
      .then((v) => {
        s.value = v;
      })
      .finally(() => {
        s.busy = false;
        this.pending.delete(run);
      });
    this.pending.add(run);
    return run;
  }
}
