// usage_samples: what an instance's agent measured of it over its life (the usage-history module),
// for the console's charts. One row per instance and bucket: `span_s` 60 for the last day (one
// point a minute, the first report of the minute), 3600 after that (the minutes of each hour
// rolled into one: mean GPU utilisation, highest GPU memory and disk), by the usage-history job.
// The primary key is also the reader's index (one instance, oldest first) and makes a second
// writer of the same minute (another `serve` process) a no-op. Forward-only.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('usage_samples')
    .addColumn('instance_id', 'bigint', (c) => c.notNull().references('instances.id').onDelete('cascade'))
    .addColumn('span_s', 'integer', (c) => c.notNull())
    .addColumn('t', 'bigint', (c) => c.notNull())
    .addColumn('gpu_util', 'double precision')
    .addColumn('gpu_mem_bytes', 'bigint')
    .addColumn('disk_usage_bytes', 'bigint')
    .addPrimaryKeyConstraint('usage_samples_pk', ['instance_id', 'span_s', 't'])
    .execute();
  // The job's roll-up and pruning: the minute rows (or hour rows) older than a time, across instances.
  await db.schema
    .createIndex('usage_samples_span_t_idx')
    .on('usage_samples')
    .columns(['span_s', 't'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
