// 2FA tables. Types in db/tables/two-factor.ts. Forward-only.
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await d
    .withId(db.schema.createTable('tfa_methods'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('label', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('phone_number', 'text')
    .addColumn('totp_secret_enc', 'text')
    .addColumn('last_totp_step', 'bigint')
    .addColumn('is_primary', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('fail_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('locked_until', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used', 'bigint')
    .addColumn('deleted_at', 'bigint')
    .execute();
  await db.schema.createIndex('tfa_methods_user_idx').on('tfa_methods').column('user_id').execute();
  // duplicate_tfa_method is decided by the database: one active TOTP method per user, and one
  // active SMS method per number and user (several numbers are allowed: tfa_method_id).
  await db.schema
    .createIndex('tfa_methods_totp_uq')
    .unique()
    .on('tfa_methods')
    .column('user_id')
    .where(sql.ref('method'), '=', 'totp')
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();
  await db.schema
    .createIndex('tfa_methods_sms_uq')
    .unique()
    .on('tfa_methods')
    .columns(['user_id', 'phone_number'])
    .where(sql.ref('method'), '=', 'sms')
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();

  await d
    .withId(db.schema.createTable('tfa_challenges'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('method', 'text')
    .addColumn('tfa_method_id', 'bigint')
    .addColumn('phone_number', 'text')
    .addColumn('code_hmac', 'text')
    .addColumn('provider_ref', 'text')
    .addColumn('tries', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('sent_at', 'bigint')
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('consumed_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('tfa_challenges_secret_uq')
    .unique()
    .on('tfa_challenges')
    .column('secret_hash')
    .execute();
  await db.schema
    .createIndex('tfa_challenges_user_idx')
    .on('tfa_challenges')
    .columns(['user_id', 'created_at'])
    .execute();
  await db.schema
    .createIndex('tfa_challenges_expires_idx')
    .on('tfa_challenges')
    .column('expires_at')
    .execute();

  await d
    .withId(db.schema.createTable('tfa_backup_codes'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('code_hmac', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .addColumn('deleted_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('tfa_backup_codes_user_idx')
    .on('tfa_backup_codes')
    .columns(['user_id', 'code_hmac'])
    .execute();

  await db.schema
    .createTable('tfa_authorizations')
    .addColumn('user_id', 'bigint', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('authorized_until', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await d
    .withId(db.schema.createTable('auth_events'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('method', 'text')
    .addColumn('tfa_method_id', 'bigint')
    .addColumn('ip', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('auth_events_user_idx')
    .on('auth_events')
    .columns(['user_id', 'created_at'])
    .execute();

  await d
    .withId(db.schema.createTable('sms_sends'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('phone_number', 'text', (c) => c.notNull())
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('sms_sends_user_idx')
    .on('sms_sends')
    .columns(['user_id', 'created_at'])
    .execute();
  await db.schema
    .createIndex('sms_sends_phone_idx')
    .on('sms_sends')
    .columns(['phone_number', 'created_at'])
    .execute();
  await db.schema.createIndex('sms_sends_created_idx').on('sms_sends').column('created_at').execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
