// GET /api/v0/audit_logs/ (the caller's audit log, newest first: a bare array, as the official
// CLI's `show audit-logs` reads it) and GET /api/v0/users/me/ipaddrs (the addresses that used the
// account, `{results}`, as `show ipaddrs` reads it). Both: the `user` family, read; a caller sees
// only their own account's rows.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/audit.js';
import { listAuditLogs, listIpAddrs } from './audit.service.js';

export const auditLogs = route(C.auditLogs)({
  config: { scope: 'user' },
  handler: (deps) => async (req) => listAuditLogs(deps, requireAuth(req), req.query.limit),
});

export const ipAddrs = route(C.ipAddrs)({
  config: { scope: 'user' },
  handler: (deps) => async (req) => ({ success: true, results: await listIpAddrs(deps, requireAuth(req)) }),
});

export const auditRoutesList = [auditLogs, ipAddrs];

export async function auditRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, auditRoutesList);
}
