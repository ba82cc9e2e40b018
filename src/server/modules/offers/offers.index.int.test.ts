// Differential test of the in-memory offer index: for random machines and random valid
// search bodies, search served from the index answers exactly what searchSql answers over the
// database: the same ids in the same order and the same reply rows, on SQLite and PostgreSQL.
// One index lives through all runs (earlier runs' machines are soft-deleted, rows are updated
// between searches), so the incremental sync is exercised, and each run also checks that a freshly
// loaded index agrees with it.
import { expect, it } from 'vitest';
import fc from 'fast-check';
import { CompiledQuery } from 'kysely';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { machineValues } from '../machines/machines.service.js';
import { OFFER_FIELDS, OPERATORS } from './offers.fields.js';
import { MAX_LIMIT, compileSearch, searchSql, type SearchPlan } from './offers.filter.js';
import { offerView, searchOffers, type Offer } from './offers.service.js';
import { OfferIndex } from './offers.index.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 40);

// Strings chosen to order differently by UTF-16 unit and by code point (U+FF21 vs an emoji), with
// case, space/underscore and accent variants.
const GPU_NAMES = ['RTX 4090', 'RTX 3090', 'rtx 4090', 'H100 SXM', 'Ａ100', '😀 GPU', 'Ä100'];
const CPU_NAMES = ['AMD EPYC 7B13', 'Intel Xeon', '', 'épyc'];
// Locations: bare codes, codes after ", " (geolocation's country-code match), near misses.
const GEOS = [
  'US',
  'Oregon, US',
  'DE',
  '日本',
  '😀',
  '',
  'Montreal, CA',
  '😀, CA',
  ', CA',
  'x, CAN',
  'Oslo, no',
];
// Driver versions: ones whose numbers order differently from their text, equal numbers in other
// texts, and texts that make no number.
const DRIVERS = [
  '550.54.15',
  '535.1',
  '',
  '535.86.05',
  '535.86.5',
  '470.199.02',
  '99.1',
  '550',
  'n/a',
  '1.2.3.4',
];
/** driver_version filter values: numbers (the CLI's form), dotted texts, digit texts. */
const DRIVER_VALUES = [
  535086005,
  550054015,
  470199002,
  0,
  '535.86.05',
  '535.1',
  '550.54',
  '99.1.0',
  '550000000',
];
const STRINGS = [
  ...new Set([
    ...GPU_NAMES,
    ...CPU_NAMES,
    ...GEOS,
    ...DRIVERS,
    'RTX_4090',
    'verified',
    'unverified',
    'nope',
    'CA',
    'no',
  ]),
];

/** Doubles PostgreSQL and SQLite both take as parameters (PostgreSQL sends subnormals as 0). */
const double = (min: number, max: number) =>
  fc
    .double({ min, max, noNaN: true, noDefaultInfinity: true })
    .filter((v) => v === 0 || Math.abs(v) >= 1e-300);
/** Machine measurements: zero or plausible magnitudes (PostgreSQL's generated score would underflow on 1e-300²). */
const measure = (max: number) => fc.double({ min: 0, max, noNaN: true }).filter((v) => v === 0 || v >= 1e-6);
const pick = <T>(...vs: T[]) => fc.constantFrom(...vs);

function machineArb(now: number) {
  return fc.record({
    gpu_name: fc.constantFrom(...GPU_NAMES),
    num_gpus: pick(1, 2, 4, 8),
    gpu_ram: pick(0, 24564, 81920),
    cpu_name: fc.constantFrom(...CPU_NAMES),
    cpu_cores: pick(0, 8, 16, 64),
    cpu_ghz: pick(0, 2.5, 3),
    cpu_ram: pick(0, 32768, 65536),
    disk_space: fc.oneof(
      { arbitrary: pick(0, 4.9, 5, 10), weight: 1 },
      { arbitrary: pick(100, 500, 500.5), weight: 3 },
      { arbitrary: measure(2000), weight: 2 },
    ),
    disk_held_mb: pick(0, 0, 0, 1, 5000, 95_001, 600_000),
    disk_bw: fc.oneof(pick(0, 2000), measure(1e4)),
    inet_up: pick(0, 100, 1000),
    inet_down: pick(0, 100, 1000),
    pcie_bw: pick(0, 16, 25),
    direct_port_count: pick(0, 1, 9, 10, 100),
    cuda_max_good: pick(0, 11.8, 12.4),
    driver_version: fc.constantFrom(...DRIVERS),
    reliability: fc.oneof(pick(0, 0.9, 0.99, 1), measure(1)),
    verified: pick(0, 1),
    geolocation: fc.constantFrom(...GEOS),
    dlperf: fc.oneof(pick(0, 10, 40, 33.3), measure(1000)),
    listed: pick(0, 1, 1, 1),
    price_gpu_dph: fc.oneof(pick(0, 0.1, 0.2, 0.5, 1.25), measure(10)),
    price_disk_gb_month: pick(0, 0.1, 0.15),
    min_bid_dph: pick(0, 0.1, 0.3, 0.3),
    rented: pick(0, 0, 1),
    bid_to_win_dph: fc.option(pick(0.05, 0.3, 0.400001), { freq: 2 }),
    listed_until: fc.option(pick(now - 1000, now, now + 1, now + 3_600_000, now + 123_457), { freq: 2 }),
    online_state: pick('online', 'offline'),
    last_heartbeat_at: fc.option(pick(now - 5000, now), { freq: 2 }),
    deleted_at: fc.oneof(
      { arbitrary: fc.constant(null), weight: 8 },
      { arbitrary: fc.constant(now - 1), weight: 1 },
    ),
  });
}

