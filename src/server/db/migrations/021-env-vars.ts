// env_vars: an account's environment variables (the env-vars module, /api/v0/secrets/), one row
// per (user, name), decided by a unique index; values AES-256-GCM encrypted.
// instance_account_env: the copy of those variables an instance was created with, encrypted as
// one value, in a table of its own so that the instance reads (the poll, the lists) never read
// it. A destroyed instance's copy is deleted with it. Forward-only.
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await d
    .withId(db.schema.createTable('env_vars'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('value_enc', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('env_vars_user_name_uq')
    .unique()
    .on('env_vars')
    .columns(['user_id', 'name'])
    .execute();

  await db.schema
    .createTable('instance_account_env')
    .addColumn('instance_id', 'bigint', (c) => c.primaryKey().references('instances.id').onDelete('cascade'))
    .addColumn('env_enc', 'text', (c) => c.notNull())
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
