// The GPU benchmark's parsers and its assembly, on outputs recorded from real drivers
// (fixtures/): the parsing is what a host without a GPU cannot exercise otherwise.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  benchmarkGpus,
  linkRate,
  parseCudaOutput,
  parseMaxTemp,
  parseNvlink,
  parseQueryGpu,
  QUERY_FIELDS,
  type Exec,
} from './nvidia.js';

const fx = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

describe('nvidia-smi parsers', () => {
  it('reads --query-gpu rows: market name, memory, driver, PCIe link, power, display, compute capability', () => {
    expect(parseQueryGpu(fx('query-gpu-rtx4090x2.csv'))).toEqual([
      {
        index: 0,
        name: 'RTX 4090',
        ramMb: 24564,
        driver: '550.54.14',
        pciGen: 4,
        pciWidth: 16,
        powerLimit: 450,
        displayActive: false,
        computeCap: 890,
      },
      expect.objectContaining({ index: 1, displayActive: true }),
    ]);
  });

  it('reads a driver without compute_cap (0) and [N/A] figures (0)', () => {
    const [v100] = parseQueryGpu(fx('query-gpu-v100-driver470.csv'));
    expect(v100).toMatchObject({ name: 'Tesla V100-PCIE-16GB', pciGen: 3, computeCap: 0, powerLimit: 250 });
    const a100 = parseQueryGpu(fx('query-gpu-a100-sxm4.csv'));
    expect(a100.map((g) => g.powerLimit)).toEqual([400, 0]);
    expect(a100[0]!.name).toBe('A100-SXM4-80GB');
    expect(a100[0]!.computeCap).toBe(800);
  });

  it('skips lines that are not a GPU (an error text, an empty output)', () => {
    expect(parseQueryGpu('')).toEqual([]);
    expect(
      parseQueryGpu('NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.\n'),
    ).toEqual([]);
  });

  it('reads the slowdown temperature, or the target temperature from a T.Limit driver', () => {
    expect(parseMaxTemp(fx('temperature-driver470.txt'))).toBe(87);
    expect(parseMaxTemp(fx('temperature-tlimit-driver550.txt'))).toBe(84);
    expect(parseMaxTemp('')).toBe(0);
  });

  it("sums the first GPU's active NVLink links; none is 0", () => {
    expect(parseNvlink(fx('nvlink-a100-sxm4.txt'))).toBe(300);
    expect(parseNvlink(fx('nvlink-rtx4090-none.txt'))).toBe(0);
  });

  it("reads the CUDA script's figures, or its reason for none", () => {
    expect(parseCudaOutput(fx('cuda-a100x2.txt'))).toEqual({
      total_flops: 301.7,
      gpu_mem_bw: 1890.2,
      pcie_bw: 24.6,
      devices: 2,
    });
    expect(parseCudaOutput(fx('cuda-no-torch.txt'))).toEqual({
      error: 'no CUDA runtime: PyTorch is not installed for python3 (ModuleNotFoundError)',
    });
    expect(parseCudaOutput('Traceback (most recent call last):\n')).toEqual({
      error: 'the CUDA script printed no figures',
    });
  });

  it("gives a link's rate by generation and width", () => {
    expect(linkRate(4, 16)).toBe(31.5);
    expect(linkRate(3, 16)).toBe(15.76);
    expect(linkRate(0, 16)).toBe(0);
  });
});

/** An exec answering each command with a recorded output (or failing, for a missing program). */
function recorded(answers: Record<string, string | Error>): Exec & { calls: string[][] } {
  const calls: string[][] = [];
  const exec = (async (cmd: string, args: string[]) => {
    calls.push([cmd, ...args]);
    const key = cmd === 'nvidia-smi' ? (args[0]!.startsWith('--query-gpu') ? 'query' : args[0]!) : cmd;
    const a = answers[key];
    if (a === undefined || a instanceof Error) throw a ?? new Error(`${cmd}: not found`);
    return a;
  }) as unknown as Exec & { calls: string[][] };
  exec.calls = calls;
  return exec;
}

describe('benchmarkGpus', () => {
  it('assembles the GPU part from the driver and the CUDA figures', async () => {
    const exec = recorded({
      query: fx('query-gpu-a100-sxm4.csv'),
      '-q': fx('temperature-driver470.txt'),
      nvlink: fx('nvlink-a100-sxm4.txt'),
      python3: fx('cuda-a100x2.txt'),
    });
    expect(await benchmarkGpus('0,1', exec)).toEqual({
      name: 'A100-SXM4-80GB',
      count: 2,
      ram_mb: 81920,
      driver: '535.129.03',
      compute_cap: 800,
      pci_gen: 4,
      pcie_bw: 24.6,
      gpu_mem_bw: 1890.2,
      total_flops: 301.7,
      power_limit: 400,
      max_temp: 87,
      display_active: false,
      nvlink_bw: 300,
      cuda: 'PyTorch on 2 GPU(s)',
    });
    expect(exec.calls[0]).toEqual([
      'nvidia-smi',
      `--query-gpu=${QUERY_FIELDS.join(',')}`,
      '--format=csv,noheader,nounits',
      '-i',
      '0,1',
    ]);
  });

  it("without a CUDA runtime: the driver's figures, the link's rate, and 0 for what only CUDA measures", async () => {
    const g = await benchmarkGpus(
      null,
      recorded({
        query: fx('query-gpu-rtx4090x2.csv'),
        nvlink: fx('nvlink-rtx4090-none.txt'),
        python3: fx('cuda-no-torch.txt'),
      }),
    );
    expect(g).toMatchObject({
      name: 'RTX 4090',
      count: 2,
      pcie_bw: 31.5,
      gpu_mem_bw: 0,
      total_flops: 0,
      max_temp: 0,
    });
    expect('cuda' in g && g.cuda).toContain('PyTorch is not installed');
  });

  it('asks again without compute_cap when the driver refuses the field', async () => {
    const calls: string[] = [];
    const exec: Exec = async (cmd, args) => {
      calls.push(args[0]!);
      if (args[0]!.includes('compute_cap'))
        throw new Error('Field "compute_cap" is not a valid field to query.');
      if (args[0]!.startsWith('--query-gpu')) return fx('query-gpu-v100-driver470.csv');
      throw new Error('no');
    };
    const g = await benchmarkGpus(null, exec);
    expect(g).toMatchObject({ name: 'Tesla V100-PCIE-16GB', compute_cap: 0, pcie_bw: 15.76 });
    expect(calls.slice(0, 2).map((c) => c.includes('compute_cap'))).toEqual([true, false]);
  });

  it('on a machine without an NVIDIA GPU says so and fills nothing', async () => {
    expect(await benchmarkGpus(null, recorded({}))).toEqual({
      error: 'no NVIDIA GPU: nvidia-smi did not answer (nvidia-smi: not found)',
    });
  });
});
