// Prepaid (reserved) instances, the official CLI's `prepay instance ID AMOUNT` and `show deposit ID`:
// PUT /api/v0/instances/prepay/{id}/ {amount} → {success, timescale, discount_rate, …}
// GET /api/v0/instances/balance/{id}/        → {success, refundable_deposit, total_discount, discount_months, …}
import { requireAuth } from '../../http/auth.js';
import { route } from '../../http/route.js';
import * as C from '../../../contract/schemas/billing.js';
import { prepayInstance as prepay, showDeposit } from './billing.deposits.js';

export const prepayInstance = route(C.prepayInstance)({
  config: { scope: 'billing', errorsCarrySuccess: true },
  handler: (deps) => async (req) => prepay(deps, requireAuth(req), req.params.id, req.body.amount),
});

export const instanceDeposit = route(C.instanceDeposit)({
  config: { scope: 'billing', errorsCarrySuccess: true },
  handler: (deps) => async (req) => showDeposit(deps.db, requireAuth(req), req.params.id),
});

export const depositRoutes = [prepayInstance, instanceDeposit];
