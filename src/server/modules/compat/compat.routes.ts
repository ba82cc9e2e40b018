// Routes for the requests of the marketplace's official CLI that openrig does not serve: each
// answers 400 not_supported naming the command, with no authentication (nothing is read or
// changed), so the answer is the same whoever asks.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { registerRoutes, route } from '../../http/route.js';
import { notSupported } from '../../../contract/schemas/compat.js';
import { CompatErrors } from './compat.errors.js';
import { UNSUPPORTED_REQUESTS, notSupportedMsg } from './compat.unsupported.js';

/** One route per refused request, each answering its own message. */
export const compatRouteList = UNSUPPORTED_REQUESTS.map((u) => {
  const msg = notSupportedMsg(u);
  return route(notSupported(u, msg))({
    config: { auth: 'none' },
    handler: () => async () => {
      throw CompatErrors.notSupported(msg);
    },
  });
});

export async function compatRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, compatRouteList);
}
