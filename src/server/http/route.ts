// One route = one object: its contract (method, url and schema, from src/contract/schemas/), its
// config and its handler. The handler's request types (params, query, body, headers) and its
// reply type are derived from the schema objects themselves (json-schema-to-ts), so the schema
// that validates and serialises a route is also the type its code is checked against.
// Types only: registering a route costs nothing per request (the handler is made once, with deps).
import type {
  FastifyContextConfig,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HTTPMethods,
  preSerializationHookHandler,
  preValidationHookHandler,
  RouteHandlerMethod,
  RouteShorthandOptions,
} from 'fastify';
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';
import type { Deps } from '../deps.types.js';
import { checkingReplies, responseSchemaFor, undeclaredFields } from './reply-fields.js';

/** A route's contract: src/contract/schemas/<module>.ts declares one per route. */
export interface Contract {
  readonly method: HTTPMethods | readonly HTTPMethods[];
  readonly url: string;
  readonly schema: RouteSchema;
}

/** A route's schemas: each a JSON Schema json-schema-to-ts reads (a literal, `as const`). */
export interface RouteSchema {
  readonly params?: JSONSchema;
  readonly querystring?: JSONSchema;
  readonly body?: JSONSchema;
  readonly headers?: JSONSchema;
  readonly response?: { readonly [status: number]: JSONSchema };
  readonly [annotation: string]: unknown;
}

/** The type a schema describes; `unknown` where the route declares none. */
export type Of<S> = S extends JSONSchema ? FromSchema<S> : unknown;

/**
 * A body whose schema is of type object is always there once validated (Fastify validates a missing
 * body as null, which such a schema refuses); any other body schema may leave it undefined.
 */
type BodyOf<S> = S extends { readonly type: 'object' } ? Of<S> : Of<S> | undefined;

/**
 * A reply type without the open index signatures json-schema-to-ts gives an object schema: a reply
 * may carry fields its schema does not declare (the serialiser drops them; the response-field
 * test catches the ones a handler means to send), and the server's row types are interfaces,
 * which have no index signature.
 */
export type Declared<T> = T extends readonly (infer U)[]
  ? Declared<U>[]
  : T extends object
    ? { [K in keyof T as string extends K ? never : K]: Declared<T[K]> }
    : T;

/** The 200 reply a route's schema declares. */
export type ReplyOf<S extends RouteSchema> = S['response'] extends { readonly 200: infer R }
  ? Declared<Of<R>>
  : unknown;

/**
 * A route's request: Fastify's, with params, query, body and headers as its schema describes them
 * (once validated; params and query coerced to the schema's types).
 */
export type RouteRequest<S extends RouteSchema> = FastifyRequest & {
  params: Of<S['params']>;
  query: Of<S['querystring']>;
  body: BodyOf<S['body']>;
  headers: Declared<Of<S['headers']>>;
};

/**
 * What a handler returns: the 200 reply (checked against its schema), or the reply object once it
 * has sent something else itself (another status, plain text, pre-serialised JSON).
 */
export type HandlerResult<S extends RouteSchema> = ReplyOf<S> | FastifyReply;

export type Handler<S extends RouteSchema> = (
  req: RouteRequest<S>,
  reply: FastifyReply,
) => Promise<HandlerResult<S>> | HandlerResult<S>;

/** Route settings besides its config: its log level and body size limit. */
export type RouteOptions = Pick<RouteShorthandOptions, 'logLevel' | 'bodyLimit'>;

/**
 * A route's own check of a request, run before its schema's (preValidation): where the published
 * interface fixes the text and status of a refusal (docs/api.md, Errors), the route throws that
 * error first. The schema still states every rule, and still refuses what the check lets through:
 * the document shows the rules the server enforces.
 */
export type Precheck = (deps: Deps) => (req: FastifyRequest) => void;

/** A route: its contract, its config and its handler (checked against the contract by route()). */
export interface Route<C extends Contract = Contract> {
  readonly contract: C;
  readonly config?: FastifyContextConfig;
  readonly options?: RouteOptions;
  readonly precheck?: Precheck;
  /** Made once when the routes are registered. */
  readonly handler: (deps: Deps) => unknown;
}

/**
 * A route of contract `contract`: `route(contract)({ config, handler })`, the handler's request and
 * 200 reply typed from the contract's schema. (Two calls: the contract alone fixes the types
 * before the handler is checked against them.)
 */
export function route<C extends Contract>(contract: C) {
  return (def: {
    config?: FastifyContextConfig;
    options?: RouteOptions;
    precheck?: Precheck;
    handler: (deps: Deps) => Handler<C['schema']>;
  }): Route<C> => ({
    contract,
    config: def.config,
    options: def.options,
    precheck: def.precheck,
    handler: def.handler,
  });
}

/** Registers routes on the app. */
export function registerRoutes(app: FastifyInstance, deps: Deps, routes: readonly Route[]): void {
  const check = checkingReplies();
  for (const r of routes) {
    app.route({
      method: r.contract.method as HTTPMethods | HTTPMethods[],
      url: r.contract.url,
      ...(r.config ? { config: r.config } : {}),
      ...r.options,
      schema: r.contract.schema,
      handler: r.handler(deps) as RouteHandlerMethod,
      ...(r.precheck ? { preValidation: prechecking(r.precheck(deps)) } : {}),
      ...(check ? { preSerialization: replyCheck(r.contract) } : {}),
    });
  }
}

/** A precheck as a preValidation hook: what it throws is the reply. */
function prechecking(check: (req: FastifyRequest) => void): preValidationHookHandler {
  return (req, _reply, done) => {
    try {
      check(req);
    } catch (err) {
      return done(err as Error);
    }
    done();
  };
}

/** The check of OPENRIG_CHECK_REPLIES (reply-fields.ts): a reply's undeclared fields are a 500. */
function replyCheck(contract: Contract): preSerializationHookHandler {
  return (_req, reply, payload, done) => {
    const schema = responseSchemaFor(contract.schema.response, reply.statusCode);
    const missing = schema === undefined ? [] : undeclaredFields(schema, payload);
    if (missing.length === 0) return done(null, payload);
    const where = `${String(contract.method)} ${contract.url}`;
    done(new Error(`${where}: reply fields its response schema does not declare: ${missing.join(', ')}`));
  };
}
