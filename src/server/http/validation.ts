// Validation: Fastify's default Ajv coerces body types and strips unknown
// properties silently. Bodies get a strict compiler (no coercion, nothing removed: bad bodies are
// rejected, not fixed); params and query strings a coercing one (they arrive as strings).
//
// Start-up (`serve` should be ready within a second): Fastify compiles a validator and a serializer
// for every route and status at `ready`: 415 serializers of 40 distinct schemas (the error schema
// alone is shared by hundreds), and 65 Ajv validators, half of the start-up CPU. Here a schema is
// compiled once per identity, and lazily: on its first use, or by `warm()` in the idle time after
// `listen` (main.ts), whichever comes first. Behaviour is the same either way.
import { Ajv, type Options } from 'ajv';
import addFormatsImport from 'ajv-formats';
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import type {
  FastifyInstance,
  FastifySchema,
  FastifySchemaValidationError,
  FastifyServerOptions,
} from 'fastify';

const addFormats = addFormatsImport as unknown as (ajv: Ajv) => Ajv;

function make(opts: Options): Ajv {
  // verbose: an error carries the schema that refused (its description names what a pattern wants).
  const ajv = new Ajv({ allErrors: false, strict: false, useDefaults: true, verbose: true, ...opts });
  addFormats(ajv);
  // OpenAPI annotations allowed in route schemas.
  ajv.addKeyword({ keyword: 'example' });
  return ajv;
}

type Serialize = (data: unknown) => string;
type RouteSchemaArg = { schema: object; method: string; url: string; httpStatus?: string };
type BuildSerializer = NonNullable<
  NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildSerializer']
>;

export interface SchemaCompilers {
  /** For `Fastify({ schemaController: { compilersFactory: { buildSerializer } } })`. */
  buildSerializer: BuildSerializer;
  /** Installs the validator compilers on the app. */
  installValidators(app: FastifyInstance): void;
  /** Compiles what is still pending, a few schemas per turn of the event loop; stops when closed. */
  warm(): void;
  stopWarming(): void;
}

/** A compiled-once, on-first-use function: `compile` runs at most once. */
function lazy<F>(compile: () => F, pending: (() => void)[]): { get: () => F } {
  let fn: F | undefined;
  const get = () => (fn ??= compile());
  pending.push(() => void get());
  return { get };
}

export function schemaCompilers(): SchemaCompilers {
  const pending: (() => void)[] = [];
  let timer: NodeJS.Immediate | null = null;
  let stopped = false;

  const buildSerializer = ((externalSchemas: unknown, options: unknown) => {
    const inner = (
      SerializerSelector as unknown as () => (e: unknown, o: unknown) => (r: RouteSchemaArg) => Serialize
    )()(externalSchemas, options);
    const bySchema = new WeakMap<object, Serialize>();
    return (route: RouteSchemaArg): Serialize => {
      const known = bySchema.get(route.schema);
      if (known) return known;
      const one = lazy(() => inner(route), pending);
      const serialize: Serialize = (data) => one.get()(data);
      bySchema.set(route.schema, serialize);
      return serialize;
    };
  }) as unknown as BuildSerializer;

  function installValidators(app: FastifyInstance): void {
    const strictBody = make({ coerceTypes: false, removeAdditional: false });
    const coercing = make({ coerceTypes: 'array', removeAdditional: false });
    app.setValidatorCompiler(({ schema, httpPart }: { schema: FastifySchema; httpPart?: string }) => {
      const ajv = httpPart === 'body' ? strictBody : coercing;
      const one = lazy(() => ajv.compile(schema as object), pending);
      // Fastify reads `.errors` off the function it was given after a failed call.
      const validate = (data: unknown): boolean => {
        const fn = one.get();
        const ok = fn(data);
        validate.errors = fn.errors as FastifySchemaValidationError[] | null | undefined;
        return ok;
      };
      validate.errors = null as FastifySchemaValidationError[] | null | undefined;
      return validate;
    });
  }

  function warm(): void {
    if (stopped || timer) return;
    const step = () => {
      timer = null;
      if (stopped) return;
      const until = performance.now() + 5; // a few ms per turn: requests keep their latency
      while (pending.length > 0 && performance.now() < until) pending.pop()!();
      if (pending.length > 0) timer = setImmediate(step);
    };
    timer = setImmediate(step);
  }

  return {
    buildSerializer,
    installValidators,
    warm,
    stopWarming() {
      stopped = true;
      if (timer) clearImmediate(timer);
      timer = null;
    },
  };
}
