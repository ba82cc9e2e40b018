// Copy errors. Every body carries `success: false` besides `error` and `msg`: the official CLI
// prints `msg` when `success` is false.
import { AppError, defineErrors } from '../../errors.js';

const E = defineErrors({
  badRequest: [400, 'bad_request', 'Bad request'],
  notFound: [404, 'not_found', 'No such instance'],
  notRunning: [409, 'invalid_state', 'The instance is not running'],
  busy: [409, 'copy_in_progress', 'A copy into this instance is under way: cancel it first (cancel copy ID)'],
});

const withSuccess =
  (f: (typeof E)[keyof typeof E]) =>
  (msg?: string): AppError =>
    f(msg, { success: false });

export const CopyErrors = {
  badRequest: withSuccess(E.badRequest),
  notFound: withSuccess(E.notFound),
  notRunning: withSuccess(E.notRunning),
  busy: withSuccess(E.busy),
};
