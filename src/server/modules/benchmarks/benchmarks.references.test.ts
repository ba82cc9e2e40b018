// The comparison of a run with its GPU model's reference, which decides automatic verification
// and deverification (docs/trust.md).
import { describe, expect, it } from 'vitest';
import type { GpuBenchmark } from '../../../contract/benchmarks.js';
import { dlperfOf, judgeBenchmark, referenceFor } from './benchmarks.references.js';

const run = (over: Partial<Exclude<GpuBenchmark, { error: string }>> = {}): GpuBenchmark => ({
  name: 'RTX 4090',
  count: 2,
  ram_mb: 24564,
  driver: '550.54.14',
  compute_cap: 890,
  pci_gen: 4,
  pcie_bw: 25,
  gpu_mem_bw: 900,
  total_flops: 240,
  power_limit: 450,
  max_temp: 87,
  display_active: false,
  nvlink_bw: 0,
  cuda: 'PyTorch on 2 GPU(s)',
  ...over,
});
const machine = { gpu_name: 'RTX 4090', num_gpus: 2, gpu_ram: 24564, driver_version: '550.54.14' };

describe('references', () => {
  it("finds a model by nvidia-smi's name as well as the market name", () => {
    expect(referenceFor('RTX 4090')).toEqual({ tflops: 115.6, memBw: 806, ramMb: 24564 });
    expect(referenceFor('Tesla V100-PCIE-16GB')).toEqual(referenceFor('Tesla V100'));
    expect(referenceFor('A100-SXM4-80GB')).toEqual(referenceFor('A100 SXM4'));
    expect(referenceFor('RTX 40900')).toBeNull();
  });

  it('is within tolerance when every figure is at least (1 - tolerance) of the reference', () => {
    expect(judgeBenchmark(run(), machine, 0.25)).toEqual({ ok: true });
  });

  it('is out of tolerance for a slow card, another model, fewer GPUs, or a lost GPU', () => {
    const slow = judgeBenchmark(run({ total_flops: 100 }), machine, 0.25);
    expect(slow).toMatchObject({ ok: false });
    expect(slow.ok === false && slow.why).toContain('matrix multiply 50 TFLOPS per GPU');
    expect(judgeBenchmark(run({ gpu_mem_bw: 300 }), machine, 0.25).ok).toBe(false);
    expect(judgeBenchmark(run({ name: 'RTX 3090' }), machine, 0.25).ok).toBe(false);
    expect(judgeBenchmark(run({ count: 1 }), machine, 0.25).ok).toBe(false);
    expect(judgeBenchmark({ error: 'no NVIDIA GPU' }, machine, 0.25).ok).toBe(false);
    // A looser tolerance takes the slow card.
    expect(judgeBenchmark(run({ total_flops: 100 }), machine, 0.6).ok).toBe(true);
  });

  it('cannot say without CUDA figures, a reference, or for simulated GPUs', () => {
    expect(judgeBenchmark(run({ total_flops: 0, gpu_mem_bw: 0 }), machine, 0.25).ok).toBeNull();
    expect(
      judgeBenchmark(run({ name: 'Quadro X' }), { ...machine, gpu_name: 'Quadro X' }, 0.25).ok,
    ).toBeNull();
    expect(
      judgeBenchmark({ error: 'simulated' }, { ...machine, driver_version: 'simulated' }, 0.25).ok,
    ).toBeNull();
  });

  it('makes dlperf from the matrix multiply and the memory bandwidth', () => {
    expect(dlperfOf(run())).toBe(66);
    expect(dlperfOf(run({ total_flops: 0 }))).toBe(0);
    expect(dlperfOf({ error: 'none' })).toBe(0);
  });
});
