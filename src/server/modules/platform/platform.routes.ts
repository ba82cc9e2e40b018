// GET /metrics: Prometheus text format. Open by default (bind serve to a
// private address or put it behind the proxy's allow-list); with OPENRIG_METRICS_TOKEN set, it
// needs that token as Bearer. Hidden from the OpenAPI document: it is not part of the API.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.js';
import { safeEqual } from '../../crypto.js';
import { PlatformErrors } from './platform.errors.js';

export async function platformRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.get('/metrics', { config: { auth: 'none' }, schema: { hide: true } }, async (req, reply) => {
    const token = deps.config.metricsToken;
    if (token) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
      if (!m || !safeEqual(m[1]!, token)) throw PlatformErrors.metricsAuth();
    }
    const { registry } = deps.metrics;
    // In a cluster worker, every worker's request counts together (cluster.ts).
    const text = (await deps.clusterMetrics?.()) ?? (await registry.metrics());
    return reply.type(registry.contentType).send(text);
  });
}
