// Every SQL statement of the schedules module. A job is claimed for a due time by a conditional
// UPDATE (next_run_at moved on WHERE it still holds the due time read): of the server processes
// that see the job due at once exactly one updates the row, and only it inserts the run, whose
// (job_id, due_at) is unique besides. A run's one-time credential is found by its hash.
import type { Insertable, Kysely, Selectable } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { ScheduledJobRunsTable, ScheduledJobsTable } from '../../db/tables/schedules.js';

export type JobRow = Selectable<ScheduledJobsTable>;
export type RunRow = Selectable<ScheduledJobRunsTable>;

export async function insertJob(db: Kysely<DB>, values: Insertable<ScheduledJobsTable>): Promise<number> {
  const r = await db.insertInto('scheduled_jobs').values(values).returning('id').executeTakeFirstOrThrow();
  return Number(r.id);
}

/** The account's job for a method and endpoint, if any. */
export async function jobFor(
  db: Kysely<DB>,
  userId: number,
  method: string,
  endpoint: string,
): Promise<number | undefined> {
  const r = await db
    .selectFrom('scheduled_jobs')
    .select('id')
    .where('user_id', '=', userId)
    .where('request_method', '=', method)
    .where('api_endpoint', '=', endpoint)
    .executeTakeFirst();
  return r ? Number(r.id) : undefined;
}

/** Replaces the account's job `id`; false when it has none of that id. */
export async function updateJob(
  db: Kysely<DB>,
  userId: number,
  id: number,
  values: Partial<Insertable<ScheduledJobsTable>>,
): Promise<boolean> {
  const r = await db
    .updateTable('scheduled_jobs')
    .set(values)
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function deleteJob(db: Kysely<DB>, userId: number, id: number): Promise<boolean> {
  const r = await db
    .deleteFrom('scheduled_jobs')
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export function jobsOf(db: Kysely<DB>, userId: number): Promise<JobRow[]> {
  return db.selectFrom('scheduled_jobs').selectAll().where('user_id', '=', userId).orderBy('id').execute();
}

export async function jobOf(db: Kysely<DB>, userId: number, id: number): Promise<JobRow | undefined> {
  return db
    .selectFrom('scheduled_jobs')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

/** The latest run of each of the jobs. */
export async function lastRuns(db: Kysely<DB>, jobIds: number[]): Promise<RunRow[]> {
  if (jobIds.length === 0) return [];
  return db
    .selectFrom('scheduled_job_runs as r')
    .selectAll('r')
    .where('r.job_id', 'in', jobIds)
    .where('r.id', 'in', (eb) =>
      eb
        .selectFrom('scheduled_job_runs as l')
        .select((e) => e.fn.max('l.id').as('id'))
        .groupBy('l.job_id'),
    )
    .execute();
}

export function runsOf(db: Kysely<DB>, jobId: number, limit: number): Promise<RunRow[]> {
  return db
    .selectFrom('scheduled_job_runs')
    .selectAll()
    .where('job_id', '=', jobId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** Jobs due at `now` (next_run_at reached), oldest due first. */
export function dueJobs(db: Kysely<DB>, now: number, limit: number): Promise<JobRow[]> {
  return db
    .selectFrom('scheduled_jobs')
    .selectAll()
    .where('next_run_at', 'is not', null)
    .where('next_run_at', '<=', now)
    .orderBy('next_run_at')
    .limit(limit)
    .execute();
}

/** Moves the job's next_run_at from `due` to `next`; false when another process already did. */
export async function claimDue(
  db: Kysely<DB>,
  id: number,
  due: number,
  next: number | null,
): Promise<boolean> {
  const r = await db
    .updateTable('scheduled_jobs')
    .set({ next_run_at: next })
    .where('id', '=', id)
    .where('next_run_at', '=', due)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function insertRun(db: Kysely<DB>, values: Insertable<ScheduledJobRunsTable>): Promise<number> {
  const r = await db
    .insertInto('scheduled_job_runs')
    .values(values)
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(r.id);
}

export async function finishRun(
  db: Kysely<DB>,
  id: number,
  values: { finished_at: number; status_code: number | null; result: string },
): Promise<void> {
  await db
    .updateTable('scheduled_job_runs')
    .set({ ...values, token_hash: null })
    .where('id', '=', id)
    .execute();
}

/** Stops a job: it is not due again (a PUT of the job starts it anew). */
export async function stopJob(db: Kysely<DB>, id: number, why: string, now: number): Promise<void> {
  await db
    .updateTable('scheduled_jobs')
    .set({ next_run_at: null, stopped: why, updated_at: now })
    .where('id', '=', id)
    .execute();
}

/**
 * A running run's credential by its hash: the job's user, and the key or session that made the
 * job as they are now (their revocation, expiry and permissions).
 */
export function runCredential(db: Kysely<DB>, tokenHash: string) {
  return db
    .selectFrom('scheduled_job_runs as r')
    .innerJoin('scheduled_jobs as j', 'j.id', 'r.job_id')
    .innerJoin('users as u', 'u.id', 'j.user_id')
    .leftJoin('api_keys as k', 'k.id', 'j.api_key_id')
    .leftJoin('sessions as s', 's.id', 'j.session_id')
    .leftJoin('api_keys as sk', 'sk.id', 's.api_key_id')
    .selectAll('u')
    .select([
      'r.finished_at as r_finished',
      'j.api_key_id as j_key',
      'j.session_id as j_session',
      'k.id as k_id',
      'k.kind as k_kind',
      'k.team_id as k_team',
      'k.permissions as k_perms',
      'k.revoked_at as k_revoked',
      's.id as s_id',
      's.team_id as s_team',
      's.expires_at as s_expires',
      's.revoked_at as s_revoked',
      's.api_key_id as s_key',
      's.permissions as s_perms',
      'sk.revoked_at as sk_revoked',
    ])
    .where('r.token_hash', '=', tokenHash)
    .executeTakeFirst();
}
