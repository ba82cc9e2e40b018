// The audit log's contract bounds `limit` by the most rows the service answers.
import { expect, it } from 'vitest';
import { AUDIT_LIST_MAX } from '../../../contract/schemas/audit.js';
import { AUDIT_LIST_MAX as SERVED_MAX } from './audit.service.js';

it("the contract's limit is the service's", () => {
  expect(AUDIT_LIST_MAX).toBe(SERVED_MAX);
});
