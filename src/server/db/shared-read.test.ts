import { describe, expect, it } from 'vitest';
import { sharedRead } from './shared-read.js';

/** A read whose runs the test settles by hand, recording when each began. */
function controlledRead() {
  const runs: { resolve(v: number): void; reject(e: unknown): void }[] = [];
  const read = () =>
    new Promise<number>((resolve, reject) => {
      runs.push({ resolve, reject });
    });
  return { runs, read };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('sharedRead', () => {
  it('runs at once for a lone caller', async () => {
    const { runs, read } = controlledRead();
    const shared = sharedRead(read);
    const a = shared();
    expect(runs).toHaveLength(1);
    runs[0]!.resolve(7);
    expect(await a).toBe(7);
  });

  it('makes callers that arrive during a read wait for the next one, which they share', async () => {
    const { runs, read } = controlledRead();
    const shared = sharedRead(read);
    const first = shared();
    const late = Array.from({ length: 20 }, () => shared());
    // Nothing new runs while the first read is under way: the late callers must not take its
    // answer, which may predate them.
    expect(runs).toHaveLength(1);
    runs[0]!.resolve(1);
    expect(await first).toBe(1);
    await flush();
    expect(runs).toHaveLength(2);
    runs[1]!.resolve(2);
    expect(await Promise.all(late)).toEqual(Array(20).fill(2));
    // A caller after that starts a read of its own.
    const after = shared();
    expect(runs).toHaveLength(3);
    runs[2]!.resolve(3);
    expect(await after).toBe(3);
  });

  it('queues callers that arrive during the second read for a third one', async () => {
    const { runs, read } = controlledRead();
    const shared = sharedRead(read);
    void shared();
    const second = shared();
    runs[0]!.resolve(1);
    await flush();
    expect(runs).toHaveLength(2);
    const third = shared();
    runs[1]!.resolve(2);
    await flush();
    expect(runs).toHaveLength(3);
    runs[2]!.resolve(3);
    expect(await second).toBe(2);
    expect(await third).toBe(3);
  });

  it('fails only the callers of a failed read; those waiting still get the next one', async () => {
    const { runs, read } = controlledRead();
    const shared = sharedRead(read);
    const first = shared();
    const waiting = shared();
    runs[0]!.reject(new Error('connection lost'));
    await expect(first).rejects.toThrow('connection lost');
    await flush();
    runs[1]!.resolve(5);
    expect(await waiting).toBe(5);
  });
});
