// Validation (notes/dependencies.md): Fastify's default Ajv coerces body types and strips unknown
// properties silently. Bodies get a strict compiler (no coercion, nothing removed: bad bodies are
// rejected, not fixed); params and query strings a coercing one (they arrive as strings).
import { Ajv, type Options } from 'ajv';
import addFormatsImport from 'ajv-formats';
import type { FastifyInstance, FastifySchema } from 'fastify';

const addFormats = addFormatsImport as unknown as (ajv: Ajv) => Ajv;

function make(opts: Options): Ajv {
  const ajv = new Ajv({ allErrors: false, strict: false, useDefaults: true, ...opts });
  addFormats(ajv);
  // OpenAPI annotations allowed in route schemas.
  ajv.addKeyword({ keyword: 'example' });
  return ajv;
}

export function installValidators(app: FastifyInstance): void {
  const strictBody = make({ coerceTypes: false, removeAdditional: false });
  const coercing = make({ coerceTypes: 'array', removeAdditional: false });
  app.setValidatorCompiler(({ schema, httpPart }: { schema: FastifySchema; httpPart?: string }) => {
    const ajv = httpPart === 'body' ? strictBody : coercing;
    return ajv.compile(schema as object);
  });
}
