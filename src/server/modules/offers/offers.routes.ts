// Offers (issue 3 point 2): POST /api/v0/bundles/ (search) and GET /api/v0/gpu_names/unique/.
// The search body is validated by the filter compiler, not by the schema: its messages name the
// exact field, operator or value at fault (client-compat: never silently dropped).
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.js';
import { authErrors, errorSchema } from '../../http/schemas.js';
import { OFFER_FIELDS, type FieldType } from './offers.fields.js';
import { gpuNames, searchOffers } from './offers.service.js';
import { CommonErrors } from '../../errors.js';
import { maintenanceWindowSchema } from '../machines/machines.routes.js';

const JSON_TYPE: Record<FieldType, string> = { int: 'integer', float: 'number', bool: 'boolean', string: 'string' };

export const offerSchema = {
  type: 'object',
  properties: {
    ...Object.fromEntries(
      Object.entries(OFFER_FIELDS).map(([k, d]) => [k, { type: d.type === 'float' || d.type === 'int' ? [JSON_TYPE[d.type], 'null'] : JSON_TYPE[d.type], description: `${d.doc}${d.unit ? ` (${d.unit})` : ''}` }]),
    ),
    ask_contract_id: { type: 'integer' },
    is_bid: { type: 'boolean' },
    search_type: { type: 'string' },
    allocated_storage: { type: 'number' },
    maintenances: { type: 'array', items: maintenanceWindowSchema, description: 'current and upcoming maintenance windows of the machine (empty when none)' },
  },
} as const;

const searchReply = { 200: { type: 'object', properties: { offers: { type: 'array', items: offerSchema } } }, ...authErrors } as const;

export async function marketRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.post(
    '/api/v0/bundles',
    {
      config: { scope: 'offers', access: 'read' },
      schema: {
        tags: ['offers'],
        summary: 'Search offers',
        description: 'Flat filter object: each field as {op: value} (eq neq gt gte lt lte in notin), plus order, type, limit, allocated_storage. See docs/market.md.',
        body: { type: 'object', additionalProperties: true },
        response: searchReply,
      },
    },
    async (req) => searchOffers(deps, req.body),
  );
  // Older clients: GET /bundles?q=<JSON filter>.
  app.get(
    '/api/v0/bundles',
    {
      config: { scope: 'offers' },
      schema: { tags: ['offers'], summary: 'Search offers (older clients: ?q=JSON)', querystring: { type: 'object', properties: { q: { type: 'string' } } }, response: searchReply },
    },
    async (req) => {
      const q = (req.query as { q?: string }).q;
      let body: unknown = {};
      if (q) {
        try {
          body = JSON.parse(q);
        } catch {
          throw CommonErrors.badRequest('q must be a JSON filter object');
        }
      }
      return searchOffers(deps, body);
    },
  );
  app.get(
    '/api/v0/gpu_names/unique',
    {
      config: { scope: 'offers' },
      schema: { tags: ['offers'], summary: 'Distinct GPU names currently offered', response: { 200: { type: 'object', properties: { gpu_names: { type: 'array', items: { type: 'string' } } } }, 401: errorSchema, 403: errorSchema } },
    },
    async () => ({ gpu_names: await gpuNames(deps) }),
  );
}
