// Response schemas shared by every module. Fastify serialises with them (fast, and undeclared
// fields never leak) and @fastify/swagger puts them in the OpenAPI document.
export const errorSchema = {
  type: 'object',
  required: ['error', 'msg'],
  properties: { error: { type: 'string' }, msg: { type: 'string' } },
  additionalProperties: true,
} as const;

export const successSchema = {
  type: 'object',
  properties: { success: { type: 'boolean' }, msg: { type: 'string' } },
} as const;

export const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'integer', minimum: 1, maximum: 9007199254740991 } },
} as const;

/** Standard error replies for an authenticated route. */
export const authErrors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema } as const;
