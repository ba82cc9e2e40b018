// A start that migrates applies every pending migration or none: a migration that fails leaves
// the database as it was before the first of them, on SQLite as on PostgreSQL (one transaction
// for the whole set, which on SQLite is also one commit and one fsync instead of one per statement).
import { afterEach, expect, it } from 'vitest';
import pg from 'pg';
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { describeEachDb, PG_URL } from '../../../test/helpers/db.js';
import { openStore, type Store } from './connection.js';
import { migrateToLatest, type Step } from './migrate.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

/** An empty database of the dialect, never migrated. */
async function emptyStore(dialect: 'sqlite' | 'postgres'): Promise<Store> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-migrate-'));
    const store = openStore(`sqlite:${path.join(dir, 'openrig.db')}`);
    cleanups.push(async () => {
      await store.destroy();
      rmSync(dir, { recursive: true, force: true });
    });
    return store;
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const u = new URL(PG_URL);
  u.searchParams.set('options', `-c search_path=${schema}`);
  const store = openStore(u.toString());
  cleanups.push(async () => {
    await store.destroy();
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`drop schema if exists ${schema} cascade`);
    await c.end();
  });
  return store;
}

const step = (up: Step['up']): Step => ({ up, down: async () => {} });

async function tableExists(store: Store, name: string): Promise<boolean> {
  try {
    await sql`select count(*) from ${sql.table(name)}`.execute(store.db);
    return true;
  } catch {
    return false;
  }
}

describeEachDb('migrations, all or none', (dialect) => {
  it('a failing migration leaves none of those before it applied', async () => {
    const store = await emptyStore(dialect);
    const failing = {
      '001-first': step(async (db) => {
        await db.schema.createTable('first_table').addColumn('id', 'integer').execute();
        await db.schema.createIndex('first_table_id').on('first_table').column('id').execute();
      }),
      '002-second': step(async (db) => {
        await db.schema.createTable('second_table').addColumn('id', 'integer').execute();
        throw new Error('the second migration failed');
      }),
    };
    await expect(migrateToLatest(store, failing)).rejects.toThrow('the second migration failed');
    expect(await tableExists(store, 'first_table')).toBe(false);
    expect(await tableExists(store, 'second_table')).toBe(false);

    // Fixed, the same set applies whole, once.
    const fixed = { ...failing, '002-second': step(async () => {}) };
    await migrateToLatest(store, fixed);
    await migrateToLatest(store, fixed);
    expect(await tableExists(store, 'first_table')).toBe(true);
  });
});
