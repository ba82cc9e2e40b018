// GET /metrics: Prometheus text format. Never open to whoever reaches the API port: there it
// needs OPENRIG_METRICS_TOKEN as Bearer (403 when no token is configured); `serve
// --metrics-port P` serves it on a separate listener (127.0.0.1 by default) for scrapers on the
// host or a private network. Hidden from the OpenAPI document: it is not part of the API.
import { createServer, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { safeEqual } from '../../crypto.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/platform.js';
import { PlatformErrors } from './platform.errors.js';

function tokenMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return !!m && safeEqual(m[1]!, token);
}

export const metrics = route(C.metrics)({
  config: { auth: 'none' },
  handler: (deps) => async (req, reply) => {
    const token = deps.config.metricsToken;
    if (!token) throw PlatformErrors.metricsOff();
    if (!tokenMatches(req.headers.authorization, token)) throw PlatformErrors.metricsAuth();
    const { registry } = deps.metrics;
    // In a cluster worker, every worker's request counts together (cluster.ts).
    const text = (await deps.clusterMetrics?.()) ?? (await registry.metrics());
    return reply.type(registry.contentType).send(text);
  },
});

export async function platformRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, [metrics]);
}

/**
 * The separate metrics listener: GET /metrics only (with the token too, when one is set); every
 * other request is a 404. Resolves once listening.
 */
export async function startMetricsServer(deps: Deps, host: string, port: number): Promise<Server> {
  const { registry } = deps.metrics;
  const server = createServer((req, res) => {
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || (path !== '/metrics' && path !== '/metrics/'))
      return send(
        404,
        'application/json',
        JSON.stringify({ error: 'not_found', msg: 'Only GET /metrics here' }),
      );
    const token = deps.config.metricsToken;
    if (token && !tokenMatches(req.headers.authorization, token))
      return send(
        401,
        'application/json',
        JSON.stringify({ error: 'auth_error', msg: PlatformErrors.metricsAuth.msg }),
      );
    // In a cluster worker, every worker's request counts together (cluster.ts).
    const text = deps.clusterMetrics
      ? deps.clusterMetrics().then((t) => t ?? registry.metrics())
      : registry.metrics();
    text.then(
      (text) => send(200, registry.contentType, text),
      () =>
        send(
          500,
          'application/json',
          JSON.stringify({ error: 'internal_error', msg: 'Internal server error' }),
        ),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
