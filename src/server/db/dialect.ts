// Every SQL difference between SQLite and PostgreSQL, by name. A store carries its dialect
// (Store.dialect), and a repository that needs one of these statements asks for it here instead
// of testing which database it runs on: outside src/server/db/ no code branches on the dialect.
import { CompiledQuery, sql, type CreateTableBuilder, type Kysely, type RawBuilder } from 'kysely';
import { nextTurn } from '../clock.js';

export type DialectName = 'sqlite' | 'postgres';

/** How a raw statement reads a parameter on PostgreSQL (SQLite takes every value as it comes). */
export type ParamType = 'bigint' | 'float8' | 'text' | 'untyped';

/** A row of a raw statement. */
export type Raw = Record<string, unknown>;

/** Runs one committed read (Store.read). */
export type ReadFn = <R = Raw>(sqlText: string, params: readonly unknown[]) => Promise<R[]>;

/**
 * Reads the rows of a versioned table (migration 007) that changed since the previous call: all
 * of them on the first call, then only those written since. Stateful: one per reader.
 */
export interface ChangeFeed {
  /** Passes every changed row to `apply`, chunk by chunk, until the reader has caught up. */
  next(read: ReadFn, apply: (row: Raw) => void): Promise<void>;
}

export interface SqlDialect {
  readonly name: DialectName;

  /** The n-th (1-based) placeholder of a raw statement, read as `type` on PostgreSQL. */
  param(n: number, type?: ParamType): string;
  /**
   * A predicate "`column` is one of the integer ids of parameter n", with one statement text
   * whatever the number of ids (so it is prepared once); pass the ids through `idsParam`.
   */
  inIds(column: string, n: number): string;
  idsParam(ids: readonly number[]): unknown;

  /**
   * Serialises the rest of the transaction against every other transaction that locks one of
   * `keys` in namespace `ns` (taken in key order, so two callers can't deadlock). PostgreSQL: a
   * transaction-scoped advisory lock per key, which unlike a row lock holds up no other writer
   * of the rows. SQLite: nothing to do, `tx` is BEGIN IMMEDIATE and writers are serial already.
   */
  lockKeys(db: Kysely<any>, ns: number, keys: readonly number[]): Promise<void>;
  /** lockKeys for one key named by a string. */
  lockName(db: Kysely<any>, name: string): Promise<void>;

  /**
   * A scalar subquery: the rows of `from` (a table with alias, then a WHERE) as a JSON array of
   * objects with `columns` (of that alias), in `orderBy` order; `[]` when there are none. It comes
   * back as JSON text on SQLite and parsed on PostgreSQL (parseJson reads both).
   */
  jsonRows(
    alias: string,
    columns: readonly string[],
    from: RawBuilder<unknown>,
    orderBy: string,
  ): RawBuilder<unknown>;

  /**
   * One statement setting `column` of many rows of `table` to a value of their own:
   * `UPDATE table SET column = v.t … WHERE table.id = v.id AND guard`, `guard` free to compare
   * with `v.t`. Each row is found by its primary key.
   */
  updateByIds(table: string, column: string, rows: readonly [number, number][], guard: string): CompiledQuery;

  /** The change feed of the `machines` table, reading `columns` (of alias `m`) per row. */
  machineChanges(columns: string): ChangeFeed;

  /**
   * A text expression that orders and compares by code point whatever the database's collation
   * (SQLite's BINARY compares UTF-8 bytes already; PostgreSQL's "C" collation does the same).
   */
  codePointOrder(expr: RawBuilder<string>): RawBuilder<string>;

  /** Adds an auto-incrementing integer primary key named `id`. */
  withId<T extends string>(tb: CreateTableBuilder<T, never>): CreateTableBuilder<T, 'id'>;
  /**
   * Marks a table as state that need not survive a crash (PostgreSQL: UNLOGGED, no WAL; SQLite
   * keeps such state in the scratch database instead, see Store.scratch).
   */
  setUnlogged(db: Kysely<any>, table: string): Promise<void>;
  /**
   * A version's number in SQL over the text expression `v`: one to three parts of ASCII digits
   * joined by dots (a missing part is 0), the major at most 6 digits and the others at most 3,
   * as major × 1,000,000 + minor × 1,000 + patch; NULL for any other text.
   */
  versionNumber(v: string): string;
}

/** A JSON value as the driver returned it: text on SQLite, parsed already on PostgreSQL. */
export function parseJson<T>(v: unknown): T {
  return (typeof v === 'string' ? JSON.parse(v) : v) as T;
}

