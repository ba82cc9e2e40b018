// A value per row in one UPDATE, for statements that write many rows at once.
import { sql, type RawBuilder } from 'kysely';

/**
 * `CASE id WHEN … THEN … ELSE <col> END`: a value per row id in one UPDATE. Ending in the column
 * itself also gives PostgreSQL the parameters' type (the column's).
 */
export function caseById(values: [number, RawBuilder<unknown>][], col: string): RawBuilder<number> {
  const whens = values.map(([id, v]) => sql`WHEN ${id} THEN ${v}`);
  return sql<number>`CASE id ${sql.join(whens, sql` `)} ELSE ${sql.ref(col)} END`;
}
