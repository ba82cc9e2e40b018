// Single sign-on (OpenID Connect). `sso_states`: each started sign-in, found by the SHA-256 of its
// `state` (the value itself is only in the browser's cookie and the provider's redirect), spent
// by a conditional UPDATE of `used_at`, so a state works once and only before `expires_at`,
// whichever server process the provider sends the browser back to. `sso_identities`: which
// account a provider's subject signs in to (unique per provider and subject). Forward-only.
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await d
    .withId(db.schema.createTable('sso_states'))
    .addColumn('state_hash', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema.createIndex('sso_states_hash_uq').unique().on('sso_states').column('state_hash').execute();
  await db.schema.createIndex('sso_states_expires').on('sso_states').column('expires_at').execute();
  await db.schema
    .createTable('sso_identities')
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_login_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('sso_identities_pk', ['provider', 'subject'])
    .execute();
  await db.schema.createIndex('sso_identities_user').on('sso_identities').column('user_id').execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
