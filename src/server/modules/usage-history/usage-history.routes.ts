// An instance's usage history (openrig's own): GET /api/v0/instances/{id}/usage-history/, for the
// console's charts. The `instances` family, read.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/usage-history.js';
import { usageHistory as historyOf } from './usage-history.service.js';

export const usageHistory = route(C.usageHistory)({
  config: { scope: 'instances' },
  handler: (deps) => async (req) => ({
    success: true,
    ...(await historyOf(deps, requireAuth(req), req.params.id)),
  }),
});

export const usageHistoryRouteList = [usageHistory];

export async function usageHistoryRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, usageHistoryRouteList);
}
