// What a machine has: GPUs from `nvidia-smi` when present, else simulated from
// `--gpus "MODEL xN"`; CPU, RAM and disk from the host, shared evenly by `--machines N`.
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { statfsSync } from 'node:fs';
import type { AgentMachineHardware } from '../contract/agent-protocol.js';

export interface GpuSpec {
  name: string;
  count: number;
  /** MB per GPU */
  ram: number;
  driver: string;
}

/** Known models: memory (MB), a rough deep-learning performance score, max CUDA. */
const MODELS: Record<string, { ram: number; dlperf: number; cuda: number }> = {
  'RTX 3060': { ram: 12288, dlperf: 9, cuda: 12.4 },
  'RTX 3080': { ram: 10240, dlperf: 17, cuda: 12.4 },
  'RTX 3090': { ram: 24576, dlperf: 21, cuda: 12.4 },
  'RTX 4070': { ram: 12282, dlperf: 17, cuda: 12.4 },
  'RTX 4080': { ram: 16376, dlperf: 27, cuda: 12.4 },
  'RTX 4090': { ram: 24564, dlperf: 39, cuda: 12.4 },
  'RTX 5090': { ram: 32607, dlperf: 55, cuda: 12.8 },
  'RTX A4000': { ram: 16376, dlperf: 12, cuda: 12.4 },
  'RTX A5000': { ram: 24564, dlperf: 17, cuda: 12.4 },
  'RTX A6000': { ram: 49140, dlperf: 24, cuda: 12.4 },
  'RTX 6000Ada': { ram: 49140, dlperf: 45, cuda: 12.4 },
  L4: { ram: 23034, dlperf: 15, cuda: 12.4 },
  L40S: { ram: 46068, dlperf: 48, cuda: 12.4 },
  'Tesla T4': { ram: 15360, dlperf: 6, cuda: 12.4 },
  'Tesla V100': { ram: 16384, dlperf: 14, cuda: 12.4 },
  A40: { ram: 46068, dlperf: 26, cuda: 12.4 },
  'A100 PCIE': { ram: 40960, dlperf: 38, cuda: 12.4 },
  'A100 SXM4': { ram: 81920, dlperf: 45, cuda: 12.4 },
  'H100 PCIE': { ram: 81559, dlperf: 70, cuda: 12.8 },
  'H100 SXM': { ram: 81559, dlperf: 90, cuda: 12.8 },
};

function model(name: string) {
  const key = Object.keys(MODELS).find((k) => k.toLowerCase() === name.toLowerCase());
  return key ? { name: key, ...MODELS[key]! } : null;
}

/**
 * `--gpus "RTX 4090x2"`, `"RTX 4090 x2"`, `"RTX 4090"` (one). Returns an error message for a
 * value that names no GPU or a count outside 1–64.
 */
export function parseGpusFlag(raw: string): GpuSpec | { error: string } {
  // The count is the last "x" followed by one or two digits at the very end, so model names with
  // an X and a number ("RTX 4090") are not read as counts; "H100 SXMx8" is 8 × "H100 SXM".
  const m = /^(.*)[x×]\s*(\d{1,2})\s*$/i.exec(raw.trim());
  const name = (m ? m[1]! : raw).trim().replace(/\s+/g, ' ');
  const count = m ? Number(m[2]) : 1;
  if (!name) return { error: `--gpus must be "MODEL xN", e.g. "RTX 4090x2" (got ${JSON.stringify(raw)})` };
  if (!Number.isInteger(count) || count < 1 || count > 64)
    return { error: `--gpus: the count must be 1 to 64 (got ${JSON.stringify(raw)})` };
  const known = model(name);
  return { name: known?.name ?? name, count, ram: known?.ram ?? 16384, driver: 'simulated' };
}

/** `nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader,nounits`. */
export function parseNvidiaSmi(csv: string): GpuSpec | null {
  const rows = csv
    .split('\n')
    .map((l) => l.split(',').map((c) => c.trim()))
    .filter((r) => r.length >= 3 && r[0]);
  if (rows.length === 0) return null;
  // Market names drop the vendor prefix: "NVIDIA GeForce RTX 4090" → "RTX 4090".
  const name = rows[0]![0]!
    .replace(/^NVIDIA\s+/i, '')
    .replace(/^GeForce\s+/i, '')
    .replace(/^Tesla\s+(?=[A-Z]\d)/, 'Tesla ');
  return { name, count: rows.length, ram: Math.round(Number(rows[0]![1]) || 0), driver: rows[0]![2] ?? '' };
}

export function detectGpus(): GpuSpec | null {
  try {
    const out = execFileSync(
      'nvidia-smi',
      ['--query-gpu=name,memory.total,driver_version', '--format=csv,noheader,nounits'],
      { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'ignore'] },
    );
    return parseNvidiaSmi(out);
  } catch {
    return null;
  }
}

/**
 * Real GPUs shared by `--machines N`: each machine gets its own contiguous share, and its
 * instances see only those (CUDA_VISIBLE_DEVICES). Simulated GPUs: every machine has the full
 * `--gpus` count and no device list. Returns an error when there are fewer GPUs than machines.
 */
export function gpuShares(
  gpu: GpuSpec,
  n: number,
): { perMachine: number; devices: (string | null)[] } | { error: string } {
  if (gpu.driver === 'simulated')
    return { perMachine: gpu.count, devices: Array.from({ length: n }, () => null) };
  const per = Math.floor(gpu.count / n);
  if (per < 1) return { error: `--machines ${n}: this host has only ${gpu.count} GPU(s)` };
  return {
    perMachine: per,
    devices: Array.from({ length: n }, (_, s) =>
      Array.from({ length: per }, (_, i) => s * per + i).join(','),
    ),
  };
}

export function describeMachines(gpu: GpuSpec, n: number, stateDir: string): AgentMachineHardware[] {
  const share = gpuShares(gpu, n);
  if ('error' in share) throw new Error(share.error);
  const cpus = os.cpus();
  let diskGb = 100;
  try {
    const s = statfsSync(stateDir);
    diskGb = Math.floor((s.bavail * s.bsize) / 1e9);
  } catch {
    /* keep the default */
  }
  const known = model(gpu.name);
  const out: AgentMachineHardware[] = [];
  for (let slot = 0; slot < n; slot++) {
    out.push({
      slot,
      hostname: n === 1 ? os.hostname() : `${os.hostname()}-${slot}`,
      gpu_name: gpu.name,
      num_gpus: share.perMachine,
      gpu_ram: gpu.ram,
      cpu_name: (cpus[0]?.model ?? 'unknown CPU').trim(),
      cpu_cores: Math.max(1, Math.floor(cpus.length / n)),
      cpu_ghz: Math.round(((cpus[0]?.speed ?? 0) / 1000) * 10) / 10,
      cpu_ram: Math.floor(os.totalmem() / 1048576 / n),
      disk_space: Math.max(1, Math.floor(diskGb / n)),
      driver_version: gpu.driver,
      cuda_max_good: known?.cuda ?? 12.4,
      dlperf: Math.round((known?.dlperf ?? 10) * share.perMachine * 10) / 10,
    });
  }
  return out;
}
