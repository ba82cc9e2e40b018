// The agent protocol (contract/agent-protocol.ts, docs/agent.md): the host's own API key, scope
// `machines` (write). Thin routes: one service call each.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import type { RegisterRequest } from '../../../contract/agent-protocol.js';
import * as C from '../../../contract/schemas/agent-gateway.js';
import { currentAuthorizedKeys, register, results, shutdown, sync } from './agent-gateway.service.js';
import { flushHeartbeats } from './agent-gateway.heartbeats.js';
import { waitForWork } from './agent-gateway.wait.js';

const cfg = { scope: 'machines', access: 'write' } as const;

export const registerAgent = route(C.register)({
  config: cfg,
  // The schema requires only agent_uid and machines, and of each machine its slot, gpu_name and
  // num_gpus; RegisterRequest types the rest as sent too, as `openrig agent` always sends them.
  handler: (deps) => async (req) => register(deps, requireAuth(req), req.body as RegisterRequest),
});

export const syncAgent = route(C.sync)({
  config: cfg,
  // Every agent calls it every heartbeat: only failures are worth a log line.
  options: { logLevel: 'warn' },
  handler: (deps) => async (req) => sync(deps, requireAuth(req), req.body),
});

export const shutdownAgent = route(C.shutdown)({
  config: cfg,
  handler: (deps) => async (req) => shutdown(deps, requireAuth(req), req.body),
});

export const agentResults = route(C.results)({
  config: cfg,
  // Log output can be large: up to 8 MB of text per answer.
  options: { bodyLimit: 9 * 1024 * 1024 },
  handler: (deps) => async (req) => results(deps, requireAuth(req), req.body),
});

export const authorizedKeys = route(C.authorizedKeys)({
  config: cfg,
  // Asked at every SSH login: only failures are worth a log line.
  options: { logLevel: 'warn' },
  handler: (deps) => async (req) => currentAuthorizedKeys(deps, requireAuth(req), req.body),
});

export const waitAgent = route(C.wait)({
  config: cfg,
  // Held up to half a minute by every agent, all the time: only failures are worth a log line.
  options: { logLevel: 'warn' },
  handler: (deps) => async (req, reply) =>
    waitForWork(deps, requireAuth(req), req.body, (cancel) => reply.raw.once('close', cancel)),
});

export const agentGatewayRouteList = [
  registerAgent,
  syncAgent,
  shutdownAgent,
  agentResults,
  authorizedKeys,
  waitAgent,
];

export async function agentGatewayRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  // While the HTTP server drains on shutdown, agents cannot heartbeat to this process: its sweep
  // must not judge them meanwhile (main.ts stops the jobs only after the server closed).
  app.addHook('preClose', async () => {
    deps.agentGateway.closed = true;
    // Held waits answer now (the agents wait again elsewhere, or retry), so draining the
    // in-flight requests does not wait out their timeouts.
    await deps.agentWake.close();
  });
  // Heartbeats still in memory are written before the store closes (agent-gateway.heartbeats.ts).
  app.addHook('onClose', async () => {
    await flushHeartbeats(deps).catch((err: unknown) =>
      deps.log.warn({ err }, 'writing the last heartbeats failed'),
    );
  });
  registerRoutes(app, deps, agentGatewayRouteList);
}
