// One query layer (Kysely) over SQLite and PostgreSQL.
// Conventions shared by every table so one migration set works on both dialects:
// - ids: integer primary keys (bigserial on PostgreSQL, autoincrement on SQLite);
// - times: epoch milliseconds in `bigint` columns (parsed to numbers on PostgreSQL);
// - booleans: integer 0/1; money: integer micro-dollars; JSON: text.
import type Database from 'better-sqlite3';
import type Pg from 'pg';
import { CompiledQuery, Kysely, PostgresDialect, SqliteDialect, sql, type Transaction } from 'kysely';
import { createHash } from 'node:crypto';
import { lazyRequire } from '../../contract/lazy-require.js';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { DB } from './schema.js';
import { postgres, sqlite, type SqlDialect } from './dialect.js';
import { coalescingReader } from './coalesce.js';

export type { DialectName, SqlDialect } from './dialect.js';
export { isUniqueViolation } from './dialect.js';

export interface Store {
  db: Kysely<DB>;
  /** Which database this is, and its SQL where the two differ (db/dialect.ts). */
  dialect: SqlDialect;
  /**
   * Runs one read statement outside any transaction, with no query building: the hot paths
   * (authentication, an instance poll, search) build their SQL once (db/prepared.ts) and run it
   * here. On a SQLite file it goes to a second, query-only connection: WAL lets it read the last
   * committed state while a write transaction is open on the main connection, so a poll never
   * queues behind a heartbeat's transaction and never sees uncommitted rows. On PostgreSQL it is
   * a named prepared statement on the pool (parsed and planned once per connection) that
   * returns each row as one JSON value. Only SELECT statements: it runs as a subquery.
   */
  read<R = Record<string, unknown>>(sqlText: string, params: readonly unknown[]): Promise<R[]>;
  /**
   * Store.read for a statement that returns at most one row, on the paths every request takes
   * (its key, the instance poll). On PostgreSQL, calls of the same statement made while earlier
   * ones are in flight share the next round trip (db/coalesce.ts); each still reads state
   * committed before it was made. On a SQLite file, calls made in the same turn of the event loop
   * share one read transaction (Store.readSnapshot); in memory it is Store.read.
   */
  readCoalesced<R = Record<string, unknown>>(sqlText: string, params: readonly unknown[]): Promise<R[]>;
  /**
   * On a SQLite file only: runs `fn`, whose reads (synchronous, on the reader connection) share
   * one read transaction with every other call made in the same turn of the event loop. A
   * statement outside a transaction begins and ends its own, which costs more than an indexed
   * read (two `fcntl` locks and an `fstat`): the poll's two reads, its key then its instance, and
   * those of the polls that arrived with it, go together here. The transaction begins once the
   * turn's I/O callbacks have run (setImmediate), so after every call in it was made: each call
   * reads everything committed before it was made, as a transaction of its own would. A call
   * whose `fn` throws rejects alone.
   */
  readSnapshot?: <T>(fn: (read: SyncRead) => T) => Promise<T>;
  /**
   * Where state lives that every process must share but that need not survive a power loss
   * (rate-limit counters): its statements run alone, each its own transaction, never waiting for
   * (nor blocking) the main database's write transactions.
   */
  scratch: Scratch;
  destroy(): Promise<void>;
}

/** A read of the reader connection of a SQLite file, made synchronously. */
export type SyncRead = <R>(sqlText: string, params: readonly unknown[]) => R[];

export interface Scratch {
  /**
   * True on a SQLite file: a side database beside it (`FILE.scratch`), opened on first use, with
   * synchronous=OFF (a write costs no fsync) and its own lock. False on PostgreSQL (an UNLOGGED
   * table of the main database, run as a named prepared statement on the pool) and in-memory
   * SQLite (the main database).
   */
  readonly separate: boolean;
  /** Creates the side database's tables (it is not migrated); nothing to do where it is the main one. */
  ensure(ddl: string): void;
  /** Runs one statement (placeholders of Store.dialect); its rows when it returns any. */
  run<R = Record<string, unknown>>(sqlText: string, params: readonly unknown[]): Promise<R[]>;
}

