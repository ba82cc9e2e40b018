// Offers (issue 3 point 2): POST /api/v0/bundles/ (search) and GET /api/v0/gpu_names/unique/.
// The search body is validated by the filter compiler, not by the schema: its messages name the
// exact field, operator or value at fault (client-compat: never silently dropped).
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.js';
import { authErrors, errorSchema } from '../../http/schemas.js';
import { OFFER_FIELDS, type FieldType } from './offers.fields.js';
import { gpuNames, searchPage, type Offer } from './offers.service.js';
import type { OfferRow } from './offers.fields.js';
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
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

// The search reply's JSON (issue 9: search p99). Serialising 64 offers of 45 fields was a third of
// a search's CPU, mostly numbers to text. An offer's fields that depend on its row alone (not on
// the time, the plan's type or storage: offers.fields.ts usesNow/usesPlan) are serialised once
// per index row and kept; the rest each time. Both halves come from the offer schema above through
// fast-json-stringify, as Fastify's own serializer does, so the text is what it would write (in
// another key order). Rows are immutable: a changed machine is a new row, so a kept piece is never
// stale; at most FRAGMENTS are kept (about 1 KB each).
const FRAGMENTS = 4096;
const ROW_FIELDS = new Set(Object.entries(OFFER_FIELDS).filter(([, d]) => !d.usesNow && !d.usesPlan).map(([k]) => k));
type Serialize = (o: unknown) => string;
let serializers: { row: Serialize; rest: Serialize } | null = null;
const fragments = new Map<OfferRow, string>();

function offerSerializers(): { row: Serialize; rest: Serialize } {
  if (!serializers) {
    const compile = (SerializerSelector as unknown as () => (e: unknown, o: unknown) => (r: { schema: object; method: string; url: string; httpStatus: string }) => Serialize)()({}, {});
    const part = (keep: (k: string) => boolean): Serialize =>
      compile({ schema: { type: 'object', properties: Object.fromEntries(Object.entries(offerSchema.properties).filter(([k]) => keep(k))) }, method: 'POST', url: '/api/v0/bundles', httpStatus: '200' });
    serializers = { row: part((k) => ROW_FIELDS.has(k)), rest: part((k) => !ROW_FIELDS.has(k)) };
  }
  return serializers;
}

/** `{"offers":[…]}` for a search page; `rows[i]` is the index row of `offers[i]` (null: from SQL). */
export function searchReplyJson(offers: readonly Offer[], rows: readonly OfferRow[] | null): string {
  const ser = offerSerializers();
  let out = '{"offers":[';
  for (let i = 0; i < offers.length; i++) {
    const o = offers[i]!;
    const row = rows?.[i];
    let head = row ? fragments.get(row) : undefined;
    if (head === undefined) {
      head = ser.row(o).slice(0, -1); // '{"id":…,…' without its closing brace
      if (row) {
        if (fragments.size >= FRAGMENTS) fragments.clear();
        fragments.set(row, head);
      }
    }
    const rest = ser.rest(o); // '{"dph_total":…,…}': never empty (is_bid is always there)
    out += (i === 0 ? '' : ',') + head + ',' + rest.slice(1);
  }
  return out + ']}';
}

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
    async (req, reply) => {
      const page = await searchPage(deps, req.body);
      return reply.type('application/json; charset=utf-8').send(searchReplyJson(page.offers, page.rows));
    },
  );
  // Older clients: GET /bundles?q=<JSON filter>.
  app.get(
    '/api/v0/bundles',
    {
      config: { scope: 'offers' },
      schema: { tags: ['offers'], summary: 'Search offers (older clients: ?q=JSON)', querystring: { type: 'object', properties: { q: { type: 'string' } } }, response: searchReply },
    },
    async (req, reply) => {
      const q = (req.query as { q?: string }).q;
      let body: unknown = {};
      if (q) {
        try {
          body = JSON.parse(q);
        } catch {
          throw CommonErrors.badRequest('q must be a JSON filter object');
        }
      }
      const page = await searchPage(deps, body);
      return reply.type('application/json; charset=utf-8').send(searchReplyJson(page.offers, page.rows));
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
