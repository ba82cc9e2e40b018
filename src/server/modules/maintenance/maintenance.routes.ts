// Maintenance routes (docs/maintenance.md). Bodies are checked by maintenance.validate.ts first (its
// texts and statuses are the published ones), then by their schemas
// (src/contract/schemas/maintenance.ts), which state the same rules.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/maintenance.js';
import {
  cancelBatch as cancelAll,
  cancelMachine as cancelOne,
  listMaintenances as list,
  scheduleMaintenance,
  scheduleOne as schedule,
} from './maintenance.service.js';
import {
  parseBatchRequest,
  parseMachineIds,
  parseMachineIdsQuery,
  parseWindow,
} from './maintenance.validate.js';

/** The ids of a batch body (a body that is not an object has none). */
const idsOf = (body: unknown) =>
  body !== null && typeof body === 'object' && !Array.isArray(body)
    ? (body as { machine_ids?: unknown }).machine_ids
    : undefined;

export const scheduleBatch = route(C.scheduleBatch)({
  config: { scope: 'maintenance' },
  precheck: (deps) => (req) => void parseBatchRequest(req.body, deps.clock.now()),
  handler: (deps) => async (req) => {
    const host = requireAuth(req).user;
    const { entries, window } = parseBatchRequest(req.body, deps.clock.now());
    const { results } = await scheduleMaintenance(deps, host, entries, window);
    return { success: true, results };
  },
});

export const cancelBatch = route(C.cancelBatch)({
  config: { scope: 'maintenance' },
  precheck: () => (req) => void parseMachineIds(idsOf(req.body)),
  handler: (deps) => async (req) => {
    const host = requireAuth(req).user;
    const entries = parseMachineIds(idsOf(req.body));
    return { success: true, results: await cancelAll(deps, host, entries) };
  },
});

export const listMaintenances = route(C.listMaintenances)({
  config: { scope: 'maintenance' },
  handler: (deps) => async (req) => {
    const host = requireAuth(req).user;
    return list(deps, host, parseMachineIdsQuery(req.query.machine_ids));
  },
});

export const scheduleOne = route(C.scheduleOne)({
  config: { scope: 'maintenance' },
  precheck: (deps) => (req) => void parseWindow(req.body, deps.clock.now()),
  handler: (deps) => async (req) => {
    const host = requireAuth(req).user;
    const window = parseWindow(req.body, deps.clock.now());
    const r = await schedule(deps, host, req.params.id, window);
    return { success: true, ...r };
  },
});

export const cancelMachine = route(C.cancelMachine)({
  config: { scope: 'maintenance' },
  handler: (deps) => async (req) => {
    const host = requireAuth(req).user;
    return { success: true, canceled: await cancelOne(deps, host, req.params.id) };
  },
});

export const maintenanceRoutesList = [
  scheduleBatch,
  cancelBatch,
  listMaintenances,
  scheduleOne,
  cancelMachine,
];

export async function maintenanceRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, maintenanceRoutesList);
}
