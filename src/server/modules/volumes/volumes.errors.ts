// Volume errors. Every body carries `success: false` besides `error` and `msg`: the official CLI
// prints the reply of its volume commands as it is.
import { AppError, defineErrors } from '../../errors.js';

const E = defineErrors({
  badRequest: [400, 'bad_request', 'Bad request'],
  notFound: [404, 'not_found', 'No such volume'],
  askNotFound: [404, 'not_found', 'No such volume offer'],
  machineNotFound: [404, 'not_found', 'No such machine of yours'],
  inUse: [409, 'volume_in_use', 'The volume is mounted by a live instance'],
  conflict: [409, 'conflict', 'Conflict'],
  insufficientBalance: [402, 'insufficient_balance', 'Your balance is exhausted: add credit first'],
});

const withSuccess =
  (f: (typeof E)[keyof typeof E]) =>
  (msg?: string): AppError =>
    f(msg, { success: false });

export const VolumeErrors = {
  badRequest: withSuccess(E.badRequest),
  notFound: withSuccess(E.notFound),
  askNotFound: withSuccess(E.askNotFound),
  machineNotFound: withSuccess(E.machineNotFound),
  inUse: withSuccess(E.inUse),
  conflict: withSuccess(E.conflict),
  insufficientBalance: withSuccess(E.insufficientBalance),
};
