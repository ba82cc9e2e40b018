// The agent protocol (contract/agent-protocol.ts, docs/agent.md): the host's own API key, scope
// `machines` (write). Thin routes: one service call each.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { errorSchema } from '../../http/schemas.js';
import {
  AGENT_API_PREFIX,
  type AuthorizedKeysRequest,
  type RegisterRequest,
  type ResultsRequest,
  type ShutdownRequest,
  type SyncRequest,
} from '../../../contract/agent-protocol.js';
import {
  authorizedKeysBody,
  authorizedKeysReply,
  registerBody,
  registerReply,
  resultsBody,
  resultsReply,
  shutdownBody,
  shutdownReply,
  syncBody,
  syncReply,
} from './agent-gateway.schemas.js';
import { currentAuthorizedKeys, register, results, shutdown, sync } from './agent-gateway.service.js';
import { flushHeartbeats } from './agent-gateway.heartbeats.js';

const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 409: errorSchema } as const;
const tags = ['agent'];

export async function agentGatewayRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  // While the HTTP server drains on shutdown, agents cannot heartbeat to this process: its sweep
  // must not judge them meanwhile (main.ts stops the jobs only after the server closed).
  app.addHook('preClose', async () => {
    deps.agentGateway.closed = true;
  });
  // Heartbeats still in memory are written before the store closes (agent-gateway.heartbeats.ts).
  app.addHook('onClose', async () => {
    await flushHeartbeats(deps).catch((err: unknown) =>
      deps.log.warn({ err }, 'writing the last heartbeats failed'),
    );
  });
  app.post<{ Body: RegisterRequest }>(
    `${AGENT_API_PREFIX}/register`,
    {
      config: { scope: 'machines', access: 'write' },
      schema: {
        tags,
        summary:
          "Register the agent's machines (hardware, price); answers their ids and the heartbeat timing",
        body: registerBody,
        response: { 200: registerReply, ...errors },
      },
    },
    async (req) => register(deps, requireAuth(req), req.body),
  );
  app.post<{ Body: SyncRequest }>(
    `${AGENT_API_PREFIX}/sync`,
    {
      // Every agent calls it every heartbeat: only failures are worth a log line.
      logLevel: 'warn',
      config: { scope: 'machines', access: 'write' },
      schema: {
        tags,
        summary:
          "Heartbeat and reconcile: report each instance's actual state, receive the instances to hold and their desired state",
        body: syncBody,
        response: { 200: syncReply, ...errors },
      },
    },
    async (req) => sync(deps, requireAuth(req), req.body),
  );
  app.post<{ Body: ShutdownRequest }>(
    `${AGENT_API_PREFIX}/shutdown`,
    {
      config: { scope: 'machines', access: 'write' },
      schema: {
        tags,
        summary: 'Clean agent shutdown: its machines and their instances go offline at once',
        body: shutdownBody,
        response: { 200: shutdownReply, ...errors },
      },
    },
    async (req) => shutdown(deps, requireAuth(req), req.body),
  );
  app.post<{ Body: ResultsRequest }>(
    `${AGENT_API_PREFIX}/results`,
    {
      config: { scope: 'machines', access: 'write' },
      // Log output can be large: up to 8 MB of text per answer.
      bodyLimit: 9 * 1024 * 1024,
      schema: {
        tags,
        summary:
          "Answers to client requests of the agent's instances (logs and command output, reboot, recycle)",
        body: resultsBody,
        response: { 200: resultsReply, ...errors },
      },
    },
    async (req) => results(deps, requireAuth(req), req.body),
  );
  app.post<{ Body: AuthorizedKeysRequest }>(
    `${AGENT_API_PREFIX}/authorized-keys`,
    {
      // Asked at every SSH login: only failures are worth a log line.
      logLevel: 'warn',
      config: { scope: 'machines', access: 'write' },
      schema: {
        tags,
        summary:
          'The public keys an instance of this host accepts right now (its SSH server asks at each login)',
        body: authorizedKeysBody,
        response: { 200: authorizedKeysReply, ...errors },
      },
    },
    async (req) => currentAuthorizedKeys(deps, requireAuth(req), req.body),
  );
}
