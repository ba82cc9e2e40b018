// The instance configuration's one error: a 400 `bad_request` that also carries `success: false`,
// as every instance error does (the create body and a template are checked by the same rules).
import { defineErrors, type AppError } from '../../errors.js';

const E = defineErrors({
  badRequest: [400, 'bad_request', 'Bad request'],
});

export const ConfigErrors = {
  badRequest: (msg?: string): AppError => E.badRequest(msg, { success: false }),
};
