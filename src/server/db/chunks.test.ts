import { describe, expect, it } from 'vitest';
import { chunks, chunksWithTurns } from './chunks.js';

describe('chunks', () => {
  it('slices a list in order, the last slice shorter', () => {
    expect([...chunks([1, 2, 3, 4, 5, 6, 7], 3)]).toEqual([[1, 2, 3], [4, 5, 6], [7]]);
  });

  it('gives one slice for a list no longer than the size, and none for an empty list', () => {
    expect([...chunks([1, 2, 3], 3)]).toEqual([[1, 2, 3]]);
    expect([...chunks([1, 2], 500)]).toEqual([[1, 2]]);
    expect([...chunks([], 3)]).toEqual([]);
  });

  it('covers every element exactly once for any length and size', () => {
    for (let n = 0; n <= 40; n++)
      for (let size = 1; size <= 12; size++) {
        const list = Array.from({ length: n }, (_, i) => i);
        const parts = [...chunks(list, size)];
        expect(parts.flat()).toEqual(list);
        expect(parts.every((p) => p.length >= 1 && p.length <= size)).toBe(true);
        expect(parts.length).toBe(Math.ceil(n / size));
      }
  });

  it('refuses a size that is not a positive integer', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => [...chunks([1], bad)]).toThrow(RangeError);
  });

  it('with turns: the same slices, and the event loop turns between two of them, not before the first', async () => {
    const seen: string[] = [];
    setImmediate(() => seen.push('turn'));
    for await (const part of chunksWithTurns([1, 2, 3, 4, 5], 2)) seen.push(part.join());
    expect(seen).toEqual(['1,2', 'turn', '3,4', '5']);
    const none: number[][] = [];
    for await (const part of chunksWithTurns([], 2)) none.push(part);
    expect(none).toEqual([]);
  });
});
