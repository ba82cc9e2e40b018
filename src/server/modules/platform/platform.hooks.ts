// App-wide hooks of the platform module, registered by app.ts right after authentication:
// rate limiting (onRequest, needs req.auth) and request metrics (onResponse).
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { familyOf, rateLimitHook } from './platform.rate-limit.js';
import { errorSchema } from '../../http/schemas.js';
import { metricsHook } from './platform.metrics.js';

export function installPlatformHooks(app: FastifyInstance, deps: Deps): void {
  const limit = rateLimitHook(deps);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.some((m) => familyOf(m, route.url))) return;
    // A limited route documents its 429 (OpenAPI, and the fuzzer checks replies against it).
    const schema = (route.schema ??= {}) as { response?: Record<string, unknown> };
    schema.response = { ...(schema.response ?? {}), 429: errorSchema };
    // The limiter runs on limited routes only (route-level hooks run after the app's onRequest
    // hooks, so after authentication): every other request, polling first, pays nothing for it.
    const own =
      route.onRequest === undefined
        ? []
        : Array.isArray(route.onRequest)
          ? route.onRequest
          : [route.onRequest];
    route.onRequest = [...own, limit];
  });
  app.addHook('onResponse', metricsHook(deps));
}
