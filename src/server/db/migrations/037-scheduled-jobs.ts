// scheduled_jobs: an account's scheduled requests (the schedules module, /commands/schedule_job/),
// one per (user, method, endpoint), decided by a unique index; the key or session that made the
// job is kept so each run acts with that credential's permissions at run time.
// scheduled_job_runs: one row per due time that ran, (job_id, due_at) unique, with its result.
// Forward-only.
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await d
    .withId(db.schema.createTable('scheduled_jobs'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('api_key_id', 'bigint')
    .addColumn('session_id', 'bigint')
    .addColumn('instance_id', 'bigint')
    .addColumn('api_endpoint', 'text', (c) => c.notNull())
    .addColumn('request_method', 'text', (c) => c.notNull())
    .addColumn('request_body', 'text', (c) => c.notNull())
    .addColumn('frequency', 'text', (c) => c.notNull())
    .addColumn('day_of_the_week', 'integer')
    .addColumn('hour_of_the_day', 'integer')
    .addColumn('start_at', 'bigint', (c) => c.notNull())
    .addColumn('end_at', 'bigint', (c) => c.notNull())
    .addColumn('next_run_at', 'bigint')
    .addColumn('stopped', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('scheduled_jobs_user_request_uq')
    .unique()
    .on('scheduled_jobs')
    .columns(['user_id', 'request_method', 'api_endpoint'])
    .execute();
  await db.schema.createIndex('scheduled_jobs_next_run').on('scheduled_jobs').column('next_run_at').execute();

  await d
    .withId(db.schema.createTable('scheduled_job_runs'))
    .addColumn('job_id', 'bigint', (c) => c.notNull().references('scheduled_jobs.id').onDelete('cascade'))
    .addColumn('due_at', 'bigint', (c) => c.notNull())
    .addColumn('token_hash', 'text')
    .addColumn('runner', 'text', (c) => c.notNull())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('finished_at', 'bigint')
    .addColumn('status_code', 'integer')
    .addColumn('result', 'text')
    .execute();
  await db.schema
    .createIndex('scheduled_job_runs_due_uq')
    .unique()
    .on('scheduled_job_runs')
    .columns(['job_id', 'due_at'])
    .execute();
  await db.schema
    .createIndex('scheduled_job_runs_token')
    .unique()
    .on('scheduled_job_runs')
    .column('token_hash')
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
