import { describe, expect, it } from 'vitest';
import { describeMachines, gpuShares, parseGpusFlag, parseNvidiaSmi } from './hardware.js';

describe('--gpus', () => {
  it('reads MODEL xN in its spellings and knows the memory of known models', () => {
    expect(parseGpusFlag('RTX 4090x2')).toEqual({
      name: 'RTX 4090',
      count: 2,
      ram: 24564,
      driver: 'simulated',
    });
    expect(parseGpusFlag('rtx 4090 x 3')).toMatchObject({ name: 'RTX 4090', count: 3 });
    expect(parseGpusFlag('A100 SXM4')).toMatchObject({ name: 'A100 SXM4', count: 1, ram: 81920 });
    expect(parseGpusFlag('Mystery GPU x4')).toMatchObject({ name: 'Mystery GPU', count: 4, ram: 16384 });
    expect(parseGpusFlag('RTX 4090')).toMatchObject({ name: 'RTX 4090', count: 1 });
    expect(parseGpusFlag('H100 SXMx8')).toMatchObject({ name: 'H100 SXM', count: 8, ram: 81559 });
    expect(parseGpusFlag('A100 SXM4x4')).toMatchObject({ name: 'A100 SXM4', count: 4 });
    expect(parseGpusFlag('RTX A6000 ×2')).toMatchObject({ name: 'RTX A6000', count: 2 });
  });
  it('refuses an empty model or a count outside 1-64', () => {
    expect(parseGpusFlag('')).toHaveProperty('error');
    expect(parseGpusFlag('x2')).toHaveProperty('error');
    expect(parseGpusFlag('RTX 4090x0')).toHaveProperty('error');
    expect(parseGpusFlag('RTX 4090x65')).toHaveProperty('error');
  });
});

describe('nvidia-smi', () => {
  it('counts GPUs and drops the vendor prefix', () => {
    const csv = 'NVIDIA GeForce RTX 4090, 24564, 550.54.14\nNVIDIA GeForce RTX 4090, 24564, 550.54.14\n';
    expect(parseNvidiaSmi(csv)).toEqual({ name: 'RTX 4090', count: 2, ram: 24564, driver: '550.54.14' });
    expect(parseNvidiaSmi('NVIDIA H100 PCIe, 81559, 535.1\n')).toMatchObject({ name: 'H100 PCIe', count: 1 });
  });
  it('is null when there is no GPU', () => {
    expect(parseNvidiaSmi('')).toBeNull();
  });
});

describe('machines', () => {
  it('splits the host between --machines N with distinct slots', () => {
    const ms = describeMachines({ name: 'RTX 4090', count: 2, ram: 24564, driver: 'simulated' }, 3, '/tmp');
    expect(ms.map((m) => m.slot)).toEqual([0, 1, 2]);
    expect(new Set(ms.map((m) => m.hostname)).size).toBe(3);
    expect(ms[0]!.dlperf).toBe(78);
    expect(ms[0]!.cpu_cores).toBeGreaterThanOrEqual(1);
  });
});

describe('real GPUs and --machines', () => {
  it('gives each machine its own share of the devices', () => {
    const real = { name: 'RTX 4090', count: 4, ram: 24564, driver: '550' };
    expect(gpuShares(real, 2)).toEqual({ perMachine: 2, devices: ['0,1', '2,3'] });
    expect(gpuShares(real, 3)).toEqual({ perMachine: 1, devices: ['0', '1', '2'] });
    expect(gpuShares(real, 5)).toHaveProperty('error');
    expect(describeMachines(real, 2, '/tmp').map((m) => m.num_gpus)).toEqual([2, 2]);
  });
  it('simulated GPUs are the full count on every machine, with no device list', () => {
    expect(gpuShares({ name: 'RTX 4090', count: 2, ram: 1, driver: 'simulated' }, 3)).toEqual({
      perMachine: 2,
      devices: [null, null, null],
    });
  });
});