/** Changes made to a run's machines between its searches (through the index's incremental sync). */
const updateArb = fc.record({
  i: fc.nat(),
  set: fc.oneof(
    fc.record({ rented: pick(0, 1) }),
    fc.record({ bid_to_win_dph: fc.option(pick(0.2, 0.500001)) }),
    fc.record({ listed: pick(0, 1) }),
    fc.record({ online_state: pick('online', 'offline') }),
    fc.record({ last_heartbeat_at: fc.option(pick(1, 2)) }),
    fc.record({ price_gpu_dph: pick(0, 0.3, 0.5) }),
    fc.record({ gpu_name: fc.constantFrom(...GPU_NAMES) }),
    fc.record({ deleted_at: fc.option(pick(1)) }),
    fc.record({ disk_held_mb: pick(0, 20_000) }),
    fc.record({ driver_version: fc.constantFrom(...DRIVERS) }),
  ),
});

/** driver_version's number, worked out here independently of the code (null: none). */
function driverNumber(v: string): number | null {
  const parts = v.split('.');
  if (parts.length > 3 || !parts.every((p, i) => /^[0-9]+$/.test(p) && p.length <= (i === 0 ? 6 : 3)))
    return null;
  return parts.reduce((n, p, i) => n + Number(p) * [1e6, 1e3, 1][i]!, 0);
}

function valueArb(type: string, field: string): fc.Arbitrary<unknown> {
  if (field === 'driver_version')
    return fc.oneof(fc.constantFrom(...DRIVER_VALUES), fc.integer({ min: 0, max: 600_000_000 }));
  switch (type) {
    case 'int':
      return fc.oneof(
        pick(0, 1, 2, 4, 8, 10, 16, 100, 24564, 49128),
        fc.integer({ min: -10, max: 200_000 }),
        pick('2', '8', ' 10 '),
      );
    case 'float':
      return fc.oneof(
        pick(0, 0.1, 0.5, 0.99, 1, 4.9, 5, 10, 24.9, 100, 480, 500, 31_536_000, 3600),
        double(-1e6, 1e6),
        pick('0.5', '1e1'),
      );
    case 'bool':
      return pick<unknown>(true, false, 'true', 'false', 1, 0);
    default:
      return fc.constantFrom(...STRINGS);
  }
}

const FIELDS = Object.keys(OFFER_FIELDS);
const conditionArb = fc.constantFrom(...FIELDS).chain((field) => {
  const def = OFFER_FIELDS[field]!;
  const type = def.type;
  const ops =
    (type === 'bool' || type === 'string') && !def.compareAs ? ['eq', 'neq', 'in', 'notin'] : [...OPERATORS];
  return fc
    .constantFrom(...ops)
    .chain((op) =>
      (op === 'in' || op === 'notin'
        ? fc.array(valueArb(type, field), { maxLength: 3 })
        : valueArb(type, field)
      ).map((value) => ({ field, op, value })),
    );
});

const bodyArb = fc
  .record(
    {
      conditions: fc.array(conditionArb, { maxLength: 3 }),
      order: fc.array(
        fc.oneof(
          fc.tuple(fc.constantFrom(...FIELDS), pick('asc', 'desc', 'DESC')),
          fc.constantFrom(...FIELDS),
        ),
        { maxLength: 3 },
      ),
      type: pick('on-demand', 'bid', 'reserved', 'interruptible'),
      limit: pick(1, 2, 3, 5, 64, 64, MAX_LIMIT),
      allocated_storage: fc.oneof(pick(0, 5, 10, 100, 4.9, 0.1, 480), double(0, 600)),
    },
    { requiredKeys: ['conditions'] },
  )
  .map(({ conditions, ...rest }) => {
    const body: Record<string, unknown> = { ...rest };
    for (const c of conditions) body[c.field] = { ...(body[c.field] ?? {}), [c.op]: c.value };
    return body;
  });

/**
 * UTF-8 byte order (= code point order), independent of the code under test; NULL first. A field
 * compared by a number (driver_version) orders by that number.
 */
