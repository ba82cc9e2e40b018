// Hot-path reads built once, because building and compiling the same queries with Kysely on
// every request was about half of a poll's CPU. A prepared read is written
// with Kysely as usual, against placeholder arguments; the first call per dialect compiles it and
// notes which compiled parameter is which argument; every later call only substitutes the
// arguments and runs the SQL through Store.read (no transaction; see connection.ts).
import type { Compilable, Kysely } from 'kysely';
import type { Store } from './connection.js';
import type { DB } from './schema.js';
import type { DialectName, SqlDialect } from './dialect.js';

const MARK = '\u0000openrig-arg:';

interface Compiled {
  sql: string;
  /** Per compiled parameter: the argument index, or the constant the builder inlined. */
  slots: ({ arg: number } | { value: unknown })[];
}

/**
 * `coalesce`: a read of at most one row made by every request (Store.readCoalesced).
 * `build` receives placeholders in place of its arguments and must only pass them through as
 * values (never inspect them: they are marker strings at build time).
 */
export function preparedRead<A extends unknown[], R>(
  build: (on: { db: Kysely<DB>; dialect: SqlDialect }, ...args: A) => Compilable<R>,
  opts: { coalesce?: boolean } = {},
): PreparedRead<A, R> {
  // The compiled text depends on the dialect alone (SQLite's `?` or PostgreSQL's `$n`).
  const compiled: Partial<Record<DialectName, Compiled>> = {};
  const statement = (on: { db: Kysely<DB>; dialect: SqlDialect }, args: A) => {
    let c = compiled[on.dialect.name];
    if (!c) {
      const marks = args.map((_, i) => `${MARK}${i}`) as A;
      const q = build(on, ...marks).compile();
      const slots = q.parameters.map((p) =>
        typeof p === 'string' && p.startsWith(MARK) ? { arg: Number(p.slice(MARK.length)) } : { value: p },
      );
      c = { sql: q.sql, slots };
      compiled[on.dialect.name] = c;
    }
    return { sql: c.sql, params: c.slots.map((s) => ('arg' in s ? args[s.arg] : s.value)) };
  };
  const read = (store: Store, ...args: A): Promise<R[]> => {
    const st = statement(store, args);
    return opts.coalesce ? store.readCoalesced<R>(st.sql, st.params) : store.read<R>(st.sql, st.params);
  };
  return Object.assign(read, { statement });
}

/** A read built once (preparedRead); `statement` is its SQL and parameters for the given arguments. */
export type PreparedRead<A extends unknown[], R> = ((store: Store, ...args: A) => Promise<R[]>) & {
  statement(on: { db: Kysely<DB>; dialect: SqlDialect }, args: A): { sql: string; params: unknown[] };
};
