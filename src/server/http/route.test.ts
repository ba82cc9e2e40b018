// route() types a handler from its contract's schemas: the typecheck (tsc) fails if a request
// field's type or a reply's type stops following the schema.
import { expect, expectTypeOf, it } from 'vitest';
import { route } from './route.js';
import { idParams } from '../../contract/schemas/common.js';

const contract = {
  method: 'PUT',
  url: '/x/:id',
  schema: {
    params: idParams,
    querystring: { type: 'object', properties: { q: { type: 'string' } } },
    body: {
      type: 'object',
      required: ['n'],
      properties: { n: { type: 'integer' }, s: { type: ['string', 'null'] } },
    },
    response: { 200: { type: 'object', properties: { ok: { type: 'boolean' } } } },
  },
} as const;

it('types params, query, body and the 200 reply from the schemas', () => {
  const r = route(contract)({
    handler: () => async (req) => {
      expectTypeOf(req.params.id).toEqualTypeOf<number>();
      expectTypeOf(req.query.q).toEqualTypeOf<string | undefined>();
      expectTypeOf(req.body.n).toEqualTypeOf<number>();
      expectTypeOf(req.body.s).toEqualTypeOf<string | null | undefined>();
      return { ok: true };
    },
  });
  expect(r.contract).toBe(contract);
  // @ts-expect-error a reply field of another type than its schema's
  route(contract)({ handler: () => async () => ({ ok: 'yes' }) });
  route(contract)({
    handler: () => async (req) => {
      // @ts-expect-error the body's n is an integer, not a string
      const n: string = req.body.n;
      return { ok: n === '' };
    },
  });
});