// Each driver is loaded when a store of its dialect opens, not at start-up.
const sqliteDriver = lazyRequire<typeof Database>('better-sqlite3');
let pgDriver: { pg: typeof Pg; Client: typeof Pg.Client } | null = null;
function loadPg(): { pg: typeof Pg; Client: typeof Pg.Client } {
  if (pgDriver) return pgDriver;
  const pg = lazyRequire<typeof Pg>('pg')();
  // int8 and numeric come back as strings from pg by default; every bigint we store is an
  // epoch-ms timestamp, a count or micro-dollars, all far below 2^53.
  pg.types.setTypeParser(20, (v) => Number(v));
  pg.types.setTypeParser(1700, (v) => Number(v));
  class SafeClient extends pg.Client {
    // pg.Client.query has many overloads; this override passes any of them through unchanged.
    override query(...args: unknown[]): any {
      if (Array.isArray(args[1])) args[1] = args[1].map(pgParam);
      return (super.query as (...a: unknown[]) => unknown)(...args);
    }
  }
  pgDriver = { pg, Client: SafeClient };
  return pgDriver;
}

/**
 * PostgreSQL refuses subnormal doubles (5e-324: "value out of range: underflow") where SQLite
 * stores them. A JSON body may carry one in any number field, so parameters that small are sent
 * as 0 (the nearest value PostgreSQL accepts) instead of failing the request.
 */
const MIN_NORMAL = 2.2250738585072014e-308;
function pgParam(v: unknown): unknown {
  return typeof v === 'number' && v !== 0 && Math.abs(v) < MIN_NORMAL ? 0 : v;
}

export function openStore(databaseUrl: string, opts: { poolSize?: number } = {}): Store {
  if (databaseUrl.startsWith('sqlite:')) {
    const file = databaseUrl.slice('sqlite:'.length);
    if (file !== ':memory:') mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    const Sqlite = sqliteDriver();
    const raw = new Sqlite(file);
    // WAL, synchronous FULL (no acknowledged write lost on power
    // loss), and a busy timeout so `admin` commands can write while `serve` runs.
    raw.pragma('journal_mode = WAL');
    raw.pragma('synchronous = FULL');
    raw.pragma('busy_timeout = 5000');
    raw.pragma('foreign_keys = ON');
    const db = new Kysely<DB>({ dialect: new SqliteDialect({ database: cachingDatabase(raw) }) });
    const read: {
      read: Store['read'];
      coalesced?: Store['readCoalesced'];
      snapshot?: Store['readSnapshot'];
      close(): void;
    } = file === ':memory:' ? viaKysely(db) : readerConnection(new Sqlite(file));
    const scratch = file === ':memory:' ? mainScratch(db) : scratchFile(() => new Sqlite(`${file}.scratch`));
    return {
      db,
      dialect: sqlite,
      read: read.read,
      readCoalesced: read.coalesced ?? read.read,
      readSnapshot: read.snapshot,
      scratch,
      destroy: async () => {
        read.close();
        scratch.close();
        await db.destroy();
      },
    };
  }
  const { pg, Client } = loadPg();
  const pool = new pg.Pool({ connectionString: databaseUrl, max: opts.poolSize ?? 10, Client });
  // An idle client losing its connection must not crash the process.
  pool.on('error', () => {});
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  const batchPool = genericPlanPool(databaseUrl, BATCH_CONNECTIONS);
  batchPool.on('error', () => {});
  const { run, read, readCoalesced } = pgReads(pool, batchPool);
  return {
    db,
    dialect: postgres,
    read,
    readCoalesced,
    scratch: { separate: false, ensure: () => {}, run },
    destroy: async () => {
      await db.destroy();
      await batchPool.end();
    },
  };
}

/**
 * How many connections of each PostgreSQL store run the batched reads of Store.readCoalesced (at
 * most one statement per text in flight: the API key, the key with the polled instance, a session).
 */
export const BATCH_CONNECTIONS = 3;

/** A statement's name as a named prepared statement (the same text, the same name, everywhere). */
const names = new Map<string, string>();
function statementName(sqlText: string): string {
  let name = names.get(sqlText);
  if (!name) {
    name = `openrig_${createHash('sha1').update(sqlText).digest('hex').slice(0, 20)}`;
    names.set(sqlText, name);
  }
  return name;
}

/** Runs statements as named prepared statements on `pool`. */
const namedOn =
  (pool: Pg.Pool) =>
  async <R>(sqlText: string, params: readonly unknown[]): Promise<R[]> =>
    (await pool.query({ name: statementName(sqlText), text: sqlText, values: params.map(pgParam) }))
      .rows as R[];

/**
 * A pool whose connections plan each prepared statement once for any arguments
 * (plan_cache_mode = force_generic_plan; why, below): set on each connection as it connects,
 * before the pool hands it out, so no statement of the pool's runs with another plan mode.
 */
