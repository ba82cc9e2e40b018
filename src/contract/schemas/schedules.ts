// Scheduled jobs (docs/scheduled-jobs.md): the official CLI's `--schedule HOURLY|DAILY|WEEKLY` forms
// (reboot instance, execute, change bid) store the request they would have sent, and the server
// sends it for the account at each due time. Show with GET, change with PUT, delete with DELETE.
import { authErrors, errorSchema, idParams, rowId, successSchema } from './common.js';

const tags = ['schedules'] as const;

/**
 * The requests a job may send: the CLI's schedulable commands that openrig serves, each a PUT on
 * one instance (reboot instance, execute, change bid).
 */
export const SCHEDULABLE_ENDPOINT_PATTERN =
  '^/api/v0/instances/(?:reboot|command|bid_price)/[1-9][0-9]{0,15}/?$';

export const FREQUENCIES = ['HOURLY', 'DAILY', 'WEEKLY'] as const;

const epochSeconds = <const E extends number>(description: string, example: E) =>
  ({ type: 'number', minimum: 0, maximum: 253402300799, description, example }) as const;

const dayOfWeek = {
  type: ['integer', 'null'],
  minimum: 0,
  maximum: 6,
  description: 'WEEKLY: the day, 0 (Sunday) to 6; HOURLY and DAILY: null',
} as const;
const hourOfDay = {
  type: ['integer', 'null'],
  minimum: 0,
  maximum: 23,
  description: 'DAILY and WEEKLY: the hour (UTC), 0 to 23; HOURLY: null',
} as const;

export const scheduleJobBody = {
  type: 'object',
  required: ['start_time', 'end_time', 'api_endpoint', 'request_method', 'frequency'],
  properties: {
    start_time: epochSeconds(
      'the first run is at the first due time from here (epoch seconds, UTC)',
      1767225600,
    ),
    end_time: epochSeconds('no run after this (epoch seconds, UTC); later than start_time', 4102444800),
    api_endpoint: {
      type: 'string',
      maxLength: 64,
      pattern: SCHEDULABLE_ENDPOINT_PATTERN,
      description:
        'the request to send: /api/v0/instances/reboot/ID/ (reboot instance), /api/v0/instances/command/ID/ (execute) or /api/v0/instances/bid_price/ID/ (change bid), e.g. /api/v0/instances/reboot/1/',
    },
    request_method: { type: 'string', enum: ['PUT'], description: 'the method of api_endpoint' },
    request_body: {
      type: 'object',
      description:
        "the body to send: execute's {command}, change bid's {client_id, price}, reboot's {}; an instance_id field is the CLI's and is not sent",
    },
    day_of_the_week: dayOfWeek,
    hour_of_the_day: hourOfDay,
    frequency: { type: 'string', enum: FREQUENCIES },
    instance_id: {
      type: ['integer', 'string', 'null'],
      description: "the instance of api_endpoint (the CLI's)",
    },
  },
  // The CLI's own rule of which of day and hour each frequency takes.
  allOf: [
    {
      if: { properties: { frequency: { enum: ['HOURLY'] } } },
      then: { properties: { day_of_the_week: { type: 'null' }, hour_of_the_day: { type: 'null' } } },
    },
    {
      if: { properties: { frequency: { enum: ['DAILY'] } } },
      then: {
        required: ['hour_of_the_day'],
        properties: { day_of_the_week: { type: 'null' }, hour_of_the_day: { type: 'integer' } },
      },
    },
    {
      if: { properties: { frequency: { enum: ['WEEKLY'] } } },
      then: {
        required: ['day_of_the_week', 'hour_of_the_day'],
        properties: { day_of_the_week: { type: 'integer' }, hour_of_the_day: { type: 'integer' } },
      },
    },
  ],
  additionalProperties: true,
} as const;

const runSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    due_time: { type: 'number', description: 'the due time this run was for (epoch seconds)' },
    started_at: { type: 'number', description: 'epoch seconds' },
    finished_at: { type: ['number', 'null'], description: 'epoch seconds; null while running' },
    status_code: { type: ['integer', 'null'], description: "the request's HTTP status" },
    ok: { type: ['boolean', 'null'], description: 'the request answered 2xx; null while running' },
    result: { type: ['string', 'null'], description: 'the reply, as text (its first 2000 characters)' },
  },
} as const;

export const scheduledJobSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    instance_id: { type: ['integer', 'null'] },
    api_endpoint: { type: 'string' },
    request_method: { type: 'string' },
    request_body: { type: 'object', additionalProperties: true },
    start_time: { type: 'number', description: 'epoch seconds' },
    end_time: { type: 'number', description: 'epoch seconds' },
    day_of_the_week: { type: ['integer', 'null'] },
    hour_of_the_day: { type: ['integer', 'null'] },
    min_of_the_hour: { type: 'integer', description: 'always 0: a job runs on the hour' },
    frequency: { type: 'string', enum: FREQUENCIES },
    next_run_time: {
      type: ['number', 'null'],
      description: 'epoch seconds; null once the job has ended (past end_time, or stopped)',
    },
    stopped: {
      type: ['string', 'null'],
      description: 'why the job no longer runs: its key or session was revoked, or it lost the permission',
    },
    last_run: { anyOf: [runSchema, { type: 'null' }] },
  },
} as const;

const jobErrors = { ...authErrors, 422: errorSchema } as const;

export const listScheduledJobs = {
  method: 'GET',
  url: '/api/v0/commands/schedule_job',
  schema: {
    tags,
    summary: "Your scheduled jobs (the official CLI's show scheduled-jobs)",
    response: { 200: { type: 'array', items: scheduledJobSchema }, ...authErrors },
  },
} as const;

export const createScheduledJob = {
  method: 'POST',
  url: '/api/v0/commands/schedule_job',
  schema: {
    tags,
    summary:
      'Schedule a request to run hourly, daily or weekly as you (a --schedule form of the official CLI)',
    description:
      'One job per request (method and endpoint) and account: a second answers 422 with scheduled_job_id, which PUT /commands/schedule_job/{id}/ changes. Each due time runs once, on one server, with the permissions the key or session that made it has then.',
    body: scheduleJobBody,
    response: {
      200: {
        type: 'object',
        properties: {
          success: { type: 'boolean' },
          msg: { type: 'string' },
          scheduled_job_id: { type: 'integer' },
        },
      },
      ...authErrors,
      422: {
        type: 'object',
        required: ['error', 'msg', 'scheduled_job_id'],
        properties: {
          error: { type: 'string' },
          msg: { type: 'string' },
          scheduled_job_id: { type: 'integer' },
        },
      },
    },
  },
} as const;

export const updateScheduledJob = {
  method: 'PUT',
  url: '/api/v0/commands/schedule_job/:id',
  schema: {
    tags,
    summary: 'Replace a scheduled job (the CLI sends the body it tried to create)',
    params: idParams,
    body: scheduleJobBody,
    response: {
      200: {
        type: 'object',
        properties: {
          success: { type: 'boolean' },
          msg: { type: 'string' },
          scheduled_job_id: { type: 'integer' },
        },
      },
      ...jobErrors,
    },
  },
} as const;

export const deleteScheduledJob = {
  method: 'DELETE',
  url: '/api/v0/commands/schedule_job/:id',
  schema: {
    tags,
    summary: "Delete a scheduled job (the official CLI's delete scheduled-job)",
    params: idParams,
    response: { 200: successSchema, ...authErrors },
  },
} as const;

export const listScheduledJobRuns = {
  method: 'GET',
  url: '/api/v0/commands/schedule_job/:id/runs',
  schema: {
    tags,
    summary: "A scheduled job's runs, newest first (at most 100)",
    params: { type: 'object', required: ['id'], properties: { id: rowId } },
    response: {
      200: {
        type: 'object',
        properties: { success: { type: 'boolean' }, runs: { type: 'array', items: runSchema } },
      },
      ...authErrors,
    },
  },
} as const;
