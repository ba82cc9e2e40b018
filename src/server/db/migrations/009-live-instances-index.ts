// 002's instances_live_idx (destroyed_at, billed_until) matched every query's
// `destroyed_at IS NULL` as an equality, and SQLite, which has no statistics unless ANALYZE ran,
// chose it over the machine and user indexes: an agent sync's "live instances of these 10
// machines" walked all live instances (10,000 in the bench, about 2 ms per sync, 200 syncs a
// second). The meter's walk (live instances by billed_until) now has a partial index on
// billed_until alone, which serves only queries that imply `destroyed_at IS NULL` and has no
// column a machine or user lookup could use, so those keep their own indexes. Both dialects have
// partial indexes. Forward-only.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('instances_live_billing_idx')
    .on('instances')
    .column('billed_until')
    .where(sql.ref('destroyed_at'), 'is', null)
    .execute();
  await db.schema.dropIndex('instances_live_idx').execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
