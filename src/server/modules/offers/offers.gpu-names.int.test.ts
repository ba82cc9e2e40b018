import { beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openStore } from '../../db/connection.js';
import { migrateToLatest } from '../../db/migrate.js';
import { describeEachDb, PG_URL, pgUnavailable } from '../../../../test/helpers/db.js';
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

/** NAMES in code unit order: what every database must answer once all of them are listed. */
const CODE_UNIT_ORDER = [
  'A100',
  'A100 SXM4',
  'H100',
  'RTX 409',
  'RTX 4090',
  'RTX 4090 ',
  'RTX 4090 D',
  'Z',
  'rtx 4090',
  'Ä100',
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
        .execute()
    )
      .map((r) => r.gpu_name)
      .sort();

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

  it('orders the names by code unit', async () => {
    // Every name listed: the answer is this exact list on SQLite and on PostgreSQL.
    const machines = await t().deps.db.selectFrom('machines').select('id').execute();
    await t()
      .deps.db.updateTable('machines')
      .set({ listed: 1, deleted_at: null })
      .where(
        'id',
        'in',
        machines.map((m) => m.id),
      )
      .execute();
    const r = await t().request('GET', '/api/v0/gpu_names/unique/');
    expect(r.body.gpu_names).toEqual(CODE_UNIT_ORDER);
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

describe.skipIf((await pgUnavailable()) !== null)(
  'GPU names on a PostgreSQL database with a language collation',
  () => {
    it('are still in code unit order, where the database orders them otherwise', async (ctx) => {
      const name = `t_icu_${randomBytes(6).toString('hex')}`;
      const admin = new pg.Client({ connectionString: PG_URL });
      await admin.connect();
      const icu = await admin.query(`SELECT 1 FROM pg_collation WHERE collprovider = 'i' LIMIT 1`);
      if (icu.rowCount === 0) {
        await admin.end();
        console.warn('[openrig tests] skipping the collation test: this PostgreSQL was built without ICU');
        ctx.skip();
      }
      await admin.query(
        `CREATE DATABASE ${name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en' LOCALE 'C.UTF-8'`,
      );
      const u = new URL(PG_URL);
      u.pathname = `/${name}`;
      const store = openStore(u.toString());
      try {
        await migrateToLatest(store);
        const [user] = await store.db
          .insertInto('users')
          .values({
            email: 'host@example.com',
            full_name: '',
            tfa_status: 'disabled',
            is_admin: 0,
            sms_fraud: 0,
            balance_micros: 0,
            created_at: 0,
            password_hash: null,
            email_verified_at: null,
            phone_number: null,
          })
          .returning('id')
          .execute();
        await insertMachines(
          store.db,
          NAMES.map((gpuName) => ({ hostId: user!.id, gpuName, numGpus: 1, priceGpu: 1 })),
          0,
        );
        // The database's own order differs (it puts "rtx 4090" beside "RTX 4090"), so this checks
        // something: the answer does not follow it.
        const dbOrder = (
          await store.db.selectFrom('machines').select('gpu_name').distinct().orderBy('gpu_name').execute()
        ).map((r) => r.gpu_name);
        expect(dbOrder).not.toEqual(CODE_UNIT_ORDER);
        expect(await listedGpuNames(store)).toEqual(CODE_UNIT_ORDER);
      } finally {
        await store.destroy();
        await admin.query(`DROP DATABASE ${name}`);
        await admin.end();
      }
    });
  },
);