function byteOrder(a: unknown, b: unknown, field: string): number {
  if (field === 'driver_version') {
    const x = driverNumber(a as string);
    const y = driverNumber(b as string);
    if (x === null || y === null) return x === y ? 0 : x === null ? -1 : 1;
    return x - y;
  }
  if (typeof a === 'string' && typeof b === 'string') return Buffer.compare(Buffer.from(a), Buffer.from(b));
  const x = Number(a);
  const y = Number(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

describeEachDb('offer index matches searchSql', (dialect) => {
  const t = useTestApp(dialect);

  it('answers random searches over random machines exactly as the SQL does', async () => {
    const db = t().deps.db;
    const host = await t().user();
    const now = t().clock.now();
    const deps = { ...t().deps, clock: { now: () => now } };

    async function viaSql(plan: SearchPlan): Promise<Offer[]> {
      const q = searchSql(plan, t().deps.dialect, now);
      const res = await db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(q.sql, q.params));
      return res.rows.map((r) => ({ ...offerView(r, plan), maintenances: [] }));
    }

    async function expected(plan: SearchPlan): Promise<Offer[]> {
      // PostgreSQL orders strings by the database's collation, the index (like SQLite) by code
      // point: there, and only there, the SQL's whole result is re-sorted by code point and cut to
      // the limit. (The one NULL a search orders by, driver_version's number for a text that makes
      // none, is ordered by searchSql as SQLite orders NULL on both databases.)
      const byText = (f: string) => OFFER_FIELDS[f]!.type === 'string' && !OFFER_FIELDS[f]!.compareAs;
      if (dialect === 'postgres' && plan.order.some((o) => byText(o.field))) {
        const all = await viaSql({ ...plan, limit: MAX_LIMIT });
        const sorted = all.sort((a, b) => {
          for (const o of plan.order) {
            const c = byteOrder(a[o.field], b[o.field], o.field);
            if (c !== 0) return o.dir === 'desc' ? -c : c;
          }
          return (a.id as number) - (b.id as number);
        });
        return sorted.slice(0, plan.limit);
      }
      return viaSql(plan);
    }

    await fc.assert(
      fc.asyncProperty(
        fc.array(machineArb(now), { minLength: 10, maxLength: 40 }),
        fc.array(updateArb, { minLength: 1, maxLength: 6 }),
        fc.array(bodyArb, { minLength: 1, maxLength: 5 }),
        async (machines, updates, bodies) => {
          // Earlier runs' machines leave the picture the way machines do: soft-deleted.
          await db
            .updateTable('machines')
            .set({ deleted_at: now - 1 })
            .where('deleted_at', 'is', null)
            .execute();
          const ids: number[] = [];
          for (const m of machines) {
            const values = machineValues(
              { hostId: host.id, gpuName: m.gpu_name, numGpus: m.num_gpus, hardware: m },
              now,
            );
            ids.push(
              (await db.insertInto('machines').values(values).returning('id').executeTakeFirstOrThrow()).id,
            );
          }
          // Last, a search that shows every live machine with every field: a change the index
          // missed shows there whatever the random searches asked.
          const everything = {
            rentable: { in: [true, false] },
            allocated_storage: 0,
            limit: MAX_LIMIT,
            order: [['id', 'asc']],
          };
          // Updates land between searches, after the index has seen the rows (before that, a
          // missed update would hide in the rows' first load); the last search sees the rest.
          const update = async (k: number) => {
            const u = updates[k];
            if (u && ids.length)
              await db
                .updateTable('machines')
                .set(u.set)
                .where('id', '=', ids[u.i % ids.length]!)
                .execute();
          };
          for (const [k, body] of [...bodies, everything].entries()) {
            if (body === everything) for (let j = k; j < updates.length; j++) await update(j);
            const plan = compileSearch(body);
            const got = (await searchOffers(deps, body)).offers;
            const want = await expected(plan);
            expect(
              got.map((o) => o.id),
              JSON.stringify(body),
            ).toEqual(want.map((o) => o.id));
            expect(got, JSON.stringify(body)).toEqual(want);
            // Asked again with nothing changed, a bucket answers from its sorted view (built on its
            // second search by an order): the same page.
            const again = (await searchOffers(deps, body)).offers;
            expect(
              again.map((o) => o.id),
              `again: ${JSON.stringify(body)}`,
            ).toEqual(want.map((o) => o.id));
            expect(again, `again: ${JSON.stringify(body)}`).toEqual(want);
            if (body !== everything) await update(k);
          }
          // A fresh index (one full load) holds what the long-lived one reached incrementally.
          const fresh = new OfferIndex(t().deps.store);
          await fresh.sync();
          for (const body of bodies) {
            const plan = compileSearch(body);
            const got = (await searchOffers(deps, body)).offers.map((o) => o.id);
            expect(fresh.search(plan, now).map((r) => r.id)).toEqual(got);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });
});