/** True for a unique-constraint violation on either database. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return (
    e?.code === '23505' ||
    e?.code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
  );
}

/** PostgreSQL aborted the transaction to break a deadlock or a serialization conflict. */
export function isTransient(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return code === '40P01' || code === '40001';
}

// Rows per read of a change feed: small chunks, because better-sqlite3 reads synchronously and a
// large first load would hold the event loop and grow V8's young generation for good
// (measurements in bench/RESULTS.md).
const FEED_CHUNK = 500;

export const sqlite: SqlDialect = {
  name: 'sqlite',
  param: () => '?',
  inIds: (column) => `${column} IN (SELECT value FROM json_each(?))`,
  idsParam: (ids) => JSON.stringify(ids),
  lockKeys: () => Promise.resolve(),
  lockName: () => Promise.resolve(),
  jsonRows: (alias, columns, from, orderBy) =>
    sql`(SELECT json_group_array(json_object(${sql.raw(columns.map((c) => `'${c}', ${alias}.${c}`).join(', '))})) FROM (SELECT ${sql.raw(alias)}.* FROM ${from} ORDER BY ${sql.raw(orderBy)}) AS ${sql.raw(alias)})`,
  updateByIds(table, column, rows, guard) {
    // NOT INDEXED: left to itself the planner walks every row of an index on `column` and scans
    // the JSON for each (quadratic: seconds at 20,000 machines); this way it reads the JSON once
    // and finds each row by its primary key (rowid lookups stay allowed).
    return CompiledQuery.raw(
      `UPDATE ${table} NOT INDEXED SET ${column} = v.t FROM (SELECT CAST(key AS INTEGER) AS id, value AS t FROM json_each(?)) AS v WHERE ${table}.id = v.id AND ${guard}`,
      [JSON.stringify(Object.fromEntries(rows))],
    );
  },
  machineChanges(columns) {
    // Writers are serialised by the database lock, so one global counter is exact: the rows with
    // row_version above the highest seen are every change since.
    const changed = `SELECT ${columns}, m.row_version FROM machines m WHERE m.row_version > ? ORDER BY m.row_version LIMIT ${FEED_CHUNK}`;
    let version = -1;
    return {
      async next(read, apply) {
        for (;;) {
          const rows = await read(changed, [version]);
          for (const r of rows) {
            apply(r);
            version = Math.max(version, Number(r.row_version));
          }
          if (rows.length < FEED_CHUNK) return;
          await nextTurn();
        }
      },
    };
  },
  codePointOrder: (expr) => expr,
  withId: (tb) => tb.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement()),
  setUnlogged: () => Promise.resolve(),
  versionNumber(v) {
    // SQLite has no regular expressions: GLOBs say the same (only digits and dots, no empty part, at
    // most two dots, no 7-digit major, no 4-digit minor or patch). CAST reads a leading integer.
    const valid = [
      `${v} <> ''`,
      `${v} NOT GLOB '*[^0-9.]*'`,
      `${v} NOT GLOB '.*'`,
      `${v} NOT GLOB '*.'`,
      `${v} NOT GLOB '*..*'`,
      `${v} NOT GLOB '*.*.*.*'`,
      `${v} NOT GLOB '[0-9][0-9][0-9][0-9][0-9][0-9][0-9]*'`,
      `${v} NOT GLOB '*.[0-9][0-9][0-9][0-9]*'`,
    ].join(' AND ');
    const dot1 = `instr(${v}, '.')`;
    const dot2 = `(${dot1} + instr(substr(${v}, ${dot1} + 1), '.'))`;
    const minor = `CASE WHEN ${dot1} > 0 THEN CAST(substr(${v}, ${dot1} + 1) AS INTEGER) ELSE 0 END`;
    const patch = `CASE WHEN ${v} GLOB '*.*.*' THEN CAST(substr(${v}, ${dot2} + 1) AS INTEGER) ELSE 0 END`;
    return `(CASE WHEN ${valid} THEN CAST(${v} AS INTEGER) * 1000000 + (${minor}) * 1000 + (${patch}) END)`;
  },
};

