// Trust: a machine's earned reliability with its parts, renters' reports of problems with a
// machine (the official CLI's `reports ID` reads them), and the host's trust page (docs/trust.md).
import { REPORT_PROBLEMS } from '../benchmarks.js';
import { authErrors, errorSchema, idParams, ownerParam } from './common.js';

const tags = ['trust'] as const;

const factors = {
  type: 'object',
  description: 'the formula factors (docs/trust.md): reliability = uptime × starts × endings × reports',
  properties: {
    uptime: { type: 'number' },
    starts: { type: 'number' },
    endings: { type: 'number' },
    reports: { type: 'number' },
  },
} as const;

const recordFields = {
  listed_hours: {
    type: 'number',
    description: 'hours it was expected online (listed or rented) in the window',
  },
  online_hours: { type: 'number', description: 'of those, hours its heartbeats said online' },
  starts: { type: 'integer', description: 'instances created in the window that ran or failed to start' },
  start_failures: { type: 'integer', description: 'of those, the ones that exited before ever running' },
  ended: { type: 'integer', description: 'instances destroyed in the window after running' },
  interrupted: {
    type: 'integer',
    description: 'of those, the ones destroyed while the machine was offline or unknown',
  },
  reporters: { type: 'integer', description: 'distinct renters who reported a problem in the window' },
} as const;

export const machineReliability = {
  method: 'GET',
  url: '/api/v0/machines/:id/reliability',
  schema: {
    tags,
    summary: "A machine's reliability with the parts it is computed from (its host and the operator)",
    params: idParams,
    querystring: { type: 'object', properties: { owner: ownerParam } },
    response: {
      200: {
        type: 'object',
        properties: {
          machine_id: { type: 'integer' },
          reliability: { type: 'number', description: 'the number offers show and search filters on (0..1)' },
          judged: {
            type: 'boolean',
            description:
              'false for a machine no agent ever ran: it keeps the reliability the operator gave it',
          },
          computed_at: { type: ['number', 'null'], description: 'unix seconds of the last computation' },
          window_days: { type: 'integer' },
          ...recordFields,
          factors,
          formula: { type: 'string' },
        },
      },
      ...authErrors,
    },
  },
} as const;

const reportSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    machine_id: { type: 'integer' },
    problem: { type: 'string' },
    message: { type: 'string' },
    created_at: { type: 'number', description: 'unix seconds' },
    reporter_id: { type: 'integer', description: 'the renter who reported (the operator only)' },
  },
} as const;

export const listReports = {
  method: 'GET',
  url: '/api/v0/machines/:id/reports',
  schema: {
    tags,
    summary: "Renters' reports of problems with a machine, newest first (its host and the operator only)",
    params: idParams,
    querystring: { type: 'object', properties: { owner: ownerParam } },
    // The official CLI sends {"machine_id": ID} as a JSON body on this GET; it is not read.
    response: { 200: { type: 'array', items: reportSchema }, ...authErrors },
  },
} as const;

export const createReport = {
  method: 'POST',
  url: '/api/v0/machines/:id/reports',
  schema: {
    tags,
    summary:
      'Report a problem with a machine you rented (an instance on it, live or destroyed in the last 30 days); one report per machine per UTC day',
    params: idParams,
    body: {
      type: 'object',
      required: ['problem'],
      properties: {
        problem: {
          type: 'string',
          enum: REPORT_PROBLEMS,
          description: 'offline, start_failed, slow, gpu, network, disk or other',
        },
        message: { type: 'string', description: 'what happened, plain text, at most 1000 characters' },
      },
    },
    response: {
      200: { type: 'object', properties: { success: { type: 'boolean' }, report: reportSchema } },
      ...authErrors,
      409: errorSchema,
    },
  },
} as const;

export const hostTrust = {
  method: 'GET',
  url: '/api/v0/trust/machines',
  schema: {
    tags,
    summary:
      "The caller's machines with their reliability parts and report counts (the console's trust page)",
    response: {
      200: {
        type: 'object',
        properties: {
          machines: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                machine_id: { type: 'integer' },
                hostname: { type: 'string' },
                gpu_name: { type: 'string' },
                num_gpus: { type: 'integer' },
                reliability: { type: 'number' },
                online_state: { type: 'string' },
                judged: { type: 'boolean' },
                computed_at: { type: ['number', 'null'] },
                ...recordFields,
                reports: { type: 'integer', description: 'reports ever made about it' },
                factors,
              },
            },
          },
        },
      },
      ...authErrors,
    },
  },
} as const;
