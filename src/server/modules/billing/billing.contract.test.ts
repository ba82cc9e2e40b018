// The billing contract's bounds are the ones the services apply.
import { expect, it } from 'vitest';
import * as C from '../../../contract/schemas/billing.js';
import { MAX_CONTRACT_IDS, MAX_INVOICE_DAYS } from './billing.invoices.js';
import { PAGE_MAX_LIMIT, SEARCH_MAX_LIMIT } from './billing.invoices-v1.js';

it("the contract's bounds are the services'", () => {
  expect([C.MAX_CONTRACT_IDS, C.MAX_INVOICE_DAYS, C.PAGE_MAX_LIMIT, C.SEARCH_MAX_LIMIT]).toEqual([
    MAX_CONTRACT_IDS,
    MAX_INVOICE_DAYS,
    PAGE_MAX_LIMIT,
    SEARCH_MAX_LIMIT,
  ]);
});
