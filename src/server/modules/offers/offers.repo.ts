// Queries of the offers module: the SQL search (the statement itself is built from the plan by
// searchSql, in the database's dialect) and the offered GPU names.
import { CompiledQuery, type Kysely } from 'kysely';
import type { Store } from '../../db/connection.js';
import type { DB } from '../../db/schema.js';
import type { SqlDialect } from '../../db/dialect.js';
import { searchSql, type SearchPlan } from './offers.filter.js';

/** Runs a search plan as one SQL statement; the rows are offers' raw columns, in order. */
export async function searchRows(
  db: Kysely<DB>,
  dialect: SqlDialect,
  plan: SearchPlan,
  now: number,
): Promise<Record<string, unknown>[]> {
  const q = searchSql(plan, dialect, now);
  const res = await db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(q.sql, q.params));
  return res.rows;
}

/** The walk of listedGpuNames: from each GPU name to the next in the index, kept when offered. */
const GPU_NAMES_SQL = `WITH RECURSIVE names(n) AS (
  SELECT min(gpu_name) FROM machines
  UNION ALL
  SELECT (SELECT min(m.gpu_name) FROM machines m WHERE m.gpu_name > names.n) FROM names WHERE names.n IS NOT NULL
)
SELECT n AS gpu_name FROM names
WHERE n IS NOT NULL
  AND EXISTS (SELECT 1 FROM machines m WHERE m.gpu_name = names.n AND m.listed = 1 AND m.deleted_at IS NULL)`;

/**
 * The distinct GPU names of listed, not deleted machines, in code unit order (JavaScript's string
 * order), so that both databases give the same list whatever their collation. Unauthenticated
 * clients ask it on start-up, so it must stay cheap however many machines there are: a DISTINCT
 * over the table reads every machine (40-50 ms at 50,000), where this walks the
 * `(gpu_name, num_gpus)` index from one name to the next (one seek per distinct name) and keeps a
 * name when one listed, live machine has it. It runs through Store.read: planned once per connection on PostgreSQL
 * (planning the walk took longer than running it), on the query-only connection on SQLite.
 */
export async function listedGpuNames(store: Store): Promise<string[]> {
  const rows = await store.read<{ gpu_name: string }>(GPU_NAMES_SQL, []);
  return rows.map((r) => r.gpu_name).sort();
}