export const postgres: SqlDialect = {
  name: 'postgres',
  // PostgreSQL infers a placeholder's type from what it meets (1.5 against an integer column
  // would fail): a typed parameter says what it is.
  param: (n, type = 'untyped') => (type === 'untyped' ? `$${n}` : `$${n}::${type}`),
  inIds: (column, n) => `${column} = ANY($${n}::bigint[])`,
  // An array literal as text ({1,2,3}): node-postgres would escape and quote each element.
  idsParam: (ids) => `{${ids.join(',')}}`,
  async lockKeys(db, ns, keys) {
    if (keys.length === 0) return;
    // Keys beyond 2^31 share a lock with a smaller one: that only serialises a little more.
    const sorted = [...keys].sort((a, b) => a - b);
    await sql`select pg_advisory_xact_lock(${ns}, (id % 2147483647)::int) from unnest(${sorted}::bigint[]) with ordinality as t(id, n) order by n`.execute(
      db,
    );
  },
  async lockName(db, name) {
    await sql`select pg_advisory_xact_lock(hashtext(${name}))`.execute(db);
  },
  jsonRows: (alias, columns, from, orderBy) =>
    sql`(SELECT coalesce(json_agg(json_build_object(${sql.raw(columns.map((c) => `'${c}', ${alias}.${c}`).join(', '))}) ORDER BY ${sql.raw(orderBy)}), '[]'::json) FROM ${from})`,
  // `id = ANY($1)` lets the planner reach the rows through the primary key even when the table's
  // statistics are missing or stale (no ANALYZE since a bulk load): without it PostgreSQL
  // estimated one matching row, scanned the guard's index and compared every row with every id.
  updateByIds: (table, column, rows, guard) =>
    CompiledQuery.raw(
      `UPDATE ${table} SET ${column} = v.t FROM unnest($1::bigint[], $2::bigint[]) AS v(id, t) WHERE ${table}.id = ANY($1::bigint[]) AND ${table}.id = v.id AND ${guard}`,
      [rows.map(([id]) => id), rows.map(([, t]) => t)],
    ),
  machineChanges(columns) {
    // Versions come from a sequence and may commit out of order, so the feed remembers the
    // snapshot of its last read and next reads, in the same statement as the new snapshot, the
    // rows whose writing transaction (row_xid) that snapshot did not see: committed since, or in
    // progress then. Rows written before the snapshot's xmin were all visible to it, which lets
    // the row_xid index skip them. The statement returns one row even when nothing changed: it
    // carries the new snapshot.
    // The first load: the snapshot first, then every row in chunks by id. Each chunk sees at
    // least what the snapshot saw; whatever committed after it, or was in progress then, has a
    // row_xid the snapshot does not see, so the next read reads it again.
    const first = `SELECT ${columns} FROM machines m WHERE m.id > $1 ORDER BY m.id LIMIT ${FEED_CHUNK}`;
    const changed = `SELECT s.snap, ${columns} FROM (SELECT pg_current_snapshot()::text AS snap) s LEFT JOIN machines m ON m.row_xid >= pg_snapshot_xmin($1::pg_snapshot) AND NOT pg_visible_in_snapshot(m.row_xid, $1::pg_snapshot)`;
    let snapshot: string | null = null;
    return {
      async next(read, apply) {
        if (snapshot === null) {
          const snap = String((await read('SELECT pg_current_snapshot()::text AS snap', []))[0]!.snap);
          let after = 0; // ids start at 1
          for (;;) {
            const chunk = await read(first, [after]);
            for (const r of chunk) {
              apply(r);
              after = Number(r.id);
            }
            if (chunk.length < FEED_CHUNK) break;
          }
          snapshot = snap;
          return;
        }
        const rows = await read(changed, [snapshot]);
        for (const r of rows) if (r.id !== null && r.id !== undefined) apply(r);
        snapshot = String(rows[0]!.snap);
      },
    };
  },
  codePointOrder: (expr) => sql<string>`(${expr} collate "C")`,
  withId: (tb) => tb.addColumn('id', 'bigserial', (c) => c.primaryKey()),
  async setUnlogged(db, table) {
    await sql`alter table ${sql.table(table)} set unlogged`.execute(db);
  },
  versionNumber(v) {
    const part = (i: number) => `CAST(COALESCE(NULLIF(split_part(${v}, '.', ${i}), ''), '0') AS BIGINT)`;
    return `(CASE WHEN ${v} ~ '^[0-9]{1,6}([.][0-9]{1,3}){0,2}$' THEN ${part(1)} * 1000000 + ${part(2)} * 1000 + ${part(3)} END)`;
  },
};

export function dialectNamed(name: DialectName): SqlDialect {
  return name === 'postgres' ? postgres : sqlite;
}