export function genericPlanPool(databaseUrl: string, max: number): Pg.Pool {
  const { pg, Client } = loadPg();
  class GenericPlanClient extends Client {
    override connect(): Promise<void>;
    override connect(callback: (err: Error) => void): void;
    override connect(callback?: (err: Error) => void): Promise<void> | void {
      const ready = super.connect().then(async () => {
        await this.query('SET plan_cache_mode = force_generic_plan');
      });
      if (!callback) return ready;
      ready.then(
        () => callback(null as unknown as Error),
        (err: Error) => callback(err),
      );
    }
  }
  return new pg.Pool({ connectionString: databaseUrl, max, Client: GenericPlanClient });
}

/**
 * The statements of a PostgreSQL store: `run` (a named prepared statement on `pool`), `read`
 * (Store.read) and `readCoalesced` (Store.readCoalesced), whose batched statements run on
 * `batchPool` (a `genericPlanPool`). Those connections plan every statement once for any arguments
 * (plan_cache_mode = force_generic_plan): PostgreSQL otherwise plans a prepared statement anew at
 * each execution while a plan for the values at hand looks cheaper than the generic one, and for a
 * batch it always does (it knows the arrays' lengths, the generic plan assumes a hundred
 * elements), so each batch was planned again: half a millisecond, more than running it. The
 * batched statement runs the original once per call as a subquery of its own (db/coalesce.ts), so
 * the generic plan is the original's.
 */
export function pgReads(pool: Pg.Pool, batchPool: Pg.Pool = pool) {
  const run = namedOn(pool);
  // A read comes back as one JSON value per row (row_to_json over the statement as a subquery):
  // pg builds a row object field by field from a dictionary-mode template, which for the hot
  // paths' 20 to 50 columns cost more CPU than the rest of the request, where JSON.parse builds
  // the same object natively. The values are the same: bigint and numeric become JSON numbers
  // (what the type parsers above make of them), json stays parsed, text stays text. A subquery
  // with ORDER BY or LIMIT is scanned in its own order (PostgreSQL never flattens one).
  const asJson = new Map<string, string>();
  const read = async <R>(sqlText: string, params: readonly unknown[]): Promise<R[]> => {
    let text = asJson.get(sqlText);
    if (!text) asJson.set(sqlText, (text = `SELECT row_to_json(t) AS r FROM (${sqlText}) t`));
    return (await run<{ r: R }>(text, params)).map((row) => row.r);
  };
  const readCoalesced = coalescingReader(namedOn(batchPool), read, async (sqlText) => {
    // The types PostgreSQL infers for the statement's parameters, from a prepared copy of it.
    const client = await pool.connect();
    try {
      await client.query(`PREPARE openrig_parameter_types AS ${sqlText}`);
      const { rows } = await client.query<{ t: string[] }>(
        `SELECT parameter_types::text[] AS t FROM pg_prepared_statements WHERE name = 'openrig_parameter_types'`,
      );
      await client.query('DEALLOCATE openrig_parameter_types');
      client.release();
      return rows[0]!.t;
    } catch (err) {
      // The session may still hold the statement: it is closed, not reused.
      client.release(err instanceof Error ? err : true);
      throw err;
    }
  });
  return { run, read, readCoalesced };
}

/**
 * Store.read on a SQLite file: its own query-only connection (see Store.read). Statements run in
 * better-sqlite3's array mode and a per-statement function builds each row object with a fixed
 * shape: building a 40-column row as an object natively costs twice the whole indexed read.
 */
