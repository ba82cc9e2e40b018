// Template errors. Every body carries `success: false` besides `error` and `msg`: the official
// CLI reads `success` of the create and update replies and prints `msg` of the delete's. The
// template routes set `errorsCarrySuccess`, so the errors raised before their handlers
// (authentication, schema, malformed JSON, rate limits) carry it too.
import { AppError, defineErrors } from '../../errors.js';

const E = defineErrors({
  badRequest: [400, 'bad_request', 'Bad request'],
  notFound: [404, 'not_found', 'No such template'],
});

const withSuccess =
  (f: (typeof E)[keyof typeof E]) =>
  (msg?: string): AppError =>
    f(msg, { success: false });

export const TemplateErrors = {
  badRequest: withSuccess(E.badRequest),
  notFound: withSuccess(E.notFound),
};
