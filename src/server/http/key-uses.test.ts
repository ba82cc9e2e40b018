import { describe, expect, it } from 'vitest';
import type { Deps } from '../deps.types.js';
import { flushKeyUses, KeyUseBuffer, recordKeyUse } from './key-uses.js';

function fakeDeps(fail: () => boolean) {
  const warnings: unknown[] = [];
  const statements: number[] = [];
  const db = {
    updateTable: () => {
      const q = {
        set: () => q,
        where: () => q,
        execute: async () => {
          statements.push(1);
          if (fail()) throw new Error('database down');
          return [];
        },
      };
      return q;
    },
  };
  const deps = {
    db,
    log: { warn: (o: unknown) => warnings.push(o) },
    keyUses: new KeyUseBuffer(),
  } as unknown as Pick<Deps, 'db' | 'log' | 'keyUses'>;
  return { deps, warnings, statements };
}

describe('key uses', () => {
  it('skips keys marked within the minute and queues the others, the latest use kept', () => {
    const { deps } = fakeDeps(() => false);
    recordKeyUse(deps, 1, 1_000_000, 1_030_000); // marked 30 s ago
    recordKeyUse(deps, 2, null, 1_030_000);
    recordKeyUse(deps, 2, null, 1_030_500);
    recordKeyUse(deps, 3, 900_000, 1_030_000); // marked 130 s ago
    expect([...deps.keyUses.uses]).toEqual([
      [2, 1_030_500],
      [3, 1_030_000],
    ]);
    clearTimeout(deps.keyUses.timer!);
  });

  it('keeps a batch that could not be written for the next one, logs, and never rejects', async () => {
    let down = true;
    const { deps, warnings, statements } = fakeDeps(() => down);
    recordKeyUse(deps, 7, null, 5_000_000);
    await expect(flushKeyUses(deps)).resolves.toBeUndefined();
    expect(warnings).toHaveLength(1);
    expect([...deps.keyUses.uses]).toEqual([[7, 5_000_000]]);
    down = false;
    await flushKeyUses(deps);
    expect(deps.keyUses.uses.size).toBe(0);
    expect(statements).toHaveLength(2);
  });
});
