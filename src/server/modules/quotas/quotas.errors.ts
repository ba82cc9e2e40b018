// Quota, budget, subaccount and transfer errors. Every body also carries `success: false`: the
// official CLI reads `success` and `msg` from the transfer's reply.
import { AppError, defineErrors } from '../../errors.js';

const E = defineErrors({
  badRequest: [400, 'bad_request', 'Bad request'],
  notFound: [404, 'not_found', 'No such team, or you are not one of its members'],
  notManager: [403, 'forbidden', "Only a team's owner or a manager sets its limits"],
  quotaExceeded: [403, 'quota_exceeded', 'This create would pass a limit'],
  invalidRecipient: [400, 'invalid_recipient', 'No such recipient account'],
  insufficientBalance: [402, 'insufficient_balance', 'Your balance does not cover this transfer'],
});

const withSuccess =
  (f: (typeof E)[keyof typeof E]) =>
  (msg?: string, extra: Record<string, unknown> = {}): AppError =>
    f(msg, { success: false, ...extra });

export const QuotaErrors = {
  badRequest: withSuccess(E.badRequest),
  notFound: withSuccess(E.notFound),
  notManager: withSuccess(E.notManager),
  quotaExceeded: withSuccess(E.quotaExceeded),
  invalidRecipient: withSuccess(E.invalidRecipient),
  insufficientBalance: withSuccess(E.insufficientBalance),
};
