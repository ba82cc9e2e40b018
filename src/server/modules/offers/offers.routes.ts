// Offers: POST /api/v0/bundles/ (search) and GET /api/v0/gpu_names/unique/.
// The search body is validated by the filter compiler, not by the schema: its messages name the
// exact field, operator or value at fault; nothing is silently dropped (docs/api.md, "Search filters").
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.js';
import { authErrors } from '../../http/schemas.js';
import { OFFER_FIELDS, type FieldType } from './offers.fields.js';
import { gpuNames, offerBuilder, offerOf, searchPage, type Offer } from './offers.service.js';
import type { JsContext, OfferRow } from './offers.fields.js';
import type { SearchPlan } from './offers.filter.js';
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import { CommonErrors } from '../../errors.js';
import { jsonTooDeep, tooDeep } from '../../http/json-limits.js';
import { maintenanceWindowSchema } from '../../http/schemas.js';

const JSON_TYPE: Record<FieldType, string> = {
  int: 'integer',
  float: 'number',
  bool: 'boolean',
  string: 'string',
};

export const offerSchema = {
  type: 'object',
  properties: {
    ...Object.fromEntries(
      Object.entries(OFFER_FIELDS).map(([k, d]) => [
        k,
        {
          type: d.type === 'float' || d.type === 'int' ? [JSON_TYPE[d.type], 'null'] : JSON_TYPE[d.type],
          description: `${d.doc}${d.unit ? ` (${d.unit})` : ''}`,
        },
      ]),
    ),
    ask_contract_id: { type: 'integer' },
    is_bid: { type: 'boolean' },
    search_type: { type: 'string' },
    allocated_storage: { type: 'number' },
    maintenances: {
      type: 'array',
      items: maintenanceWindowSchema,
      description: 'current and upcoming maintenance windows of the machine (empty when none)',
    },
  },
} as const;

const searchReply = {
  200: { type: 'object', properties: { offers: { type: 'array', items: offerSchema } } },
  ...authErrors,
} as const;

// The search reply's JSON, written in parts and kept because serialising offers was a large share
// of a search's CPU (bench/RESULTS.md). An offer's fields are written in three parts, each by
// fast-json-stringify from its share of the offer schema above (as Fastify's own serializer would
// write them, in another key order):
// - the fields that depend on the machine alone (offers.fields.ts: neither usesNow nor usesPlan),
//   written once per index row and kept;
// - those that depend on the plan's type and storage (usesPlan), kept per row for the last type
//   and storage asked;
// - those that move with the time (usesNow) and the maintenance windows, written each time.
// Rows are immutable (a changed machine is a new row), so a kept part is never stale; parts are
// kept for at most FRAGMENTS rows (about 1.5 KB each).
const FRAGMENTS = 4096;
const fieldNames = (keep: (d: (typeof OFFER_FIELDS)[string]) => boolean) =>
  Object.entries(OFFER_FIELDS)
    .filter(([, d]) => keep(d))
    .map(([k]) => k);
const ROW_PART = [...fieldNames((d) => !d.usesNow && !d.usesPlan), 'ask_contract_id'];
const PLAN_PART = [
  ...fieldNames((d) => !d.usesNow && !!d.usesPlan),
  'is_bid',
  'search_type',
  'allocated_storage',
];
const NOW_PART = fieldNames((d) => !!d.usesNow);
const nowOf = offerBuilder(NOW_PART, false);

type Serialize = (o: unknown) => string;
interface Serializers {
  row: Serialize;
  plan: Serialize;
  now: Serialize;
  windows: Serialize;
}
let serializers: Serializers | null = null;

function offerSerializers(): Serializers {
  if (!serializers) {
    const compile = (
      SerializerSelector as unknown as () => (
        e: unknown,
        o: unknown,
      ) => (r: { schema: object; method: string; url: string; httpStatus: string }) => Serialize
    )()({}, {});
    const of = (schema: object): Serialize =>
      compile({ schema, method: 'POST', url: '/api/v0/bundles', httpStatus: '200' });
    const part = (names: readonly string[]): Serialize => {
      const props = offerSchema.properties as Record<string, object>;
      const ser = of({ type: 'object', properties: Object.fromEntries(names.map((n) => [n, props[n]!])) });
      return (o) => ser(o).slice(1, -1); // the members alone: '"a":1,"b":2'
    };
    serializers = {
      row: part(ROW_PART),
      plan: part(PLAN_PART),
      now: part(NOW_PART),
      windows: of(offerSchema.properties.maintenances),
    };
  }
  return serializers;
}

interface KeptParts {
  row: string;
  planKey: string;
  plan: string;
}
const kept = new Map<OfferRow, KeptParts>();

/** An offer's members but its maintenance windows, from its index row (parts kept per row). */
function rowMembers(r: OfferRow, ctx: JsContext, plan: SearchPlan): string {
  const ser = offerSerializers();
  const planKey = `${plan.type}|${plan.storage}`;
  let k = kept.get(r);
  if (k === undefined || k.planKey !== planKey) {
    const o = offerOf(r, ctx, plan);
    if (k === undefined) {
      if (kept.size >= FRAGMENTS) kept.clear();
      k = { row: ser.row(o), planKey, plan: ser.plan(o) };
      kept.set(r, k);
    } else {
      k.planKey = planKey;
      k.plan = ser.plan(o);
    }
  }
  return `${k.row},${k.plan},${ser.now(nowOf(r, ctx, plan))}`;
}

/** The same members from an offer SQL answered (nothing kept). */
function offerMembers(o: Offer): string {
  const ser = offerSerializers();
  return `${ser.row(o)},${ser.plan(o)},${ser.now(o)}`;
}

/** The reply to a search: `{"offers":[…]}`. */
export async function searchReplyJson(deps: Deps, body: unknown): Promise<string> {
  const page = await searchPage(deps, body, rowMembers, offerMembers);
  const ser = offerSerializers();
  let out = '{"offers":[';
  for (let i = 0; i < page.items.length; i++) {
    const w = page.windows.get(page.ids[i]!);
    out += `${i === 0 ? '' : ','}{${page.items[i]!},"maintenances":${w && w.length ? ser.windows(w) : '[]'}}`;
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
