// Balance and charges.
// GET /api/v0/billing/          → balance, and each live instance's accrued cost and rates
// GET /api/v0/billing/charges/  → the ledger, newest first (?limit, ?before_id for the next page)
// GET /api/v0/users/me/machine-earnings?sday&eday[&machid] → a host's earnings per machine and day
// and the billing history in the official CLI's formats (billing.invoices.routes.ts), and prepaid
// instances' deposits (billing.deposits.routes.ts), and a host's payouts (billing.payouts.routes.ts).
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/billing.js';
import { billingSummary as summary, chargesPage, machineEarnings as earnings } from './billing.service.js';
import { invoiceRoutes } from './billing.invoices.routes.js';
import { currentEarnings } from './billing.payouts.js';
import { depositRoutes } from './billing.deposits.routes.js';
import { payoutRoutes } from './billing.payouts.routes.js';

export const billingSummary = route(C.billingSummary)({
  config: { scope: 'billing' },
  handler: (deps) => async (req) => summary(deps.db, requireAuth(req).user.id),
});

export const ledgerCharges = route(C.ledgerCharges)({
  config: { scope: 'billing' },
  handler: (deps) => async (req) => chargesPage(deps.db, requireAuth(req).user.id, req.query),
});

export const machineEarnings = route(C.machineEarnings)({
  config: { scope: 'billing' },
  handler: (deps) => async (req) => {
    const user = requireAuth(req).user;
    const now = deps.clock.now();
    const report = await earnings(deps.db, user.id, req.query, now);
    const fee = deps.config.billing.platformFeePercent;
    return {
      ...report,
      current: await currentEarnings(deps.db, user.id, now, fee, Number(user.balance_micros)),
    };
  },
});

export const billingRoutesList = [
  billingSummary,
  ledgerCharges,
  machineEarnings,
  ...invoiceRoutes,
  ...depositRoutes,
  ...payoutRoutes,
];

export async function billingRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, billingRoutesList);
}
