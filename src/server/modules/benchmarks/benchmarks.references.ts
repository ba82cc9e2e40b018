// The reference a machine's benchmarks are compared with, per GPU model, and the comparison
// (docs/benchmarks.md, "References"). A reference is what a healthy card of the model measures
// with the agent's method: about 70 % of the model's peak FP16 tensor throughput with FP32
// accumulation for the matrix multiply, and about 80 % of its peak memory bandwidth for the
// device copy (published peak figures; measured cards land near these). A figure is within
// tolerance when it is at least (1 − tolerance) × the reference.
import type { GpuBenchmark } from '../../../contract/benchmarks.js';

export interface GpuReference {
  /** TFLOPS per GPU the matrix multiply reaches. */
  tflops: number;
  /** GB/s per GPU the device copy reaches. */
  memBw: number;
  /** MB of memory per GPU the driver reports (nvidia-smi memory.total). */
  ramMb: number;
}

/** Peak FP16 tensor TFLOPS (FP32 accumulate, dense) and peak memory GB/s, per market name. */
const PEAKS: Record<string, [tflops: number, memBw: number, ramMb: number]> = {
  'RTX 3060': [25.6, 360, 12288],
  'RTX 3080': [59.5, 760, 10240],
  'RTX 3090': [71, 936, 24576],
  'RTX 4070': [58.3, 504, 12282],
  'RTX 4080': [97.5, 717, 16376],
  'RTX 4090': [165.2, 1008, 24564],
  'RTX 5090': [209.5, 1792, 32607],
  'RTX A4000': [76.7, 448, 16376],
  'RTX A5000': [111, 768, 24564],
  'RTX A6000': [154.8, 768, 49140],
  'RTX 6000Ada': [364, 960, 49140],
  L4: [121, 300, 23034],
  L40S: [362, 864, 46068],
  'Tesla T4': [65, 320, 15360],
  'Tesla V100': [112, 900, 16384],
  A40: [149.7, 696, 46068],
  'A100 PCIE': [312, 1555, 40960],
  'A100 SXM4': [312, 2039, 81920],
  'H100 PCIE': [756, 2000, 81559],
  'H100 SXM': [989, 3350, 81559],
};

/** A model name compared: lower case, dashes as spaces, no trailing memory size ("16gb"). */
const norm = (name: string) =>
  name
    .trim()
    .toLowerCase()
    .replace(/[-_]+/g, ' ')
    .replace(/\s+/g, ' ')
    .replace(/ \d+gb$/, '');

/**
 * The reference of a GPU model, or null when openrig has none for it: the longest reference name
 * the model's name starts with, word for word ("Tesla V100-PCIE-16GB" is a Tesla V100,
 * "A100-SXM4-80GB" an A100 SXM4, as nvidia-smi names them).
 */
export function referenceFor(gpuName: string): GpuReference | null {
  const n = norm(gpuName);
  const key = Object.keys(PEAKS)
    .filter((k) => n === norm(k) || n.startsWith(`${norm(k)} `))
    .sort((a, b) => b.length - a.length)[0];
  if (!key) return null;
  const [tflops, memBw, ramMb] = PEAKS[key]!;
  return {
    tflops: Math.round(tflops * 0.7 * 10) / 10,
    memBw: Math.round(memBw * 0.8),
    ramMb,
  };
}

/** The GPU models that have a reference. */
export const REFERENCE_MODELS: readonly string[] = Object.keys(PEAKS);

export type ToleranceVerdict =
  | { ok: true }
  /** The benchmarks cannot say (no GPU measured, no reference, no CUDA figures): neither verifies nor deverifies. */
  | { ok: null; why: string }
  /** A figure is out of tolerance: deverifies a verified machine. */
  | { ok: false; why: string };

/**
 * Whether a run's GPU figures are within `tolerance` of the reference for `gpuName` (the model
 * the machine is registered with). A run that saw another model, fewer GPUs or less memory
 * than the machine advertises is out of tolerance.
 */
export function judgeBenchmark(
  gpu: GpuBenchmark,
  advertised: { gpu_name: string; num_gpus: number; gpu_ram: number; driver_version: string },
  tolerance: number,
): ToleranceVerdict {
  // A machine registered with simulated GPUs (the agent's --gpus) has none to measure; one
  // registered with real GPUs whose benchmark sees none has lost them.
  if ('error' in gpu)
    return advertised.driver_version === 'simulated'
      ? { ok: null, why: `the benchmark measured no GPU (${gpu.error})` }
      : { ok: false, why: `the benchmark measured no GPU (${gpu.error})` };
  if (gpu.name.toLowerCase() !== advertised.gpu_name.toLowerCase())
    return {
      ok: false,
      why: `the benchmark saw ${gpu.name}, the machine is registered as ${advertised.gpu_name}`,
    };
  if (gpu.count < advertised.num_gpus)
    return {
      ok: false,
      why: `the benchmark saw ${gpu.count} GPU(s), the machine advertises ${advertised.num_gpus}`,
    };
  const ref = referenceFor(gpu.name);
  if (!ref) return { ok: null, why: `openrig has no reference for ${gpu.name}` };
  const floor = 1 - tolerance;
  if (gpu.ram_mb < ref.ramMb * floor)
    return { ok: false, why: `GPU memory ${gpu.ram_mb} MB is below ${gpu.name}'s ${ref.ramMb} MB` };
  if (gpu.total_flops <= 0 || gpu.gpu_mem_bw <= 0)
    return { ok: null, why: `the GPU throughput was not measured (${gpu.cuda})` };
  const perGpu = gpu.total_flops / gpu.count;
  if (perGpu < ref.tflops * floor)
    return {
      ok: false,
      why: `matrix multiply ${round1(perGpu)} TFLOPS per GPU is below ${Math.round(floor * 100)} % of ${gpu.name}'s reference ${ref.tflops}`,
    };
  if (gpu.gpu_mem_bw < ref.memBw * floor)
    return {
      ok: false,
      why: `GPU memory bandwidth ${round1(gpu.gpu_mem_bw)} GB/s is below ${Math.round(floor * 100)} % of ${gpu.name}'s reference ${ref.memBw}`,
    };
  return { ok: true };
}

const round1 = (n: number) => Math.round(n * 10) / 10;

/**
 * The dlperf score of a run (openrig's formula, docs/benchmarks.md): 0.2 × the machine's FP16
 * TFLOPS + 0.01 × its GPUs' memory bandwidth in GB/s, one decimal. 0 without CUDA figures.
 */
export function dlperfOf(gpu: GpuBenchmark): number {
  if ('error' in gpu || gpu.total_flops <= 0) return 0;
  return round1(0.2 * gpu.total_flops + 0.01 * gpu.gpu_mem_bw * gpu.count);
}
