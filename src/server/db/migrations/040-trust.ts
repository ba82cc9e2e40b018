// Earned reliability and renter reports (the trust module, docs/trust.md). Forward-only.
// - machine_uptime: per machine and UTC day, the milliseconds it was expected online (listed or
//   rented) and of those the ones it was online by its heartbeats, added by the uptime sampler.
//   The primary key makes each sample one upsert per machine.
// - uptime_sampler: one row, the time of the last sample; the sampler moves it with a conditional
//   UPDATE, so of several `serve` processes sampling at once one counts the interval.
// - machine_reliability: the parts of each machine's last computed reliability, for the host's
//   page; the number itself is stored on machines.reliability, which offer search reads.
// - machine_reports: renters' reports of a problem with a machine. The unique index on
//   (machine, reporter, day) keeps one report per renter per machine per UTC day, whatever
//   races.
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await db.schema
    .createTable('machine_uptime')
    .addColumn('machine_id', 'bigint', (c) => c.notNull().references('machines.id'))
    .addColumn('day', 'bigint', (c) => c.notNull())
    .addColumn('listed_ms', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('online_ms', 'bigint', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('machine_uptime_pk', ['machine_id', 'day'])
    .execute();
  await db.schema
    .createTable('uptime_sampler')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('sampled_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('machine_reliability')
    .addColumn('machine_id', 'bigint', (c) => c.primaryKey().references('machines.id'))
    .addColumn('listed_ms', 'bigint', (c) => c.notNull())
    .addColumn('online_ms', 'bigint', (c) => c.notNull())
    .addColumn('starts', 'integer', (c) => c.notNull())
    .addColumn('start_failures', 'integer', (c) => c.notNull())
    .addColumn('ended', 'integer', (c) => c.notNull())
    .addColumn('interrupted', 'integer', (c) => c.notNull())
    .addColumn('reporters', 'integer', (c) => c.notNull())
    .addColumn('score', 'double precision', (c) => c.notNull())
    .addColumn('computed_at', 'bigint', (c) => c.notNull())
    .execute();
  await d
    .withId(db.schema.createTable('machine_reports'))
    .addColumn('machine_id', 'bigint', (c) => c.notNull().references('machines.id'))
    .addColumn('host_id', 'bigint', (c) => c.notNull().references('users.id'))
    .addColumn('reporter_id', 'bigint', (c) => c.notNull().references('users.id'))
    .addColumn('problem', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    // UTC day (days since the epoch) of created_at: the unit of the one-report-a-day rule.
    .addColumn('day', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('machine_reports_daily_uq')
    .unique()
    .on('machine_reports')
    .columns(['machine_id', 'reporter_id', 'day'])
    .execute();
  await db.schema
    .createIndex('machine_reports_machine_idx')
    .on('machine_reports')
    .columns(['machine_id', 'created_at'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
