// audit: the account's history of important actions and the addresses that used it (the audit
// module), and job_turns, through which one `serve` process of all those sharing the database
// takes a periodic job's turn (jobs/turns.ts).
// - audit_logs: one row per state-changing request of an authenticated user, and per sign-in
//   attempt on an existing account; listed per user newest first, deleted by age.
// - user_ipaddrs: one row per (user, address), upserted through its unique index so that
//   concurrent writers never make two.
// Forward-only.
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await d
    .withId(db.schema.createTable('audit_logs'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('ip', 'text')
    .addColumn('api_key_id', 'bigint')
    .addColumn('credential', 'text', (c) => c.notNull())
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('route', 'text', (c) => c.notNull())
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('args', 'text', (c) => c.notNull())
    .execute();
  // The listing: one user's rows, newest first.
  await db.schema
    .createIndex('audit_logs_user_idx')
    .on('audit_logs')
    .columns(['user_id', 'created_at'])
    .execute();
  // Retention deletes by age across users.
  await db.schema.createIndex('audit_logs_created_idx').on('audit_logs').column('created_at').execute();

  await d
    .withId(db.schema.createTable('user_ipaddrs'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('ip', 'text', (c) => c.notNull())
    .addColumn('first_seen', 'bigint', (c) => c.notNull())
    .addColumn('last_seen', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('user_ipaddrs_user_ip_uq')
    .unique()
    .on('user_ipaddrs')
    .columns(['user_id', 'ip'])
    .execute();
  await db.schema.createIndex('user_ipaddrs_last_seen_idx').on('user_ipaddrs').column('last_seen').execute();

  await db.schema
    .createTable('job_turns')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('next_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
