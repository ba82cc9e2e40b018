// Hosts' maintenance windows: schedule on up to 100 machines or one, cancel, list. The published
// API gives exact error texts and statuses (400 vs 422), so the server checks the bodies in code
// first, in a documented order (the routes' precheck); the schemas state the same rules, and the
// server enforces them too.
import { authErrors, errorSchema, idParams, maintenanceWindowSchema, ownerParam } from './common.js';

const tags = ['maintenance'] as const;

/** The categories of a window. */
export const MAINTENANCE_CATEGORIES = ['power', 'internet', 'disk', 'gpu', 'software', 'other'] as const;

const categoryDoc = {
  type: ['string', 'null'],
  enum: [...MAINTENANCE_CATEGORIES, 'not provided', null],
  description: 'power, internet, disk, gpu, software or other; absent, null or "not provided" means other',
} as const;
const windowFields = {
  sdate: {
    type: 'number',
    description:
      'Start, Unix timestamp (seconds); in the future and within 1 year. Missing, null or not a number: 422 invalid_sdate, as in the past or too far',
  },
  duration: {
    type: ['number', 'null'],
    exclusiveMinimum: 0,
    maximum: 8760,
    description: 'Hours; positive; minimum effective 1; default 1 (absent or null); at most 8760',
  },
  maintenance_category: categoryDoc,
} as const;

export const maintenanceEntrySchema = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    machine_id: { type: ['number', 'null'] },
    notifications_sent: { type: 'integer' },
    maintenance_id: { type: 'integer' },
    canceled: { type: 'integer' },
    error: { type: 'string' },
    msg: { type: 'string' },
  },
} as const;

export const maintenanceBatchReply = {
  type: 'object',
  properties: { success: { type: 'boolean' }, results: { type: 'array', items: maintenanceEntrySchema } },
} as const;
export const maintenanceBatchError = {
  type: 'object',
  required: ['error', 'msg'],
  properties: {
    success: { type: 'boolean' },
    error: { type: 'string' },
    msg: { type: 'string' },
    results: { type: 'array', items: maintenanceEntrySchema },
  },
} as const;

/** The machine ids of a batch. */
const machineIdsBody = {
  type: 'object',
  required: ['machine_ids'],
  properties: {
    machine_ids: {
      type: 'array',
      minItems: 1,
      maxItems: 100,
      contains: { type: 'integer', minimum: 1, maximum: 9007199254740991 },
      description:
        '1 to 100 machine IDs; at least one a positive integer. An entry that is not one, or repeats one, gets its own result (invalid_id, duplicate)',
    },
  },
} as const;

/** POST /machines/maintenances/batch: one window on up to 100 machines. */
export const scheduleBatchBody = {
  type: 'object',
  required: ['machine_ids', 'sdate'],
  properties: { ...machineIdsBody.properties, ...windowFields },
} as const;

export const scheduleBatch = {
  method: 'POST',
  url: '/api/v0/machines/maintenances/batch',
  schema: {
    tags,
    summary: 'Schedule one maintenance window on up to 100 machines; notifies clients and the host',
    body: scheduleBatchBody,
    response: { 200: maintenanceBatchReply, ...authErrors, 400: maintenanceBatchError, 422: errorSchema },
  },
} as const;

export const cancelBatch = {
  method: 'DELETE',
  url: '/api/v0/machines/maintenances/batch',
  schema: {
    tags,
    summary: 'Cancel the current and upcoming maintenance windows of up to 100 machines',
    body: machineIdsBody,
    response: { 200: maintenanceBatchReply, ...authErrors, 400: maintenanceBatchError },
  },
} as const;

export const listMaintenances = {
  method: 'GET',
  url: '/api/v0/machines/maintenances',
  schema: {
    tags,
    summary: "The caller's current and upcoming maintenance windows, as a bare JSON array",
    description:
      'The reply is the array of rows itself, not an object around it: existing clients iterate the reply directly.',
    querystring: {
      type: 'object',
      properties: {
        machine_ids: {
          type: 'string',
          pattern: '^\\s*(?:\\[[\\s\\S]*\\]|[0-9\\s,]*)\\s*$',
          description: 'JSON list, e.g. [1,2] (or 1,2)',
        },
        owner: ownerParam,
      },
    },
    response: { 200: { type: 'array', items: maintenanceWindowSchema }, ...authErrors },
  },
} as const;

export const scheduleOne = {
  method: 'PUT',
  url: '/api/v0/machines/:id/dnotify',
  schema: {
    tags,
    summary: 'Schedule a maintenance window on one machine; notifies its clients and the host',
    params: idParams,
    body: {
      type: 'object',
      required: ['sdate'],
      properties: { client_id: { description: 'ignored ("me")' }, ...windowFields },
    },
    response: {
      200: {
        type: 'object',
        properties: {
          success: { type: 'boolean' },
          notifications_sent: { type: 'integer' },
          maintenance_id: { type: 'integer' },
        },
      },
      ...authErrors,
      409: errorSchema,
      422: errorSchema,
    },
  },
} as const;

export const cancelMachine = {
  method: 'PUT',
  url: '/api/v0/machines/:id/cancel_maint',
  schema: {
    tags,
    summary: 'Cancel the current and upcoming maintenance windows of one machine',
    params: idParams,
    response: {
      200: { type: 'object', properties: { success: { type: 'boolean' }, canceled: { type: 'integer' } } },
      ...authErrors,
    },
  },
} as const;
