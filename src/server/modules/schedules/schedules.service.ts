// Scheduled jobs (docs/scheduled-jobs.md): a request of the official CLI's schedulable commands
// that openrig serves (reboot instance, execute, change bid; each a PUT on one instance), stored
// with its cadence and sent for the account at each due time by the runner
// (schedules.runner.ts). One job per (account, method, endpoint), decided by a unique index: a
// second create answers 422 naming the first, as the CLI expects.
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import { isUniqueViolation } from '../../db/connection.js';
import { SCHEDULABLE_ENDPOINT_PATTERN } from '../../../contract/schemas/schedules.js';
import { ScheduleErrors } from './schedules.errors.js';
import { firstRun, type Frequency } from './schedules.times.js';
import * as repo from './schedules.repo.js';

const bad = ScheduleErrors.badRequest;
const ENDPOINT = new RegExp(SCHEDULABLE_ENDPOINT_PATTERN);
const SCHEDULABLE =
  'openrig schedules reboot instance (PUT /api/v0/instances/reboot/ID/), execute (PUT /api/v0/instances/command/ID/) and change bid (PUT /api/v0/instances/bid_price/ID/)';
/** How many runs GET …/runs shows, newest first. */
const RUNS_SHOWN = 100;

/** The job request as the schema lets it through. */
export interface JobInput {
  start_time: number;
  end_time: number;
  api_endpoint: string;
  request_method: string;
  request_body?: Record<string, unknown>;
  day_of_the_week?: number | null;
  hour_of_the_day?: number | null;
  frequency: Frequency;
  instance_id?: number | string | null;
}

/**
 * The first rule a job request breaks, in words, checked before the schema (which states the same
 * rules) so the refusal names the command: null when none.
 */
export function jobRequestProblem(body: unknown): string | null {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  const b = body as Record<string, unknown>;
  const endpoint = b.api_endpoint;
  if (typeof endpoint === 'string' && !ENDPOINT.test(endpoint)) {
    if (/^\/api\/v0\/commands\/rclone\/?$/.test(endpoint))
      return `cloud copy cannot be scheduled: openrig has no cloud copy. ${SCHEDULABLE}`;
    return `${endpoint.slice(0, 100)} cannot be scheduled: ${SCHEDULABLE}`;
  }
  if (typeof b.request_method === 'string' && b.request_method !== 'PUT')
    return `request_method must be PUT: ${SCHEDULABLE}`;
  const day = b.day_of_the_week ?? null;
  const hour = b.hour_of_the_day ?? null;
  switch (b.frequency) {
    case 'HOURLY':
      if (day !== null || hour !== null)
        return 'For HOURLY jobs, day_of_the_week and hour_of_the_day must both be null ("*").';
      break;
    case 'DAILY':
      if (day !== null || hour === null)
        return 'For DAILY jobs, day_of_the_week must be null ("*") and hour_of_the_day an hour, 0-23.';
      break;
    case 'WEEKLY':
      if (day === null || hour === null)
        return 'For WEEKLY jobs, day_of_the_week must be a day, 0-6, and hour_of_the_day an hour, 0-23.';
      break;
    default:
      break;
  }
  return null;
}

/** The request a job sends: its endpoint with a trailing slash, its instance and its body. */
function target(input: JobInput): { endpoint: string; instanceId: number; body: Record<string, unknown> } {
  const problem = jobRequestProblem(input);
  if (problem) throw bad(problem);
  const endpoint = input.api_endpoint.endsWith('/') ? input.api_endpoint : `${input.api_endpoint}/`;
  const [, kind, id] = /^\/api\/v0\/instances\/([a-z_]+)\/(\d+)\/$/.exec(endpoint)!;
  const instanceId = Number(id);
  const given = input.instance_id ?? null;
  if (given !== null && String(given) !== String(instanceId))
    throw bad(
      `instance_id ${String(given).slice(0, 20)} is not the instance of api_endpoint (${instanceId})`,
    );
  const b = input.request_body ?? {};
  switch (kind) {
    case 'reboot':
      return { endpoint, instanceId, body: {} };
    case 'command': {
      const command = b.command;
      if (typeof command !== 'string' || command.length === 0 || command.length > 1000)
        throw bad('execute: request_body.command must be the command to run, 1 to 1000 characters');
      return { endpoint, instanceId, body: { command } };
    }
    default: {
      const price = b.price ?? null;
      if (price !== null && (typeof price !== 'number' || !Number.isFinite(price) || price < 0))
        throw bad('change bid: request_body.price must be a price in $/hour, or null');
      return { endpoint, instanceId, body: { client_id: 'me', price } };
    }
  }
}

