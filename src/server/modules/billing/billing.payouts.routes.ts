// A host's own payouts (docs/payouts.md): GET /api/v0/payouts/ lists them with where the host is
// paid; PUT /api/v0/payouts/destination/ sets that (also set by PUT /users/ with paypal_email or
// wise_email). The `billing` family.
import { requireAuth } from '../../http/auth.js';
import { route } from '../../http/route.js';
import * as C from '../../../contract/schemas/payouts.js';
import { CommonErrors } from '../../errors.js';
import {
  listPayouts,
  payoutDestination,
  payoutDestinationProblem,
  writePayoutDestination,
} from './billing.payouts.js';

export const listMyPayouts = route(C.listMyPayouts)({
  config: { scope: 'billing' },
  handler: (deps) => async (req) => {
    const hostId = requireAuth(req).user.id;
    const payouts = await listPayouts(deps.db, { hostId, status: req.query.status });
    return { payouts: payouts.reverse(), destination: await payoutDestination(deps.db, hostId) };
  },
});

export const setMyPayoutDestination = route(C.setMyPayoutDestination)({
  config: { scope: 'billing' },
  handler: (deps) => async (req) => {
    const hostId = requireAuth(req).user.id;
    const { method, destination = '' } = req.body;
    if (method === 'none') await writePayoutDestination(deps.db, hostId, null, deps.clock.now());
    else {
      const problem = payoutDestinationProblem(method, destination);
      if (problem) throw CommonErrors.badRequest(problem);
      await writePayoutDestination(deps.db, hostId, { method: method, destination }, deps.clock.now());
    }
    return { success: true, destination: await payoutDestination(deps.db, hostId) };
  },
});

export const payoutRoutes = [listMyPayouts, setMyPayoutDestination];
