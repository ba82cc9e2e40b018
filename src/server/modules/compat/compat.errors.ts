// Error codes of the compatibility module, as data.
import { defineErrors } from '../../errors.js';

export const CompatErrors = defineErrors({
  notSupported: [400, 'not_supported', 'This command of the marketplace CLI is not supported by openrig'],
});