/** The row values of a job request, made by `auth` at `now`. */
function jobValues(deps: Deps, auth: AuthContext, input: JobInput) {
  const t = target(input);
  const start = Math.round(input.start_time * 1000);
  const end = Math.round(input.end_time * 1000);
  if (end <= start) throw bad('end_time must be later than start_time');
  const now = deps.clock.now();
  const cadence = {
    frequency: input.frequency,
    day_of_the_week: input.day_of_the_week ?? null,
    hour_of_the_day: input.hour_of_the_day ?? null,
  };
  // The first due time from now on: a window that began earlier starts with the next one.
  const next = firstRun(cadence, Math.max(start, now), end);
  if (next === null)
    throw bad('No due time of this frequency falls between now (or start_time) and end_time');
  return {
    user_id: auth.user.id,
    // The credential the runs act with: the key, or the session (a 2FA or browser login).
    api_key_id: auth.via === 'api_key' ? auth.keyId : null,
    session_id: auth.via === 'api_key' ? null : auth.sessionId,
    instance_id: t.instanceId,
    api_endpoint: t.endpoint,
    request_method: 'PUT',
    request_body: JSON.stringify(t.body),
    ...cadence,
    start_at: start,
    end_at: end,
    next_run_at: next,
    stopped: null,
    updated_at: now,
  };
}

async function existing(deps: Deps, userId: number, endpoint: string): Promise<never> {
  const id = await repo.jobFor(deps.db, userId, 'PUT', endpoint);
  throw ScheduleErrors.exists(
    `A scheduled job for ${endpoint} already exists (id ${id}): change it with PUT /api/v0/commands/schedule_job/${id}/`,
    { scheduled_job_id: id },
  );
}

export async function createJob(deps: Deps, auth: AuthContext, input: JobInput): Promise<number> {
  const v = jobValues(deps, auth, input);
  try {
    return await repo.insertJob(deps.db, { ...v, created_at: v.updated_at });
  } catch (err) {
    if (isUniqueViolation(err)) return existing(deps, auth.user.id, v.api_endpoint);
    throw err;
  }
}

/** Replaces the caller's job `id` (its runs so far stay); it starts anew if it had stopped. */
export async function updateJob(deps: Deps, auth: AuthContext, id: number, input: JobInput): Promise<void> {
  const v = jobValues(deps, auth, input);
  let found: boolean;
  try {
    found = await repo.updateJob(deps.db, auth.user.id, id, v);
  } catch (err) {
    if (isUniqueViolation(err)) return existing(deps, auth.user.id, v.api_endpoint);
    throw err;
  }
  if (!found) throw ScheduleErrors.notFound(`You have no scheduled job ${id}`);
}

export async function deleteJob(deps: Deps, auth: AuthContext, id: number): Promise<void> {
  if (!(await repo.deleteJob(deps.db, auth.user.id, id)))
    throw ScheduleErrors.notFound(`You have no scheduled job ${id}`);
}

const seconds = (ms: number | null) => (ms === null ? null : ms / 1000);

function runView(r: repo.RunRow) {
  return {
    id: r.id,
    due_time: r.due_at / 1000,
    started_at: r.started_at / 1000,
    finished_at: seconds(r.finished_at),
    status_code: r.status_code,
    ok: r.finished_at === null ? null : r.status_code !== null && r.status_code >= 200 && r.status_code < 300,
    result: r.result,
  };
}

export async function listJobs(deps: Deps, auth: AuthContext) {
  const jobs = await repo.jobsOf(deps.db, auth.user.id);
  const last = new Map(
    (
      await repo.lastRuns(
        deps.db,
        jobs.map((j) => j.id),
      )
    ).map((r) => [r.job_id, r]),
  );
  return jobs.map((j) => {
    const run = last.get(j.id);
    return {
      id: j.id,
      instance_id: j.instance_id,
      api_endpoint: j.api_endpoint,
      request_method: j.request_method,
      request_body: JSON.parse(j.request_body) as Record<string, unknown>,
      start_time: j.start_at / 1000,
      end_time: j.end_at / 1000,
      day_of_the_week: j.day_of_the_week,
      hour_of_the_day: j.hour_of_the_day,
      min_of_the_hour: 0,
      frequency: j.frequency,
      next_run_time: seconds(j.next_run_at),
      stopped: j.stopped,
      last_run: run ? runView(run) : null,
    };
  });
}

export async function listRuns(deps: Deps, auth: AuthContext, id: number) {
  if (!(await repo.jobOf(deps.db, auth.user.id, id)))
    throw ScheduleErrors.notFound(`You have no scheduled job ${id}`);
  return (await repo.runsOf(deps.db, id, RUNS_SHOWN)).map(runView);
}
