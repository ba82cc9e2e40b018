// The GPU part of the benchmarks (docs/benchmarks.md), through the NVIDIA driver's own interface:
// `nvidia-smi --query-gpu=… --format=csv` for what the driver knows (model, memory, driver,
// compute capability, PCIe link, power limit, display), `nvidia-smi -q -d TEMPERATURE` for the
// slowdown temperature, `nvidia-smi nvlink -s` for NVLink, and the CUDA runtime for the measured
// figures (matrix multiply, device memory copy, host-to-device copy). No npm package binds the
// CUDA runtime, so the CUDA part runs a short script under the host's Python with PyTorch when it
// has one (a child process, off the agent's event loop); without it those figures are 0 and the
// run says why. The parsers are pure and tested on recorded outputs (fixtures/).
import { execFile } from 'node:child_process';
import type { GpuBenchmark } from '../../contract/benchmarks.js';

/** The --query-gpu fields, in this order (compute_cap needs driver 510 or later). */
export const QUERY_FIELDS = [
  'index',
  'name',
  'memory.total',
  'driver_version',
  'pcie.link.gen.max',
  'pcie.link.width.max',
  'power.limit',
  'display_active',
  'compute_cap',
] as const;

export interface SmiGpu {
  index: number;
  /** Market name: "NVIDIA GeForce RTX 4090" → "RTX 4090". */
  name: string;
  ramMb: number;
  driver: string;
  pciGen: number;
  pciWidth: number;
  powerLimit: number;
  displayActive: boolean;
  /** × 100; 0 when the driver does not report it. */
  computeCap: number;
}

/** The market name of a GPU as nvidia-smi names it (as registration names it, hardware.ts). */
export function marketName(raw: string): string {
  return raw
    .trim()
    .replace(/^NVIDIA\s+/i, '')
    .replace(/^GeForce\s+/i, '');
}

/** A number nvidia-smi printed; 0 for "[N/A]", "[Not Supported]" and the like. */
function num(v: string | undefined): number {
  const n = Number((v ?? '').trim());
  return Number.isFinite(n) ? n : 0;
}

/**
 * `nvidia-smi --query-gpu=QUERY_FIELDS --format=csv,noheader,nounits` (the last field may be
 * missing on drivers before compute_cap). Lines that are not a GPU's are skipped.
 */
export function parseQueryGpu(csv: string): SmiGpu[] {
  const out: SmiGpu[] = [];
  for (const line of csv.split('\n')) {
    const c = line.split(',').map((x) => x.trim());
    if (c.length < 8 || !/^\d+$/.test(c[0]!) || !c[1]) continue;
    out.push({
      index: Number(c[0]),
      name: marketName(c[1]),
      ramMb: Math.round(num(c[2])),
      driver: c[3] ?? '',
      pciGen: num(c[4]),
      pciWidth: num(c[5]),
      powerLimit: num(c[6]),
      displayActive: /^enabled$/i.test(c[7] ?? ''),
      computeCap: Math.round(num(c[8]) * 100),
    });
  }
  return out;
}

/**
 * The slowdown temperature (°C) from `nvidia-smi -q -d TEMPERATURE` of one GPU: "GPU Slowdown
 * Temp", else "GPU Max Operating Temp", else "GPU Target Temperature" (drivers that print
 * T.Limit offsets instead of limits); 0 when none is a number.
 */
export function parseMaxTemp(text: string): number {
  for (const label of ['GPU Slowdown Temp', 'GPU Max Operating Temp', 'GPU Target Temperature']) {
    const m = new RegExp(`^\\s*${label}\\s*:\\s*(\\d+(?:\\.\\d+)?)\\s*C\\s*$`, 'm').exec(text);
    if (m) return Number(m[1]);
  }
  return 0;
}

/** GB/s over the active NVLink links of the first GPU in `nvidia-smi nvlink -s` (0: none). */
export function parseNvlink(text: string): number {
  let total = 0;
  let gpus = 0;
  for (const line of text.split('\n')) {
    if (/^GPU \d+:/.test(line)) {
      gpus++;
      continue;
    }
    if (gpus !== 1) continue;
    const m = /^\s*Link \d+:\s*([\d.]+)\s*GB\/s/.exec(line);
    if (m) total += Number(m[1]);
  }
  return Math.round(total * 100) / 100;
}

/** GB/s per lane of each PCIe generation (after encoding). */
const LANE_GBPS: Record<number, number> = { 1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563 };

/** The link's rate, GB/s: what the slot and the GPU allow (used when CUDA cannot measure it). */
export function linkRate(gen: number, width: number): number {
  return Math.round((LANE_GBPS[gen] ?? 0) * width * 100) / 100;
}

/** What the CUDA script prints: one JSON line. */
export interface CudaFigures {
  total_flops: number;
  gpu_mem_bw: number;
  pcie_bw: number;
  devices: number;
}

/** The CUDA script's JSON line (the last line that parses), or an error message. */
export function parseCudaOutput(stdout: string): CudaFigures | { error: string } {
  const lines = stdout.trim().split('\n').reverse();
  for (const l of lines) {
    try {
      const j = JSON.parse(l) as Partial<CudaFigures> & { error?: string };
      if (typeof j.error === 'string') return { error: j.error };
      if (
        [j.total_flops, j.gpu_mem_bw, j.pcie_bw, j.devices].every(
          (v) => typeof v === 'number' && Number.isFinite(v) && v >= 0,
        )
      )
        return j as CudaFigures;
    } catch {
      /* not the JSON line */
    }
  }
  return { error: 'the CUDA script printed no figures' };
}

