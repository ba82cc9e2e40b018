// The offer row's contract (src/contract/schemas/offers.ts) declares every searchable offer field
// with the type and documentation its definition gives (offers.fields.ts), in the same order: a
// field added to one and not the other would be searchable but never sent, or sent untyped.
import { expect, it } from 'vitest';
import { OFFER_FIELDS, type FieldType } from './offers.fields.js';
import { offerSchema } from '../../../contract/schemas/offers.js';

const JSON_TYPE: Record<FieldType, string> = {
  int: 'integer',
  float: 'number',
  bool: 'boolean',
  string: 'string',
};

it('declares each offer field, in order, with its type and documentation', () => {
  const want = Object.entries(OFFER_FIELDS).map(([k, d]) => [
    k,
    {
      type: d.type === 'float' || d.type === 'int' ? [JSON_TYPE[d.type], 'null'] : JSON_TYPE[d.type],
      description: `${d.doc}${d.unit ? ` (${d.unit})` : ''}`,
    },
  ]);
  const declared = Object.entries(offerSchema.properties).slice(0, want.length);
  expect(declared).toEqual(want);
  expect(Object.keys(offerSchema.properties).slice(want.length)).toEqual([
    'ask_contract_id',
    'is_bid',
    'search_type',
    'allocated_storage',
    'maintenances',
  ]);
});
