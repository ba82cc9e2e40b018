import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { insertMachines } from '../machines/machines.service.js';
import { listedGpuNames } from './offers.repo.js';

/** A small deterministic generator, so that a failure can be replayed. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let x = s;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

// Names that sort next to each other, differ only by case, a suffix or a trailing space, and
// names outside ASCII: each must be kept or dropped on its own.
const NAMES = [
  'RTX 4090',
  'rtx 4090',
  'RTX 409',
  'RTX 4090 ',
  'RTX 4090 D',
  'A100',
  'A100 SXM4',
  'Ä100',
  'H100',
  'Z',
];

describeEachDb('GET /api/v0/gpu_names/unique/', (dialect) => {
  const t = useTestApp(dialect);
  let hostId = 0;

  beforeAll(async () => {
    hostId = (await t().user()).id;
  });

  /** The names as a plain DISTINCT over every machine gives them: the answer the walk must give. */
  const reference = async (): Promise<string[]> =>
    (
      await t()
        .deps.db.selectFrom('machines')
        .select('gpu_name')
        .distinct()
        .where('deleted_at', 'is', null)
        .where('listed', '=', 1)
        .orderBy('gpu_name')
        .execute()
    ).map((r) => r.gpu_name);

  it('answers [] with no machine, then exactly the names of listed, live machines as they change', async () => {
    expect(await listedGpuNames(t().deps.store)).toEqual([]);
    const rnd = prng(7);
    const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)]!;
    const ids = await insertMachines(
      t().deps.db,
      Array.from({ length: 120 }, () => ({
        hostId,
        gpuName: pick(NAMES),
        numGpus: pick([1, 2, 4, 8]),
        priceGpu: 0.5,
        listed: rnd() < 0.6,
      })),
      t().clock.now(),
    );
    for (let round = 0; round < 12; round++) {
      const want = await reference();
      expect(await listedGpuNames(t().deps.store)).toEqual(want);
      const r = await t().request('GET', '/api/v0/gpu_names/unique/');
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ gpu_names: want });
      // Unlist, relist or delete a fifth of the machines, so names come and go.
      const some = ids.filter(() => rnd() < 0.2);
      for (const id of some) {
        const what = rnd();
        await t()
          .deps.db.updateTable('machines')
          .set(what < 0.4 ? { listed: 0 } : what < 0.8 ? { listed: 1 } : { deleted_at: t().clock.now() })
          .where('id', '=', id)
          .execute();
      }
    }
  });

  it('answers concurrent callers together, each with every machine listed before it asked', async () => {
    const now = t().clock.now();
    const first = t().request('GET', '/api/v0/gpu_names/unique/');
    // Listed after the first call was made, before the others: they must all see it.
    await insertMachines(t().deps.db, [{ hostId, gpuName: 'Late Listed', numGpus: 1, priceGpu: 1 }], now);
    const later = await Promise.all(
      Array.from({ length: 12 }, () => t().request('GET', '/api/v0/gpu_names/unique/')),
    );
    expect((await first).status).toBe(200);
    for (const r of later) {
      expect(r.status).toBe(200);
      expect(r.body.gpu_names).toContain('Late Listed');
      expect(r.body.gpu_names).toEqual(await reference());
    }
  });

  it('drops a name whose machines are all unlisted or deleted, and keeps one with a single listed machine', async () => {
    const now = t().clock.now();
    const [, gone2, , kept2] = await insertMachines(
      t().deps.db,
      [
        { hostId, gpuName: 'Only Unlisted', numGpus: 1, priceGpu: 1, listed: false },
        { hostId, gpuName: 'Only Deleted', numGpus: 1, priceGpu: 1 },
        { hostId, gpuName: 'One Of Many', numGpus: 1, priceGpu: 1, listed: false },
        { hostId, gpuName: 'One Of Many', numGpus: 2, priceGpu: 1 },
      ],
      now,
    );
    await t().deps.db.updateTable('machines').set({ deleted_at: now }).where('id', '=', gone2!).execute();
    const names = await listedGpuNames(t().deps.store);
    expect(names).not.toContain('Only Unlisted');
    expect(names).not.toContain('Only Deleted');
    expect(names).toContain('One Of Many');
    expect(names).toEqual(await reference());
    // The last listed machine of a name leaves: so does the name.
    await t().deps.db.updateTable('machines').set({ listed: 0 }).where('id', '=', kept2!).execute();
    expect(await listedGpuNames(t().deps.store)).not.toContain('One Of Many');
  });
});