/**
 * The CUDA measurements, for PyTorch (the host's Python): FP16 matrix multiply on each visible
 * GPU (N = 4096, 10 timed rounds after 3 warm-ups; 2·N³ flops each), a 256 MB device-to-device
 * copy on GPU 0 (read and write counted), and a 256 MB pinned host-to-device copy on GPU 0.
 */
export const CUDA_SCRIPT = String.raw`
import json, time
try:
    import torch
except Exception as e:
    print(json.dumps({"error": "no CUDA runtime: PyTorch is not installed for python3 (" + type(e).__name__ + ")"})); raise SystemExit(0)
if not torch.cuda.is_available():
    print(json.dumps({"error": "no CUDA runtime: torch.cuda.is_available() is false"})); raise SystemExit(0)
n = torch.cuda.device_count(); N = 4096; R = 10; total = 0.0
for d in range(n):
    dev = torch.device("cuda", d)
    a = torch.randn(N, N, device=dev, dtype=torch.float16); b = torch.randn(N, N, device=dev, dtype=torch.float16)
    for _ in range(3): a @ b
    torch.cuda.synchronize(dev); t = time.perf_counter()
    for _ in range(R): a @ b
    torch.cuda.synchronize(dev); total += 2 * N ** 3 * R / (time.perf_counter() - t) / 1e12
S = 256 * 2 ** 20; dev = torch.device("cuda", 0)
x = torch.empty(S, dtype=torch.uint8, device=dev); y = torch.empty_like(x)
for _ in range(3): y.copy_(x)
torch.cuda.synchronize(dev); t = time.perf_counter()
for _ in range(R): y.copy_(x)
torch.cuda.synchronize(dev); mem = 2 * S * R / (time.perf_counter() - t) / 1e9
h = torch.empty(S, dtype=torch.uint8).pin_memory()
x.copy_(h, non_blocking=True); torch.cuda.synchronize(dev); t = time.perf_counter()
for _ in range(R): x.copy_(h, non_blocking=True)
torch.cuda.synchronize(dev); pcie = S * R / (time.perf_counter() - t) / 1e9
print(json.dumps({"total_flops": total, "gpu_mem_bw": mem, "pcie_bw": pcie, "devices": n}))
`;

export type Exec = (
  cmd: string,
  args: string[],
  opts: { timeoutMs: number; env?: NodeJS.ProcessEnv },
) => Promise<string>;

/** execFile as a promise of stdout (a child process: the event loop only waits for it). */
export const execStdout: Exec = (cmd, args, opts) =>
  new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      { encoding: 'utf8', timeout: opts.timeoutMs, maxBuffer: 4 * 1024 * 1024, env: opts.env ?? process.env },
      (err: Error | null, stdout: string) => (err ? reject(err) : resolve(stdout)),
    );
  });

/**
 * The GPU part of a run for the GPUs `devices` ("0,1"; null: all of them). `exec` runs a command
 * and gives its stdout (tests give recorded outputs).
 */
export async function benchmarkGpus(devices: string | null, exec: Exec = execStdout): Promise<GpuBenchmark> {
  const sel = devices ? ['-i', devices] : [];
  let csv: string;
  try {
    csv = await exec(
      'nvidia-smi',
      [`--query-gpu=${QUERY_FIELDS.join(',')}`, '--format=csv,noheader,nounits', ...sel],
      {
        timeoutMs: 10_000,
      },
    );
  } catch (err) {
    // Drivers before compute_cap refuse the field: ask again without it.
    try {
      csv = await exec(
        'nvidia-smi',
        [`--query-gpu=${QUERY_FIELDS.slice(0, -1).join(',')}`, '--format=csv,noheader,nounits', ...sel],
        { timeoutMs: 10_000 },
      );
    } catch {
      return { error: `no NVIDIA GPU: nvidia-smi did not answer (${(err as Error).message.split('\n')[0]})` };
    }
  }
  const gpus = parseQueryGpu(csv);
  if (gpus.length === 0) return { error: 'no NVIDIA GPU: nvidia-smi listed none' };
  const first = gpus[0]!;
  const one = ['-i', String(first.index)];
  const maxTemp = await exec('nvidia-smi', ['-q', '-d', 'TEMPERATURE', ...one], { timeoutMs: 10_000 })
    .then(parseMaxTemp)
    .catch(() => 0);
  const nvlink = await exec('nvidia-smi', ['nvlink', '-s', ...one], { timeoutMs: 10_000 })
    .then(parseNvlink)
    .catch(() => 0);
  const env = devices ? { ...process.env, CUDA_VISIBLE_DEVICES: devices } : process.env;
  const cuda = await exec('python3', ['-c', CUDA_SCRIPT], { timeoutMs: 120_000, env })
    .then(parseCudaOutput)
    .catch((err: Error) => ({ error: `no CUDA runtime: python3 failed (${err.message.split('\n')[0]})` }));
  const measured = !('error' in cuda) && cuda.devices > 0;
  return {
    name: first.name,
    count: gpus.length,
    ram_mb: Math.min(...gpus.map((g) => g.ramMb)),
    driver: first.driver,
    compute_cap: first.computeCap,
    pci_gen: first.pciGen,
    pcie_bw: measured ? cuda.pcie_bw : linkRate(first.pciGen, first.pciWidth),
    gpu_mem_bw: measured ? cuda.gpu_mem_bw : 0,
    total_flops: measured ? cuda.total_flops : 0,
    power_limit: first.powerLimit,
    max_temp: maxTemp,
    display_active: gpus.some((g) => g.displayActive),
    nvlink_bw: nvlink,
    cuda: measured
      ? `PyTorch on ${cuda.devices} GPU(s)`
      : `${'error' in cuda ? cuda.error : 'no GPU visible to CUDA'}; pcie_bw is the link's rate`,
  };
}