function readerConnection(conn: Database.Database) {
  conn.pragma('query_only = ON');
  // Its page cache is the process's memory (the OS caches the file anyway): SQLite's own default
  // of 2 MB instead of the driver's 16 MB keeps idle RSS down once search has read every machine.
  conn.pragma('cache_size = -2000');
  conn.pragma('busy_timeout = 5000');
  const cache = new Map<string, { stmt: Database.Statement; row: (values: unknown[]) => unknown }>();
  const prepared = (sqlText: string) => {
    let p = cache.get(sqlText);
    if (!p) {
      const stmt = conn.prepare(sqlText).raw(true);
      // Later duplicates win, as in better-sqlite3's object rows.
      const body = stmt
        .columns()
        .map((c, i) => `${JSON.stringify(c.name)}: v[${i}]`)
        .join(', ');
      p = { stmt, row: new Function('v', `return { ${body} };`) as (values: unknown[]) => unknown };
      if (cache.size >= 1000) cache.clear();
      cache.set(sqlText, p);
    }
    return p;
  };
  const readSync: SyncRead = <R>(sqlText: string, params: readonly unknown[]): R[] => {
    const p = prepared(sqlText);
    return (p.stmt.all(...params) as unknown[][]).map(p.row) as R[];
  };
  const begin = conn.prepare('BEGIN');
  const commit = conn.prepare('COMMIT');
  /** Calls of snapshot() made in this turn of the event loop, run together at its end. */
  let waiting: { fn: (read: SyncRead) => unknown; resolve(v: unknown): void; reject(e: unknown): void }[] =
    [];
  const runWaiting = () => {
    const calls = waiting;
    waiting = [];
    try {
      begin.run();
    } catch (err) {
      for (const c of calls) c.reject(err);
      return;
    }
    // Nothing else runs on the connection meanwhile: every `fn` is synchronous, and so is every read.
    try {
      for (const c of calls) {
        try {
          c.resolve(c.fn(readSync));
        } catch (err) {
          c.reject(err);
        }
      }
    } finally {
      // A read transaction that a failed statement ended has nothing left to commit. Should the
      // commit itself fail, the transaction is rolled back: the next turn must begin its own.
      if (conn.inTransaction) {
        try {
          commit.run();
        } catch {
          if (conn.inTransaction) conn.exec('ROLLBACK');
        }
      }
    }
  };
  const snapshot = <T>(fn: (read: SyncRead) => T): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (waiting.length === 0) setImmediate(runWaiting);
      waiting.push({ fn, resolve, reject });
    });
  return {
    // better-sqlite3 runs the statement to completion synchronously; async only for the interface.
    read: <R>(sqlText: string, params: readonly unknown[]): Promise<R[]> => {
      try {
        return Promise.resolve(readSync<R>(sqlText, params));
      } catch (err) {
        return Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
    },
    snapshot,
    // The reads every request makes share the read transaction of their turn, as the poll's do.
    coalesced: <R>(sqlText: string, params: readonly unknown[]): Promise<R[]> =>
      snapshot((r) => r<R>(sqlText, params)),
    close: () => {
      cache.clear();
      conn.close();
    },
  };
}

/** The scratch side database of a SQLite file (see Scratch), opened on first use. */
function scratchFile(open: () => Database.Database): Scratch & { close(): void } {
  let conn: Database.Database | null = null;
  const statements = new Map<string, Database.Statement>();
  const db = () => {
    if (!conn) {
      conn = open();
      conn.pragma('journal_mode = WAL');
      conn.pragma('synchronous = OFF');
      conn.pragma('busy_timeout = 5000');
    }
    return conn;
  };
  return {
    separate: true,
    ensure: (ddl) => db().exec(ddl),
    // Synchronous statements: a rejected promise on failure, like the other stores' scratch.
    run: <R>(sqlText: string, params: readonly unknown[]) =>
      new Promise<R[]>((resolve) => {
        let st = statements.get(sqlText);
        if (!st) statements.set(sqlText, (st = db().prepare(sqlText)));
        if (st.reader) resolve(st.all(...params) as R[]);
        else {
          st.run(...params);
          resolve([]);
        }
      }),
    close: () => {
      statements.clear();
      conn?.close();
    },
  };
}

/** Scratch state of an in-memory SQLite database: its main database (migrated like the rest). */
function mainScratch(db: Kysely<DB>): Scratch & { close(): void } {
  return {
    separate: false,
    ensure: () => {},
    run: async <R>(sqlText: string, params: readonly unknown[]) =>
      (await db.executeQuery<R>(CompiledQuery.raw(sqlText, [...params]))).rows,
    close: () => {},
  };
}

/** Store.read for an in-memory SQLite database (no second connection can see it). */
function viaKysely(db: Kysely<DB>) {
  return {
    read: async <R>(sqlText: string, params: readonly unknown[]): Promise<R[]> =>
      (await db.executeQuery<R>(CompiledQuery.raw(sqlText, [...params]))).rows,
    close: () => {},
  };
}

/**
 * Kysely prepares every statement anew on better-sqlite3, and preparing costs more than a one-row
 * read. Statements are reusable, and Kysely runs each one to completion synchronously, so caching
 * them by SQL text is safe. Bounded: the cache is emptied
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
  if (store.dialect.name === 'postgres') {
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

/** True when the database could not be reached (used by /readyz and 503 mapping). */
export async function ping(store: Store): Promise<boolean> {
  try {
    await sql`select 1`.execute(store.db);
    return true;
  } catch {
    return false;
  }
}
