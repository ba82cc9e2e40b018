// The agent's measurements: nvidia-smi's utilisation output as it prints it, the bounded walk of an
// instance's directory, and the meter that takes each figure at most once per interval.
import { afterAll, describe, expect, it } from 'vitest';
import { linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { UsageMeter, dirSize, meanGpuUtil, parseGpuUtil } from './usage.js';
import type { DiskUsage } from './runtime.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'openrig-usage-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('nvidia-smi utilisation', () => {
  // `nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits` on an 8-GPU host
  // (one GPU that does not report, as MIG-partitioned or some passthrough ones print it).
  const CAPTURED = '0, 97\n1, 100\n2, 0\n3, 45\n4, 12\n5, [N/A]\n6, 3\n7, [Not Supported]\n';

  it('reads the percentage of each GPU by index, leaving out those without a figure', () => {
    const m = parseGpuUtil(CAPTURED);
    expect([...m]).toEqual([
      ['0', 97],
      ['1', 100],
      ['2', 0],
      ['3', 45],
      ['4', 12],
      ['6', 3],
    ]);
  });

  it('reads nothing from an error message, an empty answer or values out of range', () => {
    expect(
      parseGpuUtil(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n",
      ).size,
    ).toBe(0);
    expect(parseGpuUtil('').size).toBe(0);
    expect(parseGpuUtil('0, 101\n1, -3\n2, 4x\n, 5\n').size).toBe(0);
    expect([...parseGpuUtil('\r\n0, 7\r\n')]).toEqual([['0', 7]]);
  });

  it("averages an instance's GPUs (one decimal); null when none of them has a figure", () => {
    const m = parseGpuUtil(CAPTURED);
    expect(meanGpuUtil(m, ['0', '1'])).toBe(98.5);
    expect(meanGpuUtil(m, ['2', '3', '4'])).toBe(19);
    expect(meanGpuUtil(m, ['0', '2', '3'])).toBe(47.3);
    expect(meanGpuUtil(m, ['6', '5'])).toBe(3); // 5 has no figure
    expect(meanGpuUtil(m, ['5', '7'])).toBeNull();
    expect(meanGpuUtil(m, ['9'])).toBeNull();
  });
});

describe('dirSize', () => {
  it('counts the apparent size of every file below the root, hard links once, links not followed', async () => {
    const root = path.join(tmp, 'tree');
    mkdirSync(path.join(root, 'a/b/c'), { recursive: true });
    writeFileSync(path.join(root, 'one'), Buffer.alloc(1000));
    writeFileSync(path.join(root, 'a/two'), Buffer.alloc(250_000));
    writeFileSync(path.join(root, 'a/b/c/three'), Buffer.alloc(3));
    writeFileSync(path.join(root, 'a/b/empty'), '');
    linkSync(path.join(root, 'a/two'), path.join(root, 'a/b/two-again'));
    // A link to a big file outside: its own length counts (the target path), not the target's.
    const outside = path.join(tmp, 'outside.bin');
    writeFileSync(outside, Buffer.alloc(5_000_000));
    symlinkSync(outside, path.join(root, 'link'));
    // Many files in one directory: more than one batch of lstat calls.
    mkdirSync(path.join(root, 'many'));
    for (let i = 0; i < 100; i++) writeFileSync(path.join(root, 'many', `f${i}`), Buffer.alloc(10));
    expect(await dirSize(root)).toEqual({ bytes: 1000 + 250_000 + 3 + outside.length + 100 * 10 });
  });

  it('is null for a directory that does not exist, and the size of a plain file', async () => {
    expect(await dirSize(path.join(tmp, 'nothing'))).toBeNull();
    writeFileSync(path.join(tmp, 'plain'), Buffer.alloc(77));
    expect(await dirSize(path.join(tmp, 'plain'))).toEqual({ bytes: 77 });
  });

  it('stops at its bounds and says the count is a lower bound', async () => {
    const root = path.join(tmp, 'wide');
    mkdirSync(root);
    for (let i = 0; i < 200; i++) writeFileSync(path.join(root, `f${i}`), Buffer.alloc(1));
    const few = await dirSize(root, { maxEntries: 50, maxMs: 60_000 });
    expect(few?.partial).toMatch(/stopped after 50 entries/);
    expect(few!.bytes).toBeLessThanOrEqual(50);
    // A clock that jumps past the deadline at its second reading.
    let t = 0;
    const slow = await dirSize(root, { maxEntries: 1e6, maxMs: 1000 }, () => (t += 5000));
    expect(slow?.partial).toMatch(/stopped after 1 s/);
    expect(slow!.bytes).toBeLessThan(200);
  });
});

describe('UsageMeter', () => {
  const quiet = { warn: () => {} };

  it('measures a disk at most once per interval, in the background, and reports the latest figure', async () => {
    let now = 0;
    let calls = 0;
    const sizes = [100, 250];
    const meter = new UsageMeter({
      disk: async () => ({ bytes: sizes[Math.min(calls++, sizes.length - 1)]! }),
      intervalMs: 60_000,
      log: quiet,
      now: () => now,
    });
    expect(meter.disk(1)).toBeUndefined(); // the first measurement has only begun
    await meter.settled();
    expect(meter.disk(1)).toBe(100);
    now += 30_000;
    expect(meter.disk(1)).toBe(100);
    await meter.settled();
    expect(calls).toBe(1);
    now += 30_000;
    expect(meter.disk(1)).toBe(100); // a new measurement begins; the last figure stands meanwhile
    await meter.settled();
    expect(meter.disk(1)).toBe(250);
    expect(calls).toBe(2);
  });

  it('tries again at the next report when there was nothing to measure yet', async () => {
    let there = false;
    let calls = 0;
    const meter = new UsageMeter({
      disk: async () => (calls++, there ? { bytes: 5 } : null),
      log: quiet,
      now: () => 0,
    });
    meter.disk(7);
    await meter.settled();
    there = true;
    expect(meter.disk(7)).toBeUndefined(); // no figure yet, but a new measurement begins at once
    await meter.settled();
    expect(meter.disk(7)).toBe(5);
    expect(calls).toBe(2);
  });

  it('warns once when a figure is a lower bound or cannot be had, and keeps the last one', async () => {
    const warnings: string[] = [];
    let now = 0;
    let answer: () => Promise<DiskUsage | null> = async () => ({ bytes: 9, partial: 'the walk stopped' });
    const meter = new UsageMeter({
      disk: () => answer(),
      intervalMs: 10,
      log: { warn: (m) => warnings.push(m) },
      now: () => now,
    });
    for (let i = 0; i < 3; i++) {
      meter.disk(3);
      await meter.settled();
      now += 10;
    }
    expect(meter.disk(3)).toBe(9);
    answer = () => Promise.reject(new Error('engine down'));
    await meter.settled();
    now += 10;
    expect(meter.disk(3)).toBe(9);
    await meter.settled();
    expect(warnings).toEqual(['instance 3: its disk usage is a lower bound: the walk stopped']);
  });

  it('forgets instances no longer on the host', async () => {
    let calls = 0;
    const meter = new UsageMeter({ disk: async () => ({ bytes: ++calls }), log: quiet, now: () => 0 });
    meter.disk(1);
    await meter.settled();
    meter.retain(new Set([2]));
    expect(meter.disk(1)).toBeUndefined(); // measured afresh
    await meter.settled();
    expect(meter.disk(1)).toBe(2);
  });

  it('GPU utilisation: one nvidia-smi run per interval for all instances; null with simulated GPUs', async () => {
    let now = 0;
    let runs = 0;
    const meter = new UsageMeter({
      gpus: async () => (runs++, parseGpuUtil('0, 10\n1, 30\n2, 80\n')),
      intervalMs: 60_000,
      log: quiet,
      now: () => now,
    });
    expect(meter.gpuUtil(['0', '1'])).toBeUndefined();
    await meter.settled();
    expect(meter.gpuUtil(['0', '1'])).toBe(20);
    expect(meter.gpuUtil(['2'])).toBe(80);
    expect(meter.gpuUtil([])).toBeNull();
    now += 59_000;
    meter.gpuUtil(['2']);
    await meter.settled();
    expect(runs).toBe(1);
    expect(new UsageMeter({ log: quiet }).gpuUtil(['0'])).toBeNull();
    expect(new UsageMeter({ log: quiet }).disk(1)).toBeUndefined();
  });
});
