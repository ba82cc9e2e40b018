// One query layer (Kysely) over SQLite and PostgreSQL (STYLE.md, the kysely anchor).
// Conventions shared by every table so one migration set works on both dialects:
// - ids: integer primary keys (bigserial on PostgreSQL, autoincrement on SQLite);
// - times: epoch milliseconds in `bigint` columns (parsed to numbers on PostgreSQL);
// - booleans: integer 0/1; money: integer micro-dollars; JSON: text.
import Database from 'better-sqlite3';
import pg from 'pg';
import { Kysely, PostgresDialect, SqliteDialect, sql, type Transaction } from 'kysely';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { DB } from './schema.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Store {
  db: Kysely<DB>;
  dialect: Dialect;
  destroy(): Promise<void>;
}

// int8 and numeric come back as strings from pg by default; every bigint we store is an
// epoch-ms timestamp, a count or micro-dollars, all far below 2^53.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));

/**
 * PostgreSQL refuses subnormal doubles (5e-324: "value out of range: underflow") where SQLite
 * stores them. A JSON body may carry one in any number field, so parameters that small are sent
 * as 0 (the nearest value PostgreSQL accepts) instead of failing the request.
 */
const MIN_NORMAL = 2.2250738585072014e-308;
function pgParam(v: unknown): unknown {
  return typeof v === 'number' && v !== 0 && Math.abs(v) < MIN_NORMAL ? 0 : v;
}
class SafeClient extends pg.Client {
  override query(...args: any[]): any {
    if (Array.isArray(args[1])) args[1] = args[1].map(pgParam);
    return (super.query as any)(...args);
  }
}

export function openStore(databaseUrl: string, opts: { poolSize?: number } = {}): Store {
  if (databaseUrl.startsWith('sqlite:')) {
    const file = databaseUrl.slice('sqlite:'.length);
    if (file !== ':memory:') mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    const raw = new Database(file);
    // operator-contract / issue 2: WAL, synchronous FULL (no acknowledged write lost on power
    // loss), and a busy timeout so `admin` commands can write while `serve` runs.
    raw.pragma('journal_mode = WAL');
    raw.pragma('synchronous = FULL');
    raw.pragma('busy_timeout = 5000');
    raw.pragma('foreign_keys = ON');
    const db = new Kysely<DB>({ dialect: new SqliteDialect({ database: cachingDatabase(raw) }) });
    return { db, dialect: 'sqlite', destroy: () => db.destroy() };
  }
  const pool = new pg.Pool({ connectionString: databaseUrl, max: opts.poolSize ?? 10, Client: SafeClient });
  // An idle client losing its connection must not crash the process.
  pool.on('error', () => {});
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  return { db, dialect: 'postgres', destroy: () => db.destroy() };
}

/**
 * Kysely prepares every statement anew on better-sqlite3; preparing costs more than a one-row
 * read (notes/performance-baseline.md). Statements are reusable, and Kysely runs each one to
 * completion synchronously, so caching them by SQL text is safe. Bounded: the cache is emptied
 * when it grows past 1,000 distinct statements (dynamic IN-lists make new texts).
 */
function cachingDatabase(raw: Database.Database) {
  const cache = new Map<string, Database.Statement>();
  return {
    prepare(sqlText: string) {
      let st = cache.get(sqlText);
      if (!st) {
        st = raw.prepare(sqlText);
        if (cache.size >= 1000) cache.clear();
        cache.set(sqlText, st);
      }
      return st;
    },
    close() {
      cache.clear();
      raw.close();
    },
  };
}

/**
 * Runs `fn` in one write transaction. On SQLite it is `BEGIN IMMEDIATE`, so a transaction that
 * reads and then writes can't fail half-way with SQLITE_BUSY when another process (an `admin`
 * command, a second `serve`) writes at the same time; it waits for the busy timeout instead.
 */
export async function tx<T>(store: Store, fn: (trx: Kysely<DB>) => Promise<T>): Promise<T> {
  if (store.dialect === 'postgres') {
    return store.db.transaction().execute((trx: Transaction<DB>) => fn(trx));
  }
  return store.db.connection().execute(async (conn) => {
    await sql`begin immediate`.execute(conn);
    try {
      const result = await fn(conn);
      await sql`commit`.execute(conn);
      return result;
    } catch (err) {
      await sql`rollback`.execute(conn).catch(() => {});
      throw err;
    }
  });
}

/** True for a unique-constraint violation on either dialect. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** True when the database could not be reached (used by /readyz and 503 mapping). */
export async function ping(store: Store): Promise<boolean> {
  try {
    await sql`select 1`.execute(store.db);
    return true;
  } catch {
    return false;
  }
}
