// A session remembers the credential that made it: the API key of a CLI 2FA login (null for a
// password login or a cookie login) and that key's permissions (null: full). Authentication gives
// the session exactly those permissions, and a session whose key is revoked is refused.
// Forward-only.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sessions').addColumn('api_key_id', 'bigint').execute();
  await db.schema.alterTable('sessions').addColumn('permissions', 'text').execute();
  await db.schema.createIndex('sessions_api_key_idx').on('sessions').column('api_key_id').execute();
  await db.schema.createIndex('sessions_user_idx').on('sessions').column('user_id').execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
