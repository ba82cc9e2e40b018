// Offers: POST /api/v0/bundles/ (search) and GET /api/v0/gpu_names/unique/.
// The search body is validated by the filter compiler, not by the schema: its messages name the
// exact field, operator or value at fault; nothing is silently dropped (docs/api.md, "Search filters").
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { authErrors } from '../../http/schemas.js';
import { gpuNames } from './offers.service.js';
import { offerSchema, searchReplyJson } from './offers.reply.js';
import { CommonErrors } from '../../errors.js';
import { jsonTooDeep, tooDeep } from '../../http/json-limits.js';

const searchReply = {
  200: { type: 'object', properties: { offers: { type: 'array', items: offerSchema } } },
  ...authErrors,
} as const;

export async function marketRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.post(
    '/api/v0/bundles',
    {
      config: { scope: 'offers', access: 'read' },
      schema: {
        tags: ['offers'],
        summary: 'Search offers',
        description:
          'Flat filter object: each field as {op: value} (eq neq gt gte lt lte in notin), plus order, type, limit, allocated_storage. See docs/market.md.',
        body: { type: 'object', additionalProperties: true },
        response: searchReply,
      },
    },
    async (req, reply) => {
      return reply.type('application/json; charset=utf-8').send(await searchReplyJson(deps, req.body));
    },
  );
  // Older clients: GET /bundles?q=<JSON filter>.
  app.get<{ Querystring: { q?: string } }>(
    '/api/v0/bundles',
    {
      config: { scope: 'offers' },
      schema: {
        tags: ['offers'],
        summary: 'Search offers (older clients: ?q=JSON)',
        querystring: { type: 'object', properties: { q: { type: 'string' } } },
        response: searchReply,
      },
    },
    async (req, reply) => {
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
      return reply.type('application/json; charset=utf-8').send(await searchReplyJson(deps, body));
    },
  );
  app.get(
    '/api/v0/gpu_names/unique',
    {
      // Answered without any credential: existing clients call it before they read their key.
      // Limited per client address with the search family.
      config: { auth: 'none' },
      schema: {
        tags: ['offers'],
        summary: 'Distinct GPU names currently offered (no authentication; limited per IP)',
        response: {
          200: { type: 'object', properties: { gpu_names: { type: 'array', items: { type: 'string' } } } },
        },
      },
    },
    async () => ({ gpu_names: await gpuNames(deps) }),
  );
}
