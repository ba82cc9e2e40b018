// Instance errors. Every body also carries `success: false` (clients read the destroy and stop
// replies for `success`, which must always be present); the module's write routes set
// `errorsCarrySuccess`, so the errors raised before their handlers (authentication, schema,
// malformed JSON, rate limits) carry it too.
import { AppError, defineErrors } from '../../errors.js';

const E = defineErrors({
  badRequest: [400, 'bad_request', 'Bad request'],
  noSshKey: [
    400,
    'no_ssh_key',
    'Register an SSH key first (POST /api/v0/ssh/ {ssh_key}): instances are reached over SSH',
  ],
  insufficientBalance: [
    402,
    'insufficient_balance',
    'Your balance is exhausted: add credit before starting an instance',
  ],
  notFound: [404, 'not_found', 'No such instance'],
  offerNotFound: [404, 'not_found', 'No such offer'],
  offerUnavailable: [409, 'offer_unavailable', 'This offer is no longer available'],
  invalidState: [409, 'invalid_state', 'That action is not possible in the instance state'],
  machineUnavailable: [
    409,
    'machine_unavailable',
    'The machine is rented by another client; destroy this instance and rent another offer',
  ],
  agentOutdated: [
    409,
    'agent_outdated',
    "The machine's agent cannot recreate containers; its host must upgrade openrig agent",
  ],
  idempotencyMismatch: [
    422,
    'idempotency_key_reused',
    'This Idempotency-Key was already used with a different request',
  ],
});

type Factory = (msg?: string) => AppError;

function withSuccess(f: (typeof E)[keyof typeof E]): Factory {
  return (msg?: string) => f(msg, { success: false });
}

export const InstanceErrors = {
  badRequest: withSuccess(E.badRequest),
  noSshKey: withSuccess(E.noSshKey),
  insufficientBalance: withSuccess(E.insufficientBalance),
  notFound: withSuccess(E.notFound),
  offerNotFound: withSuccess(E.offerNotFound),
  offerUnavailable: withSuccess(E.offerUnavailable),
  invalidState: withSuccess(E.invalidState),
  machineUnavailable: withSuccess(E.machineUnavailable),
  agentOutdated: withSuccess(E.agentOutdated),
  idempotencyMismatch: withSuccess(E.idempotencyMismatch),
};
