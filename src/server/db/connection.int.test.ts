import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql } from 'kysely';
import Database from 'better-sqlite3';
import { describeEachDb, createTestDb, type TestDb } from '../../../test/helpers/db.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openStore, type SyncRead } from './connection.js';

describeEachDb('store', (dialect) => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb(dialect);
  });
  afterAll(async () => db?.cleanup());

  it('accepts a subnormal double from a JSON body instead of failing (PostgreSQL refuses them)', async () => {
    const u = await db.store.db
      .insertInto('users')
      .values({
        email: `tiny-${dialect}@example.com`,
        full_name: '',
        tfa_status: 'disabled',
        is_admin: 0,
        sms_fraud: 0,
        balance_micros: 0,
        created_at: Date.now(),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const m = await db.store.db
      .insertInto('machines')
      .values({
        host_id: u.id,
        gpu_name: 'RTX 4090',
        num_gpus: 1,
        cpu_ghz: 5e-324,
        created_at: Date.now(),
      } as any)
      .returning('cpu_ghz')
      .executeTakeFirstOrThrow();
    expect(m.cpu_ghz).toBeLessThan(1e-300);
    const found = await db.store.db
      .selectFrom('machines')
      .select('id')
      .where('cpu_ghz', '<=', 5e-324)
      .execute();
    expect(found).toHaveLength(1);
  });

  it('read returns the rows, values and order that the query builder returns', async () => {
    const now = Date.now();
    const users = await db.store.db
      .insertInto('users')
      .values(
        [0, 1, 2].map((i) => ({
          email: `read-${i}-${dialect}@example.com`,
          full_name: i === 1 ? 'Zoë "quoted" \\ line\nbreak' : '',
          tfa_status: 'disabled',
          phone_number: i === 2 ? null : `+1555000${i}`,
          is_admin: 0,
          sms_fraud: 0,
          balance_micros: 9_007_199_254_740_991 - i,
          created_at: now + i,
        })),
      )
      .returning('id')
      .execute();
    const ids = users.map((u) => u.id);
    const built = db.store.db
      .selectFrom('users as u')
      .selectAll('u')
      .select([
        sql<number>`u.balance_micros / 3.0`.as('third'),
        sql<unknown>`${db.store.dialect.name === 'postgres' ? sql`json_build_array(u.id, 'x')` : sql`json_array(u.id, 'x')`}`.as(
          'j',
        ),
        'u.id as id', // a duplicate name: the later column wins, as in object rows
      ])
      .where('u.id', 'in', ids)
      .orderBy('u.id', 'desc')
      .limit(2)
      .compile();
    const viaBuilder = (await db.store.db.executeQuery(built)).rows;
    const viaRead = await db.store.read(built.sql, built.parameters);
    expect(viaRead).toEqual(viaBuilder);
    expect(viaRead.map((r) => r.id)).toEqual([ids[2], ids[1]]);
    expect(viaRead[0]!.phone_number).toBeNull();
    expect(viaRead[1]!.full_name).toBe('Zoë "quoted" \\ line\nbreak');
    expect(viaRead[0]!.balance_micros).toBe(9_007_199_254_740_989);
    expect(typeof viaRead[0]!.third).toBe('number');
    expect(await db.store.read('SELECT 1 AS one WHERE 1 = 0', [])).toEqual([]);
  });

  it('readSnapshot: on a SQLite file, the calls of one turn share a read transaction begun after the last was made', async () => {
    const snapshot = db.store.readSnapshot;
    if (dialect === 'postgres') {
      expect(snapshot).toBeUndefined();
      return;
    }
    const count = 'SELECT count(*) AS n FROM users';
    const users = async () => Number((await db.store.read<{ n: number }>(count, []))[0]!.n);
    const before = await users();
    // Another connection to the file, writing synchronously while the snapshot is open.
    const other = new Database(db.url.slice('sqlite:'.length));
    const insert = (n: number) =>
      other
        .prepare('INSERT INTO users (email, created_at) VALUES (?, ?)')
        .run(`snap${n}@example.com`, Date.now());
    const n = (read: SyncRead) => Number(read<{ n: number }>(count, [])[0]!.n);

    // A write committed after a call was made but before the turn ends is seen by that call too:
    // the transaction begins after every call of the turn.
    const first = snapshot!(n);
    insert(1);
    // One transaction: a write committed while it is open is seen by none of its calls, whether
    // they read before or after it.
    const seen = await Promise.all([
      first,
      snapshot!((read) => {
        const a = n(read);
        insert(2);
        return [a, n(read)];
      }),
      snapshot!(n),
    ]);
    expect(seen).toEqual([before + 1, [before + 1, before + 1], before + 1]);
    // The next turn's transaction is a new one, and sees it.
    expect(await snapshot!(n)).toBe(before + 2);

    // A call that throws rejects alone; the others of its turn still read, and the transaction
    // ends: the next one sees new commits.
    const results = await Promise.allSettled([
      snapshot!(n),
      snapshot!(() => {
        throw new Error('boom');
      }),
      snapshot!((read) => read(count + ' WHERE nosuchcolumn = 1', [])),
      snapshot!(n),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toEqual(new Error('boom'));
    insert(3);
    expect(await snapshot!(n)).toBe(before + 3);
    expect(await users()).toBe(before + 3);

    // readCoalesced goes with the turn's transaction too: it reads what was committed before the
    // turn ended, whenever in it the call was made.
    const coalesced = db.store.readCoalesced<{ n: number }>(count, []);
    insert(4);
    expect(Number((await coalesced)[0]!.n)).toBe(before + 4);
    other.close();
  });
});

it('readSnapshot: the calls waiting when a SQLite store closes are refused, none left hanging', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'openrig-snapshot-'));
  try {
    const store = openStore(`sqlite:${path.join(dir, 'closing.db')}`);
    const waiting = [
      store.readSnapshot!((read) => read('SELECT 1 AS one', [])),
      store.readCoalesced('SELECT 1 AS one', []),
    ];
    await store.destroy();
    const settled = await Promise.allSettled(waiting);
    expect(settled.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
