// The search reply's JSON. `offerSchema` is the offer as a reply carries it (the OpenAPI document
// and the serializers are built from it); OfferReplies writes replies and keeps the parts it
// wrote: one per process, a field of Deps, built by makeDeps.
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import type { Deps } from '../../deps.types.js';
import { offerSchema } from '../../../contract/schemas/offers.js';
import { OFFER_FIELDS, type JsContext, type OfferRow } from './offers.fields.js';
import type { SearchPlan } from './offers.filter.js';
import { offerBuilder, offerOf, searchPage, type Offer } from './offers.service.js';

/** The offer as a reply carries it: its contract (src/contract/schemas/offers.ts). */
export { offerSchema };

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

function compileSerializers(): Serializers {
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
  return {
    row: part(ROW_PART),
    plan: part(PLAN_PART),
    now: part(NOW_PART),
    windows: of(offerSchema.properties.maintenances),
  };
}

interface KeptParts {
  row: string;
  planKey: string;
  plan: string;
}

/** The offer serializers, compiled on first use, and the parts kept per index row. */
export class OfferReplies {
  private ser: Serializers | null = null;
  private readonly kept = new Map<OfferRow, KeptParts>();

  private serializers(): Serializers {
    return (this.ser ??= compileSerializers());
  }

  /** An offer's members but its maintenance windows, from its index row (parts kept per row). */
  readonly rowMembers = (r: OfferRow, ctx: JsContext, plan: SearchPlan): string => {
    const ser = this.serializers();
    const planKey = `${plan.type}|${plan.storage}`;
    let k = this.kept.get(r);
    if (k === undefined || k.planKey !== planKey) {
      const o = offerOf(r, ctx, plan);
      if (k === undefined) {
        if (this.kept.size >= FRAGMENTS) this.kept.clear();
        k = { row: ser.row(o), planKey, plan: ser.plan(o) };
        this.kept.set(r, k);
      } else {
        k.planKey = planKey;
        k.plan = ser.plan(o);
      }
    }
    return `${k.row},${k.plan},${ser.now(nowOf(r, ctx, plan))}`;
  };

  /** The same members from an offer SQL answered (nothing kept). */
  readonly offerMembers = (o: Offer): string => {
    const ser = this.serializers();
    return `${ser.row(o)},${ser.plan(o)},${ser.now(o)}`;
  };

  /** Maintenance windows as JSON. */
  windows(w: unknown): string {
    return this.serializers().windows(w);
  }
}

/** The reply to a search: `{"offers":[…]}`. */
export async function searchReplyJson(deps: Deps, body: unknown): Promise<string> {
  const replies = deps.offerReplies;
  const page = await searchPage(deps, body, replies.rowMembers, replies.offerMembers);
  let out = '{"offers":[';
  for (let i = 0; i < page.items.length; i++) {
    const w = page.windows.get(page.ids[i]!);
    out += `${i === 0 ? '' : ','}{${page.items[i]!},"maintenances":${w && w.length ? replies.windows(w) : '[]'}}`;
  }
  return out + ']}';
}
