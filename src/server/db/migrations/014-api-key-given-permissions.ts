// An API key keeps its permissions as the caller gave them (openrig's own format or the
// marketplace's `{"api": {category: {}}}`), so listing a key shows what was asked for; the
// `permissions` column keeps the families that authentication enforces. Forward-only.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('permissions_given', 'text').execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
