// Env-var errors. Every body carries `success: false` besides `error` and `msg`, as the official
// CLI's env-var commands read `success` and `msg`. No message ever holds a variable's value.
import { AppError, defineErrors } from '../../errors.js';

const E = defineErrors({
  badRequest: [400, 'bad_request', 'Bad request'],
  notFound: [404, 'not_found', 'No such environment variable'],
  exists: [409, 'conflict', 'An environment variable of that name already exists'],
});

const withSuccess =
  (f: (typeof E)[keyof typeof E]) =>
  (msg?: string): AppError =>
    f(msg, { success: false });

export const EnvVarErrors = {
  badRequest: withSuccess(E.badRequest),
  notFound: withSuccess(E.notFound),
  exists: withSuccess(E.exists),
};
