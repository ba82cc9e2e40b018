// Trust (docs/trust.md): GET /api/v0/machines/{id}/reliability/ (the host's view of its parts),
// GET and POST /api/v0/machines/{id}/reports/ (the host's and operator's list, the official
// CLI's `reports ID`; a renter's report), GET /api/v0/trust/machines/ (the console's page).
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/trust.js';
import {
  createReport as create,
  hostTrust as host,
  listReports as list,
  machineReliability as rel,
} from './trust.service.js';

export const machineReliability = route(C.machineReliability)({
  config: { scope: 'machines' },
  handler: (deps) => async (req) => rel(deps, requireAuth(req), req.params.id),
});

export const listReports = route(C.listReports)({
  config: { scope: 'machines' },
  handler: (deps) => async (req) => list(deps, requireAuth(req), req.params.id),
});

/** A renter's report: the instances family (it is about a rental). */
export const createReport = route(C.createReport)({
  config: { scope: 'instances' },
  handler: (deps) => async (req) => ({
    success: true,
    report: await create(deps, requireAuth(req), req.params.id, req.body),
  }),
});

export const hostTrust = route(C.hostTrust)({
  config: { scope: 'machines' },
  handler: (deps) => async (req) => ({ machines: await host(deps, requireAuth(req).user.id) }),
});

export const trustRouteList = [machineReliability, listReports, createReport, hostTrust];

export async function trustRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, trustRouteList);
}
