import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

// Maintenance windows. Forward-only.
export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await d
    .withId(db.schema.createTable('maintenance_windows'))
    .addColumn('machine_id', 'bigint', (c) => c.notNull().references('machines.id'))
    .addColumn('host_id', 'bigint', (c) => c.notNull().references('users.id'))
    .addColumn('batch_id', 'text', (c) => c.notNull())
    .addColumn('start_time', 'bigint', (c) => c.notNull())
    .addColumn('end_time', 'bigint', (c) => c.notNull())
    .addColumn('duration_hours', 'double precision', (c) => c.notNull())
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('notifications_sent', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('canceled_at', 'bigint')
    .execute();
  // Lookups by machine (overlap check, instance and offer views) and by host (listing).
  await db.schema
    .createIndex('maintenance_windows_machine_idx')
    .on('maintenance_windows')
    .columns(['machine_id', 'end_time'])
    .execute();
  await db.schema
    .createIndex('maintenance_windows_host_idx')
    .on('maintenance_windows')
    .columns(['host_id', 'start_time'])
    .execute();
  // One window per machine per scheduling call: the database refuses a second (duplicate IDs).
  await db.schema
    .createIndex('maintenance_windows_batch_machine_uq')
    .unique()
    .on('maintenance_windows')
    .columns(['batch_id', 'machine_id'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
