// SSH keys attached to one instance only. A key attached with POST /instances/{id}/ssh/ that is
// not one of the account's keys is stored with that instance's id: it opens that instance and no
// other, and never appears in the account's key list (/api/v0/ssh/). Null: an account key.
// Forward-only.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('ssh_keys').addColumn('instance_id', 'bigint').execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
