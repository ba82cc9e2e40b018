// The gateway (docs/gateway.md): its two JSON routes, and the traffic it serves before the API's
// routing, on the HTTP server itself: requests and upgrades for `/i/ID/PORT/…` (or, with
// OPENRIG_GATEWAY_DOMAIN, for the Host `ID-PORT.DOMAIN`), and the agents' tunnel upgrades.
import type { FastifyInstance } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Deps } from '../../deps.types.js';
import { requireAuth, resolveCredential } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import { allows } from '../../../contract/permissions.js';
import * as C from '../../../contract/schemas/gateway.js';
import { claimAgentTunnels, gatewayLink } from './gateway.service.js';
import { agentMachineIds } from './gateway.repo.js';
import { TUNNEL_PATH, TUNNEL_PROTOCOL, TunnelHub } from './gateway.tunnels.js';
import { GatewayProxy } from './gateway.proxy.js';
import { targetOf } from './gateway.access.js';

export const gatewayLinkRoute = route(C.gatewayLink)({
  config: { scope: 'instances', access: 'read' },
  handler: (deps) => async (req) => gatewayLink(deps, requireAuth(req), req.params.id, req.body?.port),
});

export const tunnelClaimRoute = route(C.tunnelClaim)({
  config: { scope: 'machines', access: 'write' },
  options: { logLevel: 'warn' },
  handler: (deps) => async (req) => claimAgentTunnels(deps, requireAuth(req), req.body),
});

export const gatewayRouteList = [gatewayLinkRoute, tunnelClaimRoute];

function refuse(socket: Duplex, status: number, reason: string, error: string, msg: string): void {
  const body = JSON.stringify({ error, msg });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** An agent's tunnel dial: its key, its agent_uid and the node it was asked by. */
async function acceptTunnel(deps: Deps, hub: TunnelHub, req: IncomingMessage, socket: Duplex, head: Buffer) {
  if (String(req.headers.upgrade ?? '').toLowerCase() !== TUNNEL_PROTOCOL)
    return refuse(socket, 400, 'Bad Request', 'bad_request', `A tunnel is an Upgrade: ${TUNNEL_PROTOCOL}`);
  const node = String(req.headers[C.TUNNEL.nodeHeader] ?? '');
  // Another process of the cluster (or another node) asked: the agent dials again.
  if (node !== hub.node)
    return refuse(
      socket,
      421,
      'Misdirected Request',
      'other_node',
      'This tunnel was asked by another server process',
    );
  const m = /^Bearer\s+(\S+)\s*$/i.exec(String(req.headers.authorization ?? ''));
  const auth = m ? await resolveCredential(deps, m[1]!).catch(() => null) : null;
  if (!auth) return refuse(socket, 401, 'Unauthorized', 'auth_invalid', "The agent's API key is not valid");
  if (!allows(auth.permissions, 'machines', 'write') || auth.via === 'instance_key')
    return refuse(socket, 403, 'Forbidden', 'forbidden', 'The key may not serve machines');
  const uid = String(req.headers[C.TUNNEL.agentHeader] ?? '');
  const machines = uid ? await agentMachineIds(deps.db, auth.user.id, uid) : [];
  if (machines.length === 0)
    return refuse(socket, 403, 'Forbidden', 'forbidden', 'This agent has no machine here');
  socket.write(
    `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${TUNNEL_PROTOCOL}\r\n\r\n`,
  );
  if (head.length > 0) socket.unshift(head);
  hub.adopt(socket, machines);
}

export async function gatewayRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, gatewayRouteList);
  const hub = new TunnelHub(deps);
  const proxy = new GatewayProxy(deps, hub);
  const domain = deps.config.gateway.domain;
  const server = app.server;
  // Gateway requests are taken before the API's own handler sees them.
  const api = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const t = targetOf(req, domain);
    if (t) {
      void proxy.handle(req, res, t);
      return;
    }
    for (const l of api) l.call(server, req, res);
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const url = req.url ?? '';
    if (url === TUNNEL_PATH || url.startsWith(`${TUNNEL_PATH}?`)) {
      acceptTunnel(deps, hub, req, socket, head).catch((err: unknown) => {
        deps.log.warn({ err }, 'a gateway tunnel dial failed');
        socket.destroy();
      });
      return;
    }
    const t = targetOf(req, domain);
    if (t) {
      void proxy.upgrade(req, socket, head, t);
      return;
    }
    refuse(socket, 404, 'Not Found', 'not_found', 'No upgrade is served here');
  });
  // Long-lived gateway connections must not hold up the server's stop.
  app.addHook('preClose', (done) => {
    hub.close();
    proxy.close();
    done();
  });
}
