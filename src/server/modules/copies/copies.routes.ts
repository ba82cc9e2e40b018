// Copies (docs/data.md): the official CLI's `copy` and `cancel copy` (the `instances` family),
// and the agent's side (the host's key, scope `machines`). Thin routes: one service call each.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/copies.js';
import { agentCopies, cancelCopy, copyAuth, listCopies, startCopy } from './copies.service.js';

const write = { scope: 'instances', errorsCarrySuccess: true } as const;
const agent = { scope: 'machines', access: 'write' } as const;

export const copyDirect = route(C.copyDirect)({
  config: write,
  handler: (deps) => async (req) => startCopy(deps, requireAuth(req), req.body),
});

export const rsync = route(C.rsync)({
  config: write,
  handler: (deps) => async (req) => startCopy(deps, requireAuth(req), req.body),
});

export const cancelCopyRoute = route(C.cancelCopy)({
  config: write,
  handler: (deps) => async (req) => cancelCopy(deps, requireAuth(req), req.body),
});

export const listCopiesRoute = route(C.listCopies)({
  config: { scope: 'instances', access: 'read' },
  handler: (deps) => async (req) => ({ success: true, copies: await listCopies(deps, requireAuth(req)) }),
});

export const agentCopiesRoute = route(C.agentCopies)({
  config: agent,
  options: { logLevel: 'warn' },
  handler: (deps) => async (req) => agentCopies(deps, requireAuth(req), req.body),
});

export const copyAuthRoute = route(C.copyAuth)({
  config: agent,
  options: { logLevel: 'warn' },
  handler: (deps) => async (req) => copyAuth(deps, requireAuth(req), req.body),
});

export const copyRouteList = [
  copyDirect,
  rsync,
  cancelCopyRoute,
  listCopiesRoute,
  agentCopiesRoute,
  copyAuthRoute,
];

export async function copiesRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, copyRouteList);
}
