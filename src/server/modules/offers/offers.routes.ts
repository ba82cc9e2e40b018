// Offers: POST /api/v0/bundles/ (search) and GET /api/v0/gpu_names/unique/.
// The search body is validated by the filter compiler, not by the schema: its messages name the
// exact field, operator or value at fault; nothing is silently dropped (docs/api.md, "Search filters").
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/offers.js';
import { gpuNames } from './offers.service.js';
import { searchReplyJson } from './offers.reply.js';
import { CommonErrors } from '../../errors.js';
import { jsonTooDeep, tooDeep } from '../../http/json-limits.js';

const json = 'application/json; charset=utf-8';

export const searchOffers = route(C.searchOffers)({
  config: { scope: 'offers', access: 'read' },
  handler: (deps) => async (req, reply) => reply.type(json).send(await searchReplyJson(deps, req.body)),
});

/** Older clients: GET /bundles?q=<JSON filter>. */
export const searchOffersGet = route(C.searchOffersGet)({
  config: { scope: 'offers' },
  handler: (deps) => async (req, reply) => {
    const q = req.query.q;
    let body: unknown = {};
    if (q) {
      if (jsonTooDeep(q)) throw tooDeep();
      try {
        body = JSON.parse(q);
      } catch {
        throw CommonErrors.badRequest('q must be a JSON filter object');
      }
    }
    return reply.type(json).send(await searchReplyJson(deps, body));
  },
});

export const gpuNamesRoute = route(C.gpuNames)({
  // Answered without any credential: existing clients call it before they read their key.
  // Limited per client address with the search family.
  config: { auth: 'none' },
  handler: (deps) => async () => ({ gpu_names: await gpuNames(deps) }),
});

export const offerRoutes = [searchOffers, searchOffersGet, gpuNamesRoute];

export async function marketRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, offerRoutes);
}
