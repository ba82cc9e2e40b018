// App-wide hooks of the platform module, registered by app.ts right after authentication:
// rate limiting (onRequest, needs req.auth) and request metrics (onResponse).
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.js';
import { familyOf, rateLimitHook } from './platform.rate-limit.js';
import { errorSchema } from '../../http/schemas.js';
import { metricsHook } from './platform.metrics.js';

export function installPlatformHooks(app: FastifyInstance, deps: Deps): void {
  // A limited route documents its 429 (OpenAPI, and the fuzzer checks replies against it).
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.some((m) => familyOf(m, route.url))) return;
    const schema = (route.schema ??= {}) as { response?: Record<string, unknown> };
    schema.response = { ...(schema.response ?? {}), 429: errorSchema };
  });
  app.addHook('onRequest', rateLimitHook(deps));
  app.addHook('onResponse', metricsHook(deps));
}
