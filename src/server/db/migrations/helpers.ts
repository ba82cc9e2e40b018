// Column helpers so one migration set runs on SQLite and PostgreSQL (see db/connection.ts).
import { type CreateTableBuilder, type Kysely } from 'kysely';

export type Dialect = 'sqlite' | 'postgres';

export function dialectOf(db: Kysely<any>): Dialect {
  // The adapter's class name is the most reliable cross-version signal.
  const name = db.getExecutor().adapter.constructor.name.toLowerCase();
  return name.includes('postgres') ? 'postgres' : 'sqlite';
}

/** An auto-incrementing integer primary key named `id`. */
export function withId<T extends string>(
  db: Kysely<any>,
  tb: CreateTableBuilder<T, never>,
): CreateTableBuilder<T, 'id'> {
  return dialectOf(db) === 'postgres'
    ? tb.addColumn('id', 'bigserial', (c) => c.primaryKey())
    : tb.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
}
