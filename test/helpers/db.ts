// One test suite, two databases. `describeEachDb` runs a
// block on SQLite (a fresh file) and on PostgreSQL (a fresh schema in DATABASE_URL_TEST, default
// postgres://postgres@127.0.0.1:5432/test), or skips PostgreSQL with a printed reason.
import { describe } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openStore, type DialectName as Dialect, type Store } from '../../src/server/db/connection.js';
import { migrateToLatest } from '../../src/server/db/migrate.js';

export const PG_URL = process.env.DATABASE_URL_TEST || 'postgres://postgres@127.0.0.1:5432/test';

let pgReason: string | null | undefined;

async function probePg(): Promise<string | null> {
  if (process.env.OPENRIG_TEST_SKIP_PG === '1') return 'OPENRIG_TEST_SKIP_PG=1';
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('select 1');
    return null;
  } catch (err) {
    return `PostgreSQL at ${PG_URL.replace(/\/\/[^@]*@/, '//')} unreachable: ${(err as Error).message}`;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Null when PostgreSQL is reachable, else why not (printed once per test file). */
export async function pgUnavailable(): Promise<string | null> {
  if (pgReason === undefined) {
    pgReason = await probePg();
    if (pgReason) console.warn(`[openrig tests] skipping the PostgreSQL variant: ${pgReason}`);
  }
  return pgReason;
}

// Probed once per test file, at import time, so `describe.skipIf` can use it.
const pgSkip = await pgUnavailable();

export interface TestDb {
  dialect: Dialect;
  /** The URL a child `serve` process can use (sqlite:FILE or postgres URL with search_path). */
  url: string;
  store: Store;
  dataDir: string;
  cleanup(): Promise<void>;
}

/** A fresh, migrated database of the given dialect. */
export async function createTestDb(dialect: Dialect): Promise<TestDb> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'openrig-test-'));
  if (dialect === 'sqlite') {
    const url = `sqlite:${path.join(dataDir, 'openrig.db')}`;
    const store = openStore(url);
    await migrateToLatest(store);
    return {
      dialect,
      url,
      store,
      dataDir,
      async cleanup() {
        await store.destroy();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const u = new URL(PG_URL);
  u.searchParams.set('options', `-c search_path=${schema}`);
  const url = u.toString();
  const store = openStore(url, { poolSize: 20 });
  await migrateToLatest(store);
  return {
    dialect,
    url,
    store,
    dataDir,
    async cleanup() {
      await store.destroy();
      // A server process the test signalled may still be finishing a statement on this schema;
      // dropping it then can deadlock with that statement, which PostgreSQL resolves by failing
      // one side. The drop is retried until the stray process is gone.
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      try {
        for (let attempt = 1; ; attempt++) {
          try {
            await c.query(`drop schema if exists ${schema} cascade`);
            break;
          } catch (e) {
            const code = (e as { code?: string }).code;
            if (attempt >= 20 || (code !== '40P01' && code !== '55P03')) throw e;
            await new Promise((r) => setTimeout(r, 250));
          }
        }
      } finally {
        await c.end();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Runs `fn` once per dialect inside `describe('<name> [sqlite]')` / `[postgres]`. */
export function describeEachDb(name: string, fn: (dialect: Dialect) => void): void {
  describe(`${name} [sqlite]`, () => fn('sqlite'));
  describe.skipIf(pgSkip !== null)(`${name} [postgres]`, () => fn('postgres'));
}
