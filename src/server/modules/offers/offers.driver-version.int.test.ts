// driver_version is filtered and ordered by its number (major × 1,000,000 + minor × 1,000 +
// patch), on SQLite and PostgreSQL: the SQL of that number agrees with its JavaScript twin (the
// offer index's) for any text, and the filters the official CLI sends find the machines they name,
// by the SQL and by the index alike, while the reply keeps the dotted text.
import { beforeAll, expect, it } from 'vitest';
import fc from 'fast-check';
import { CompiledQuery } from 'kysely';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { insertMachines } from '../machines/machines.service.js';
import { OFFER_FIELDS } from './offers.fields.js';
import { compileSearch } from './offers.filter.js';
import { searchRows } from './offers.repo.js';
import { OfferIndex } from './offers.index.js';

/** The number a driver version's text stands for, worked out here independently of the code. */
function expectedNumber(v: string): number | null {
  const parts = v.split('.');
  if (parts.length > 3) return null;
  const max = [6, 3, 3];
  if (
    !parts.every((p, i) => p.length >= 1 && p.length <= max[i]! && [...p].every((c) => c >= '0' && c <= '9'))
  )
    return null;
  return parts.reduce((n, p, i) => n + parseInt(p, 10) * [1_000_000, 1_000, 1][i]!, 0);
}

// Texts at the edges of what makes a version, and some that do not.
const EDGES = [
  '535.86.05',
  '535.86.5',
  '470.199.02',
  '550.54',
  '550',
  '0',
  '000535.086.005',
  '999999.999.999',
  '1234567.1.1',
  '535.1000.1',
  '535.86.1000',
  '1.2.3.4',
  '',
  '.',
  '535.',
  '.535',
  '535..86',
  ' 535.86.05',
  '535.86.05 ',
  '535.86.05\n',
  'n/a',
  '535.86.05a',
  '5e8',
  '-535.86.05',
  '+535',
  '٥٣٥.86.05',
  '５３５.86.05',
];

