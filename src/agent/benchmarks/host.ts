// The host part of the benchmarks (docs/benchmarks.md): CPU, memory and disk, measured in a
// worker thread so the agent's event loop keeps serving heartbeats and logins meanwhile, and the
// facts a host tells about itself (CPU architecture and AVX, Ubuntu release, motherboard).
// Each measurement is short: about a second for all three on a small machine.
import { Worker } from 'node:worker_threads';
import { readFile } from 'node:fs/promises';
import os from 'node:os';

export interface HostFigures {
  /** The fixed workload's score on one core: rounds of it per second. */
  cpu_score: number;
  /** GB/s of a 64 MB memory copy. */
  mem_bw: number;
  /** MB/s of a 32 MB write to the state directory, synced to the disk. */
  disk_bw: number;
}

/**
 * The worker's code (a string, so the bundle needs no file of its own): a fixed integer workload
 * (xorshift and a multiply-add over 64 K words, which the JIT cannot fold) timed for `cpuMs`,
 * `Buffer.copy` of 64 MB timed for `memMs`, and a 32 MB write with fsync in `dir`.
 */
const WORKER = String.raw`
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const path = require('node:path');
const { cpuMs, memMs, dir, diskBytes } = workerData;
function cpu() {
  const a = new Uint32Array(65536);
  let x = 2463534242, rounds = 0;
  const end = performance.now() + cpuMs;
  while (performance.now() < end) {
    for (let i = 0; i < a.length; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; a[i] = (a[i] * 31 + x) >>> 0; }
    rounds++;
  }
  return rounds / (cpuMs / 1000);
}
function mem() {
  const n = 64 * 1024 * 1024;
  const src = Buffer.alloc(n, 1), dst = Buffer.allocUnsafe(n);
  src.copy(dst);
  let bytes = 0; const t = performance.now(); const end = t + memMs;
  while (performance.now() < end) { src.copy(dst); bytes += n; }
  return bytes / ((performance.now() - t) / 1000) / 1e9;
}
function disk() {
  const file = path.join(dir, '.openrig-bench-' + process.pid + '-' + Date.now());
  const chunk = Buffer.alloc(4 * 1024 * 1024, 7);
  const t = performance.now();
  const fd = fs.openSync(file, 'w');
  try {
    for (let w = 0; w < diskBytes; w += chunk.length) fs.writeSync(fd, chunk);
    fs.fsyncSync(fd);
  } finally { fs.closeSync(fd); fs.rmSync(file, { force: true }); }
  return diskBytes / ((performance.now() - t) / 1000) / 1e6;
}
let d = 0;
try { d = disk(); } catch { d = 0; }
parentPort.postMessage({ cpu_score: cpu(), mem_bw: mem(), disk_bw: d });
`;

/** Runs the CPU, memory and disk measurements in a worker thread. */
export function measureHost(
  dir: string,
  o: { cpuMs?: number; memMs?: number; diskBytes?: number } = {},
): Promise<HostFigures> {
  return new Promise((resolve, reject) => {
    const w = new Worker(WORKER, {
      eval: true,
      workerData: {
        cpuMs: o.cpuMs ?? 400,
        memMs: o.memMs ?? 200,
        dir,
        diskBytes: o.diskBytes ?? 32 * 1024 * 1024,
      },
    });
    w.once('message', (m: HostFigures) => {
      resolve({
        cpu_score: Math.round(m.cpu_score * 10) / 10,
        mem_bw: Math.round(m.mem_bw * 100) / 100,
        disk_bw: Math.round(m.disk_bw),
      });
      void w.terminate();
    });
    w.once('error', reject);
    w.once('exit', (code) => {
      if (code !== 0) reject(new Error(`the benchmark worker exited with ${code}`));
    });
  });
}

/** "amd64", "arm64", … (the names Debian and Docker give). */
export function cpuArch(arch: string = os.arch()): string {
  return (
    (
      {
        x64: 'amd64',
        arm64: 'arm64',
        arm: 'armhf',
        ia32: 'i386',
        ppc64: 'ppc64el',
        s390x: 's390x',
      } as Record<string, string>
    )[arch] ?? arch
  );
}

/** Whether /proc/cpuinfo's flags include avx (false where there is no such file). */
export function hasAvx(cpuinfo: string): boolean {
  return /^flags\s*:.*\bavx\b/m.test(cpuinfo);
}

/** VERSION_ID of an Ubuntu /etc/os-release ("22.04"); "" on another system. */
export function ubuntuVersion(osRelease: string): string {
  if (!/^ID=("?)ubuntu\1\s*$/m.test(osRelease)) return '';
  return /^VERSION_ID="?([0-9.]+)"?\s*$/m.exec(osRelease)?.[1] ?? '';
}

/**
 * The highest clock of the CPU in GHz: cpufreq's maximum, else what os.cpus() says, else the
 * highest `cpu MHz` of /proc/cpuinfo (a virtual machine has no cpufreq and Node may read 0 there);
 * 0 when none says.
 */
export function cpuGhz(maxFreqKhz: string | null, cpus = os.cpus(), cpuinfo = ''): number {
  const khz = Number(maxFreqKhz?.trim());
  if (Number.isFinite(khz) && khz > 0) return Math.round(khz / 1e5) / 10;
  const speed = cpus[0]?.speed ?? 0;
  if (speed > 0) return Math.round((speed / 1000) * 10) / 10;
  const mhz = [...cpuinfo.matchAll(/^cpu MHz\s*:\s*([0-9.]+)\s*$/gm)].map((m) => Number(m[1]));
  const top = Math.max(0, ...mhz.filter((n) => Number.isFinite(n) && n < 100_000));
  return Math.round((top / 1000) * 10) / 10;
}

const read = (p: string) => readFile(p, 'utf8').catch(() => null);

/** What the host says of itself (files of /proc, /sys and /etc; "" when one is missing). */
export async function hostFacts(): Promise<{
  arch: string;
  has_avx: boolean;
  ghz: number;
  ubuntu_version: string;
  mobo_name: string;
}> {
  const [cpuinfo, release, board, maxFreq] = await Promise.all([
    read('/proc/cpuinfo'),
    read('/etc/os-release'),
    read('/sys/class/dmi/id/board_name'),
    read('/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq'),
  ]);
  return {
    arch: cpuArch(),
    has_avx: hasAvx(cpuinfo ?? ''),
    ghz: cpuGhz(maxFreq, os.cpus(), cpuinfo ?? ''),
    ubuntu_version: ubuntuVersion(release ?? ''),
    mobo_name: (board ?? '').trim().slice(0, 200),
  };
}
