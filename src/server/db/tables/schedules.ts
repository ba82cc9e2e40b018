// Table types of the schedules module (migration 037). Times are epoch ms.
import type { Generated } from 'kysely';

/** One scheduled request of one account: (user_id, request_method, api_endpoint) is unique. */
export interface ScheduledJobsTable {
  id: Generated<number>;
  user_id: number;
  /** The API key that made (or last changed) the job; null when a session did. */
  api_key_id: number | null;
  /** The session that made (or last changed) the job; null when an API key did. */
  session_id: number | null;
  instance_id: number | null;
  /** The path to send, with its trailing slash (/api/v0/instances/reboot/7/). */
  api_endpoint: string;
  request_method: string;
  /** JSON of the body to send. */
  request_body: string;
  frequency: 'HOURLY' | 'DAILY' | 'WEEKLY';
  day_of_the_week: number | null;
  hour_of_the_day: number | null;
  start_at: number;
  end_at: number;
  /** The next due time; null once the job has ended or was stopped. Claimed by a conditional UPDATE. */
  next_run_at: number | null;
  /** Why the job was stopped (its credential revoked, a permission removed); null while it runs. */
  stopped: string | null;
  created_at: number;
  updated_at: number;
}

/** One run of a job, for one due time: (job_id, due_at) is unique. */
export interface ScheduledJobRunsTable {
  id: Generated<number>;
  job_id: number;
  due_at: number;
  /** SHA-256 of the run's one-time credential; null once the run finished. */
  token_hash: string | null;
  /** Which server process ran it (host:pid). */
  runner: string;
  started_at: number;
  finished_at: number | null;
  status_code: number | null;
  result: string | null;
}

export interface ScheduleTables {
  scheduled_jobs: ScheduledJobsTable;
  scheduled_job_runs: ScheduledJobRunsTable;
}
