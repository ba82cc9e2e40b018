// The v1 list's contract names the columns order_by takes; they are the ones the query orders by.
import { expect, it } from 'vitest';
import { INSTANCE_ORDER_COLUMNS } from '../../../contract/schemas/instances.js';
import { V1_ORDER_COLUMNS } from './instances.query.js';

it("the contract's order_by columns are the list's", () => {
  expect([...INSTANCE_ORDER_COLUMNS]).toEqual([...V1_ORDER_COLUMNS]);
});