describeEachDb('driver_version: by its number', (dialect) => {
  const t = useTestApp(dialect);
  const def = OFFER_FIELDS.driver_version!;

  it("the SQL of its number agrees with the index's JavaScript, for any text", async () => {
    const db = t().deps.db;
    const param = (n: number) => t().deps.dialect.param(n, 'text');
    const sqlNumbers = async (texts: string[]): Promise<(number | null)[]> => {
      const rows = texts
        .map((_, i) => `SELECT ${i} AS i, ${param(i + 1)} AS driver_version`)
        .join(' UNION ALL ');
      const expr = def.compareAs!.sql({ base: '0', storage: 0, now: 0, dialect: t().deps.dialect });
      const res = await db.executeQuery<{ i: number; k: unknown }>(
        CompiledQuery.raw(`SELECT m.i AS i, ${expr} AS k FROM (${rows}) m ORDER BY m.i`, texts),
      );
      return res.rows.map((r) => (r.k === null ? null : Number(r.k)));
    };
    const twin = (v: string) => def.compareAs!.js({ driver_version: v } as never);
    const check = async (texts: string[]) => {
      const got = await sqlNumbers(texts);
      texts.forEach((v, i) => {
        expect(got[i], JSON.stringify(v)).toBe(expectedNumber(v));
        expect(twin(v), JSON.stringify(v)).toBe(got[i]);
      });
    };
    await check(EDGES);
    expect(EDGES.filter((v) => expectedNumber(v) !== null).length).toBe(8);
    const text = fc
      .array(fc.constantFrom('0', '1', '5', '9', '0', '.', '.', 'a', ' ', '-', '٣'), { maxLength: 16 })
      .map((cs) => cs.join(''));
    await fc.assert(
      fc.asyncProperty(fc.array(text, { minLength: 1, maxLength: 40 }), (texts) => check(texts)),
      { numRuns: 30 },
    );
  });

  let hostId = 0;
  let key = '';
  const DRIVERS = ['535.86.05', '470.199.02', '550.54.15', '550.54', '535.86.5', '535', '', 'n/a'];
  const byId = new Map<number, string>();

  beforeAll(async () => {
    const host = await t().user();
    hostId = host.id;
    key = (await t().user()).apiKey;
    const ids = await insertMachines(
      t().deps.db,
      DRIVERS.map((driver_version) => ({
        hostId: host.id,
        gpuName: 'RTX 4090',
        numGpus: 1,
        hardware: { driver_version },
      })),
      t().clock.now(),
    );
    ids.forEach((id, i) => byId.set(id, DRIVERS[i]!));
  });

  /** The drivers of this file's offers matching `body`, by the SQL and by the index (must agree). */
  async function drivers(body: Record<string, unknown>): Promise<string[]> {
    const now = t().clock.now();
    const plan = compileSearch({ order: [['id', 'asc']], ...body, host_id: { eq: hostId } });
    const viaSql = (await searchRows(t().deps.db, t().deps.dialect, plan, now)).map((r) => Number(r.id));
    const index = new OfferIndex(t().deps.store);
    await index.sync();
    expect(
      index.search(plan, now).map((r) => r.id),
      JSON.stringify(body),
    ).toEqual(viaSql);
    return viaSql.map((id) => byId.get(id)!);
  }

  it('every operator compares the number; the CLI form and the dotted text are the same filter', async () => {
    const atLeast = ['535.86.05', '550.54.15', '550.54', '535.86.5'];
    expect(await drivers({ driver_version: { gte: 535086005 } })).toEqual(atLeast);
    expect(await drivers({ driver_version: { gte: '535.86.05' } })).toEqual(atLeast);
    expect(await drivers({ driver_version: { gt: 535086005 } })).toEqual(['550.54.15', '550.54']);
    expect(await drivers({ driver_version: { eq: 535086005 } })).toEqual(['535.86.05', '535.86.5']);
    expect(await drivers({ driver_version: '535.86.05' })).toEqual(['535.86.05', '535.86.5']);
    expect(await drivers({ driver_version: { lt: '535.86.05' } })).toEqual(['470.199.02', '535']);
    expect(await drivers({ driver_version: { lte: 535086005 } })).toEqual([
      '535.86.05',
      '470.199.02',
      '535.86.5',
      '535',
    ]);
    // A text that is no version has no number: it matches no condition, not even neq or notin.
    expect(await drivers({ driver_version: { neq: 535086005 } })).toEqual([
      '470.199.02',
      '550.54.15',
      '550.54',
      '535',
    ]);
    expect(await drivers({ driver_version: { in: [470199002, '550.54'] } })).toEqual([
      '470.199.02',
      '550.54',
    ]);
    expect(await drivers({ driver_version: { notin: ['550.54.15', 535000000] } })).toEqual([
      '535.86.05',
      '470.199.02',
      '550.54',
      '535.86.5',
    ]);
    expect(await drivers({ driver_version: { gte: 470000000, lt: '535.86' } })).toEqual([
      '470.199.02',
      '535',
    ]);
  });

  it('orders by the number (ties by id), a text with none first ascending and last descending', async () => {
    expect(await drivers({ order: [['driver_version', 'asc']] })).toEqual([
      '',
      'n/a',
      '470.199.02',
      '535',
      '535.86.05',
      '535.86.5',
      '550.54',
      '550.54.15',
    ]);
    expect(await drivers({ order: [['driver_version', 'desc']] })).toEqual([
      '550.54.15',
      '550.54',
      '535.86.05',
      '535.86.5',
      '535',
      '470.199.02',
      '',
      'n/a',
    ]);
  });

  it('through the route: the reply keeps the dotted text; a value that is no version is a 400 naming the field', async () => {
    const r = await t().request('POST', '/api/v0/bundles/', {
      key,
      body: { driver_version: { gte: 535086005 }, host_id: { eq: hostId }, order: [['score', 'desc']] },
    });
    expect(r.status).toBe(200);
    expect(r.body.offers.map((o: { driver_version: string }) => o.driver_version).sort()).toEqual([
      '535.86.05',
      '535.86.5',
      '550.54',
      '550.54.15',
    ]);
    for (const bad of [{ gte: 'latest' }, { eq: '535.86.05.1' }, { in: [true] }, { lt: 535.5 }]) {
      const res = await t().request('POST', '/api/v0/bundles/', { key, body: { driver_version: bad } });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body.error).toBe('bad_request');
      expect(res.body.msg).toContain('driver_version');
    }
  });
});
