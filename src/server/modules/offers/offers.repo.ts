// Queries of the offers module: the SQL search (the statement itself is built from the plan by
// searchSql, in the database's dialect) and the offered GPU names.
import { CompiledQuery, type Kysely } from 'kysely';
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

/** The distinct GPU names of listed, not deleted machines, in order. */
export async function listedGpuNames(db: Kysely<DB>): Promise<string[]> {
  const rows = await db
    .selectFrom('machines')
    .select('gpu_name')
    .distinct()
    .where('deleted_at', 'is', null)
    .where('listed', '=', 1)
    .orderBy('gpu_name')
    .execute();
  return rows.map((r) => r.gpu_name);
}
