// Hosts' maintenance windows: schedule on up to 100 machines or one, cancel, list. Bodies get
// permissive schemas: the published API gives exact error texts and statuses (400 vs 422), so the
// server checks them in code, in a documented order; the schemas document the fields.
import { authErrors, errorSchema, idParams, maintenanceWindowSchema, ownerParam } from './common.js';

const tags = ['maintenance'] as const;

const categoryDoc = {
  description: 'power, internet, disk, gpu, software or other; absent, null or "not provided" means other',
} as const;
const windowFields = {
  sdate: { description: 'Start, Unix timestamp (seconds); in the future and within 1 year' },
  duration: { description: 'Hours; positive; minimum effective 1; default 1; at most 8760' },
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
const machineIdsBody = { properties: { machine_ids: { description: '1 to 100 machine IDs' } } } as const;

export const scheduleBatch = {
  method: 'POST',
  url: '/api/v0/machines/maintenances/batch',
  schema: {
    tags,
    summary: 'Schedule one maintenance window on up to 100 machines; notifies clients and the host',
    body: { properties: { ...machineIdsBody.properties, ...windowFields } },
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
        machine_ids: { type: 'string', description: 'JSON list, e.g. [1,2]' },
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
    body: { properties: { client_id: { description: 'ignored ("me")' }, ...windowFields } },
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
