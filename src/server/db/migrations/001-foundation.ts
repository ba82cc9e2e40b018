import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await d
    .withId(db.schema.createTable('users'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('full_name', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('password_hash', 'text')
    .addColumn('email_verified_at', 'bigint')
    .addColumn('tfa_status', 'text', (c) => c.notNull().defaultTo('disabled'))
    .addColumn('phone_number', 'text')
    .addColumn('is_admin', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('sms_fraud', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('balance_micros', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('users_email_uq').unique().on('users').column('email').execute();

  await d
    .withId(db.schema.createTable('teams'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('teams_name_uq').unique().on('teams').column('name').execute();

  await db.schema
    .createTable('team_members')
    .addColumn('team_id', 'bigint', (c) => c.notNull().references('teams.id').onDelete('cascade'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('role', 'text', (c) => c.notNull().defaultTo('member'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('team_members_pk', ['team_id', 'user_id'])
    .execute();

  await d
    .withId(db.schema.createTable('api_keys'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('team_id', 'bigint', (c) => c.references('teams.id'))
    .addColumn('kind', 'text', (c) => c.notNull().defaultTo('user'))
    .addColumn('instance_id', 'bigint')
    .addColumn('name', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('key_hash', 'text', (c) => c.notNull())
    .addColumn('key_prefix', 'text', (c) => c.notNull())
    .addColumn('permissions', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .execute();
  // Authentication looks a key up by its hash: a unique index, never a scan.
  await db.schema.createIndex('api_keys_hash_uq').unique().on('api_keys').column('key_hash').execute();
  await db.schema.createIndex('api_keys_user_idx').on('api_keys').column('user_id').execute();

  await d
    .withId(db.schema.createTable('sessions'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('team_id', 'bigint')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull())
    .addColumn('is_admin', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.createIndex('sessions_hash_uq').unique().on('sessions').column('token_hash').execute();

  await d
    .withId(db.schema.createTable('ssh_keys'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('key_type', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('comment', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('deleted_at', 'bigint')
    .execute();
  await db.schema.createIndex('ssh_keys_user_idx').on('ssh_keys').column('user_id').execute();

  await d
    .withId(db.schema.createTable('email_outbox'))
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('to_addr', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('text_body', 'text', (c) => c.notNull())
    .addColumn('html_body', 'text')
    .addColumn('category', 'text', (c) => c.notNull().defaultTo('other'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('available_at', 'bigint', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('locked_by', 'text')
    .addColumn('locked_until', 'bigint')
    .addColumn('sent_at', 'bigint')
    .addColumn('failed_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('email_outbox_key_uq')
    .unique()
    .on('email_outbox')
    .column('idempotency_key')
    .execute();
  await db.schema
    .createIndex('email_outbox_due_idx')
    .on('email_outbox')
    .columns(['sent_at', 'failed_at', 'available_at'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
