// Usage-history errors.
import { defineErrors } from '../../errors.js';

export const UsageHistoryErrors = defineErrors({
  notFound: [404, 'not_found', 'No such instance of yours'],
});
