// The HTTP application: plumbing shared by every route (auth, validation, errors, content
// type, OpenAPI, logs), then each module's routes. Built by main.ts and by tests (app.inject()).
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import { randomUUID } from 'node:crypto';
import type { Deps } from './deps.types.js';
import { flushKeyUses } from './http/key-uses.js';
import { authHook } from './http/auth.js';
import { installErrorHandling } from './http/error-handler.js';
import { jsonBodyHoldsNul, nulInText, urlHoldsNul } from './http/nul-guard.js';
import { schemaCompilers } from './http/validation.js';
import { loggedUrl, redactUrl } from './http/redact.js';
import { clientErrorHandler } from './http/client-error.js';
import { jsonTooDeep, tooDeep } from './http/json-limits.js';

import { accessLineWriter, logOptions, RequestLog } from './log.js';
import type { Bindings, ChildLoggerOptions } from 'pino';

export { redactUrl, logOptions };
import { ping } from './db/connection.js';
import { registerModules } from './modules/index.js';
import { installPlatformHooks } from './modules/platform/platform.hooks.js';
import { installAuditHooks } from './modules/audit/audit.hooks.js';
import { defaultConsoleDir, installConsole } from './http/console.js';

/**
 * The access log: one line per request, written when the reply is: the request id (reqId),
 * method, route pattern (null when no route matched), the URL with every credential value
 * redacted, status, milliseconds from the request's arrival to the reply written and the
 * authenticated user's id (null when none). Written on the app's logger with reqId as the first
 * field, which makes the line a request's own logger would (log.ts, RequestLog) without making it;
 * built by accessLineWriter (log.ts), the same line as the logger's info() at less cost.
 */
function accessLog(app: FastifyInstance) {
  const write = accessLineWriter(app.log);
  return function accessLine(req: FastifyRequest, reply: FastifyReply, done: () => void): void {
    // req.routeOptions builds a new object at each read: read once.
    const route = req.routeOptions;
    write({
      reqId: req.id,
      method: req.method,
      route: route.url ?? null,
      url: loggedUrl(req, route),
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 100) / 100,
      user: req.auth?.user.id ?? null,
    });
    done();
  };
}

export interface RouteInfo {
  method: string;
  url: string;
  hidden: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    openrigRoutes: RouteInfo[];
    /**
     * Compiles the schemas not used yet, a few per turn of the event loop (http/validation.ts).
     * Called on listen, or by the caller that asked for `warmOnListen: false`.
     */
    warmSchemas(): void;
  }
}

