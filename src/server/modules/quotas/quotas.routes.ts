// Quotas and budgets (/api/v0/quotas, the billing family), subaccounts (GET /subaccounts, the
// user family) and credit transfers (PUT /commands/transfer_credit/, billing write).
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/quotas.js';
import * as S from './quotas.service.js';

export const getQuotas = route(C.getQuotas)({
  config: { scope: 'billing' },
  handler: (deps) => async (req) => S.getQuotas(deps, requireAuth(req), req.query.team_id),
});

export const setQuota = route(C.setQuota)({
  config: { scope: 'billing' },
  handler: (deps) => async (req) => S.setQuota(deps, requireAuth(req), req.body),
});

export const deleteQuota = route(C.deleteQuota)({
  config: { scope: 'billing' },
  handler: (deps) => async (req) => S.deleteQuota(deps, requireAuth(req), req.body ?? {}),
});

export const getKeyLimits = route(C.getKeyLimits)({
  config: { scope: 'billing' },
  handler: (deps) => async (req) => S.getKeyLimits(deps, requireAuth(req)),
});

export const setKeyLimit = route(C.setKeyLimit)({
  config: { scope: 'billing' },
  handler: (deps) => async (req) =>
    S.setKeyLimit(deps, requireAuth(req), req.params.id, req.body.month_budget),
});

export const listSubaccounts = route(C.listSubaccounts)({
  config: { scope: 'user' },
  handler: (deps) => async (req) => S.listSubaccounts(deps, requireAuth(req)),
});

export const transferCredit = route(C.transferCredit)({
  config: { scope: 'billing', access: 'write' },
  handler: (deps) => async (req) => S.transferCredit(deps, requireAuth(req), req.body),
});

export const quotaRoutes = [
  getQuotas,
  setQuota,
  deleteQuota,
  getKeyLimits,
  setKeyLimit,
  listSubaccounts,
  transferCredit,
];

export async function quotasRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, quotaRoutes);
}
