// Requests the instance's agent carries out (logs, command, reboot, recycle), in the official
// client's wire forms; each answers a result URL readable with no key (instances.remote.ts).
import { requireAuth } from '../../http/auth.js';
import { route } from '../../http/route.js';
import { sendError } from '../../http/error-handler.js';
import * as C from '../../../contract/schemas/instances.js';
import { readResult, requestCommand, requestLogs as logs, requestRestart } from './instances.remote.js';

const origin = (req: { protocol: string; host: string }) => `${req.protocol}://${req.host}`;

export const requestLogs = route(C.requestLogs)({
  config: { scope: 'instances', access: 'read', errorsCarrySuccess: true },
  handler: (deps) => async (req) => logs(deps, requireAuth(req), req.params.id, req.body ?? {}, origin(req)),
});

export const runCommand = route(C.runCommand)({
  config: { scope: 'instances', errorsCarrySuccess: true },
  handler: (deps) => async (req) =>
    requestCommand(deps, requireAuth(req), req.params.id, req.body.command, origin(req)),
});

export const rebootInstance = route(C.rebootInstance)({
  config: { scope: 'instances', errorsCarrySuccess: true },
  handler: (deps) => async (req) =>
    requestRestart(deps, requireAuth(req), req.params.id, 'reboot', origin(req)),
});

export const recycleInstance = route(C.recycleInstance)({
  config: { scope: 'instances', errorsCarrySuccess: true },
  handler: (deps) => async (req) =>
    requestRestart(deps, requireAuth(req), req.params.id, 'recycle', origin(req)),
});

export const remoteResult = route(C.remoteResult)({
  config: { auth: 'none', secretParams: ['token'] },
  handler: (deps) => async (req, reply) => {
    const text = await readResult(deps, req.params.token);
    // Not there (yet, or any more) is an error like every other: {error, msg} as JSON.
    if (text === null)
      return sendError(reply, 404, 'not_found', 'No result at this URL yet (or it has expired)');
    return reply.type('text/plain; charset=utf-8').send(text);
  },
});
