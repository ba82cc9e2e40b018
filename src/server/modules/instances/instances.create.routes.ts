// Renting an offer: PUT or POST /api/v0/asks/:id creates an instance (instances.create.ts).
import { requireAuth } from '../../http/auth.js';
import { route } from '../../http/route.js';
import * as C from '../../../contract/schemas/instances.js';
import { createInstance as create } from './instances.create.js';

export const createInstance = route(C.createInstance)({
  config: { scope: 'instances', errorsCarrySuccess: true },
  handler: (deps) => async (req) =>
    create(deps, requireAuth(req), req.params.id, req.body, req.headers['idempotency-key']),
});
