// Maintenance routes (docs/maintenance.md).
// Bodies get permissive schemas: the published API gives exact error texts and statuses (400 vs 422), so
// maintenance.validate checks them in code, in a documented order.
import { maintenanceWindowSchema } from '../../http/schemas.js';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { authErrors, errorSchema, idParams, type IdParams } from '../../http/schemas.js';
import {
  cancelBatch,
  cancelMachine,
  listMaintenances,
  scheduleMaintenance,
  scheduleOne,
} from './maintenance.service.js';
import {
  parseBatchRequest,
  parseMachineIds,
  parseMachineIdsQuery,
  parseWindow,
} from './maintenance.validate.js';

const categoryDoc = {
  description: 'power, internet, disk, gpu, software or other; absent, null or "not provided" means other',
};
const windowFields = {
  sdate: { description: 'Start, Unix timestamp (seconds); in the future and within 1 year' },
  duration: { description: 'Hours; positive; minimum effective 1; default 1; at most 8760' },
  maintenance_category: categoryDoc,
};

const entrySchema = {
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

const batchReply = {
  type: 'object',
  properties: { success: { type: 'boolean' }, results: { type: 'array', items: entrySchema } },
} as const;
const batchError = {
  type: 'object',
  required: ['error', 'msg'],
  properties: {
    success: { type: 'boolean' },
    error: { type: 'string' },
    msg: { type: 'string' },
    results: { type: 'array', items: entrySchema },
  },
} as const;

/**
 * The machine ids of a batch. Bodies here are read by the maintenance validator
 * (maintenance.validate.ts), whose error codes clients know: the schema documents the fields and
 * leaves their checking to it.
 */
interface MachineIdsBody {
  machine_ids?: unknown;
}
const machineIdsBody = { properties: { machine_ids: { description: '1 to 100 machine IDs' } } } as const;

export async function maintenanceRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.post(
    '/api/v0/machines/maintenances/batch',
    {
      config: { scope: 'maintenance' },
      schema: {
        tags: ['maintenance'],
        summary: 'Schedule one maintenance window on up to 100 machines; notifies clients and the host',
        body: { properties: { ...machineIdsBody.properties, ...windowFields } },
        response: { 200: batchReply, ...authErrors, 400: batchError, 422: errorSchema },
      },
    },
    async (req) => {
      const host = requireAuth(req).user;
      const { entries, window } = parseBatchRequest(req.body, deps.clock.now());
      const { results } = await scheduleMaintenance(deps, host, entries, window);
      return { success: true, results };
    },
  );

  app.delete<{ Body: MachineIdsBody | undefined }>(
    '/api/v0/machines/maintenances/batch',
    {
      config: { scope: 'maintenance' },
      schema: {
        tags: ['maintenance'],
        summary: 'Cancel the current and upcoming maintenance windows of up to 100 machines',
        body: machineIdsBody,
        response: { 200: batchReply, ...authErrors, 400: batchError },
      },
    },
    async (req) => {
      const host = requireAuth(req).user;
      const body = req.body;
      const entries = parseMachineIds(
        body && typeof body === 'object' && !Array.isArray(body) ? body.machine_ids : undefined,
      );
      return { success: true, results: await cancelBatch(deps, host, entries) };
    },
  );

  app.get<{ Querystring: { machine_ids?: string; owner?: string } }>(
    '/api/v0/machines/maintenances',
    {
      config: { scope: 'maintenance' },
      schema: {
        tags: ['maintenance'],
        summary: "The caller's current and upcoming maintenance windows, as a bare JSON array",
        description:
          'The reply is the array of rows itself, not an object around it: existing clients iterate the reply directly.',
        querystring: {
          type: 'object',
          properties: {
            machine_ids: { type: 'string', description: 'JSON list, e.g. [1,2]' },
            owner: { type: 'string' },
          },
        },
        response: {
          200: { type: 'array', items: maintenanceWindowSchema },
          ...authErrors,
        },
      },
    },
    async (req) => {
      const host = requireAuth(req).user;
      const ids = parseMachineIdsQuery(req.query.machine_ids);
      return listMaintenances(deps, host, ids);
    },
  );

  app.put<{ Params: IdParams }>(
    '/api/v0/machines/:id/dnotify',
    {
      config: { scope: 'maintenance' },
      schema: {
        tags: ['maintenance'],
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
    },
    async (req) => {
      const host = requireAuth(req).user;
      const window = parseWindow(req.body, deps.clock.now());
      const r = await scheduleOne(deps, host, req.params.id, window);
      return { success: true, ...r };
    },
  );

  app.put<{ Params: IdParams }>(
    '/api/v0/machines/:id/cancel_maint',
    {
      config: { scope: 'maintenance' },
      schema: {
        tags: ['maintenance'],
        summary: 'Cancel the current and upcoming maintenance windows of one machine',
        params: idParams,
        response: {
          200: {
            type: 'object',
            properties: { success: { type: 'boolean' }, canceled: { type: 'integer' } },
          },
          ...authErrors,
        },
      },
    },
    async (req) => {
      const host = requireAuth(req).user;
      return { success: true, canceled: await cancelMachine(deps, host, req.params.id) };
    },
  );
}