export async function buildApp(
  deps: Deps,
  opts: {
    logger?: boolean;
    logStream?: NodeJS.WritableStream;
    consoleDir?: string;
    /**
     * false: the schemas are not compiled ahead on listen but when warmSchemas() is called (a
     * cluster's worker, once every worker listens: compiling them takes a worker's CPU for about
     * as long as its start did, which the other processes' start-up needs on a machine with one
     * core per worker). Either way a schema used first compiles then.
     */
    warmOnListen?: boolean;
  } = {},
): Promise<FastifyInstance> {
  const compilers = schemaCompilers();
  // Typed as Fastify's base logger so the app is a plain FastifyInstance, not one of pino's type.
  const baseLogger: FastifyBaseLogger = deps.log;
  const app = Fastify({
    schemaController: { compilersFactory: { buildSerializer: compilers.buildSerializer } },
    // The log: deps.log (serverLog in log.ts: asynchronous writes), or one on `logStream` (tests).
    // Fastify's own two lines per request are off: the access line below is the one.
    ...(opts.logger === false
      ? { logger: false }
      : opts.logStream
        ? { logger: logOptions(deps.config.logLevel, opts.logStream) }
        : { loggerInstance: baseLogger }),
    logController: new LogController({ disableRequestLogging: true }),
    // A request's own logger is made only when it logs something besides its access line.
    ...(opts.logger === false
      ? {}
      : {
          childLoggerFactory: (
            logger: FastifyBaseLogger,
            bindings: Bindings,
            childOpts: ChildLoggerOptions,
          ) => new RequestLog(logger, bindings, childOpts),
        }),
    genReqId: () => randomUUID(),
    bodyLimit: deps.config.bodyLimitBytes,
    // A path parameter over the router's default 100 characters would be a 404 before its schema
    // could refuse it: the route schemas bound their parameters, with a 400 naming them.
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: 1000 },
    forceCloseConnections: 'idle',
    // Behind a load balancer, req.ip (anonymous rate limits, 2FA audit events) is the client's
    // address from X-Forwarded-For, believed only from the proxies configured (config.ts).
    trustProxy: deps.config.trustProxy,
    // Router-level failures (a malformed %-escape, an over-long path parameter) get the same
    // {error, msg} body as everything else instead of Fastify's own shape.
    frameworkErrors: (err, _req, reply) => {
      const msg =
        err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'A path parameter is too long' : 'The URL is not valid';
      // No route, so no onSend hook: serialise here, with the exact content type.
      // (A custom serializer keeps Fastify from appending "; charset=utf-8".)
      void (reply as FastifyReply)
        .code(400)
        .header('content-type', 'application/json')
        .serializer((p: unknown) => JSON.stringify(p))
        .send({ error: 'bad_request', msg });
    },
    ajv: { customOptions: { coerceTypes: 'array' } },
    // The HTTP parser's own refusals (431, malformed requests) answer {error, msg} too.
    clientErrorHandler,
  });

  // Every route, for the OpenAPI completeness test and the fuzzer.
  const routes: RouteInfo[] = [];
  app.decorate('openrigRoutes', routes);
  app.addHook('onRoute', (r) => {
    const methods = Array.isArray(r.method) ? r.method : [r.method];
    const hidden = !!r.schema?.hide;
    for (const m of methods) if (m !== 'HEAD') routes.push({ method: m, url: r.url, hidden });
  });

  compilers.installValidators(app);
  // Schemas compile on first use; once listening (or when told), the rest in idle time (validation.ts).
  app.decorate('warmSchemas', () => compilers.warm());
  if (opts.warmOnListen !== false)
    app.addHook('onListen', (done) => {
      compilers.warm();
      done();
    });
  app.addHook('onClose', (_app, done) => {
    compilers.stopWarming();
    done();
  });
  // Key uses still queued are written before the store closes (http/key-uses.ts).
  app.addHook('onClose', () => flushKeyUses(deps));
  installErrorHandling(app);

  // JSON bodies: the default parser (prototype-poisoning safe), except that an empty body is
  // "no body" (clients send DELETE with Content-Type and nothing else). text/plain is refused: 415.
  const defaultJson = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (body === '' || (typeof body === 'string' && body.trim() === '')) return done(null, undefined);
    if (jsonTooDeep(body as string)) return done(tooDeep(), undefined);
    // The parser answers through its callback; the promise it also returns carries nothing more.
    void defaultJson(req, body as string, (err, parsed) => {
      if (err) return done(err, undefined);
      if (jsonBodyHoldsNul(body as string, parsed)) return done(nulInText(), undefined);
      done(null, parsed);
    });
  });

  // The CLI refuses a reply whose Content-Type is not exactly application/json. No reply may be
  // read by a browser as another type than the one it names (nosniff).
  // (A callback hook: no promise per request.)
  app.addHook('onSend', (_req, reply, payload, done) => {
    reply.header('x-content-type-options', 'nosniff');
    const ct = reply.getHeader('content-type');
    if (typeof ct === 'string' && ct !== 'application/json' && ct.startsWith('application/json')) {
      reply.header('content-type', 'application/json');
    }
    done(null, payload);
  });

  if (opts.logger !== false) app.addHook('onResponse', accessLog(app));

  await app.register(cookie);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'openrig API',
        version: '1.0.0', // the published interface's version
        description:
          'GPU cloud marketplace control plane: instance quick path, maintenance, 2FA, agent protocol.',
      },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'API key, instance key or 2FA session key' },
          apiKeyQuery: {
            type: 'apiKey',
            in: 'query',
            name: 'api_key',
            description: 'For older clients; the header wins',
          },
        },
      },
      security: [{ bearer: [] }, { apiKeyQuery: [] }],
    },
  });

  app.decorateRequest('auth', null);
  app.decorateRequest('keyJoined', null);
  // Before authentication, which looks up an api_key from the query (http/nul-guard.ts).
  app.addHook('onRequest', (req, _reply, done) => done(urlHoldsNul(req.url) ? nulInText() : undefined));
  app.addHook('onRequest', authHook(deps));
  installPlatformHooks(app, deps); // rate limits (needs req.auth) and request metrics
  installAuditHooks(app, deps); // the audit log: writes and sign-ins, recorded after the reply

  app.get('/healthz', { config: { auth: 'none' }, schema: { hide: true } }, async () => ({ ok: true }));
  app.get('/readyz', { config: { auth: 'none' }, schema: { hide: true } }, async (_req, reply) => {
    if (await ping(deps.store)) return { ok: true };
    return reply.code(503).send({ error: 'service_unavailable', msg: 'database unreachable' });
  });
  app.get('/api/v0/openapi.json', { config: { auth: 'none' }, schema: { hide: true } }, async () =>
    app.swagger(),
  );

  await registerModules(app, deps);
  // The web console, when built (dist/web); the API answers the same without it.
  await installConsole(app, opts.consoleDir ?? defaultConsoleDir());
  return app;
}
