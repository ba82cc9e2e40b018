// Events, webhook endpoints and their delivery outbox. Forward-only.
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await d
    .withId(db.schema.createTable('events'))
    .addColumn('public_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'bigint', (c) => c.notNull())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('events_public_id_uq').unique().on('events').column('public_id').execute();
  // The feed reads a user's events in seq order; the unique index also refuses a reused number.
  await db.schema
    .createIndex('events_user_seq_uq')
    .unique()
    .on('events')
    .columns(['user_id', 'seq'])
    .execute();
  await db.schema.createIndex('events_created_idx').on('events').column('created_at').execute();

  await db.schema
    .createTable('event_counters')
    .addColumn('user_id', 'bigint', (c) => c.primaryKey())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .execute();

  // balance.low: the threshold a user sets; `armed` is 1 until the event fires, and set again
  // once the balance is back above the threshold.
  await db.schema
    .createTable('balance_alerts')
    .addColumn('user_id', 'bigint', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('threshold_micros', 'bigint', (c) => c.notNull())
    .addColumn('armed', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();

  await d
    .withId(db.schema.createTable('webhooks'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('secret_enc', 'text', (c) => c.notNull())
    .addColumn('old_secret_enc', 'text')
    .addColumn('old_secret_until', 'bigint')
    .addColumn('failing_since', 'bigint')
    .addColumn('disabled_reason', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('locked_by', 'text')
    .addColumn('locked_until', 'bigint')
    .execute();
  await db.schema.createIndex('webhooks_user_idx').on('webhooks').column('user_id').execute();

  await d
    .withId(db.schema.createTable('webhook_deliveries'))
    .addColumn('webhook_id', 'bigint', (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
    .addColumn('user_id', 'bigint', (c) => c.notNull())
    .addColumn('msg_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull().defaultTo('pending'))
    .addColumn('next_at', 'bigint', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_status', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('last_latency_ms', 'integer')
    .addColumn('last_attempt_at', 'bigint')
    .addColumn('delivered_at', 'bigint')
    .execute();
  // One delivery per event and endpoint: a repeated fan-out stores it once.
  await db.schema
    .createIndex('webhook_deliveries_msg_uq')
    .unique()
    .on('webhook_deliveries')
    .columns(['webhook_id', 'msg_id'])
    .execute();
  // The lane's query: an endpoint's pending deliveries, the oldest of each subject first.
  await db.schema
    .createIndex('webhook_deliveries_lane_idx')
    .on('webhook_deliveries')
    .columns(['webhook_id', 'state', 'subject', 'id'])
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_due_idx')
    .on('webhook_deliveries')
    .columns(['state', 'next_at'])
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_created_idx')
    .on('webhook_deliveries')
    .column('created_at')
    .execute();

  await d
    .withId(db.schema.createTable('webhook_attempts'))
    .addColumn('delivery_id', 'bigint', (c) =>
      c.notNull().references('webhook_deliveries.id').onDelete('cascade'),
    )
    .addColumn('webhook_id', 'bigint', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('latency_ms', 'integer', (c) => c.notNull())
    .addColumn('success', 'integer', (c) => c.notNull())
    .addColumn('error', 'text')
    .execute();
  await db.schema
    .createIndex('webhook_attempts_delivery_idx')
    .on('webhook_attempts')
    .columns(['delivery_id', 'id'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
