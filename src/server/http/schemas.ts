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

/** A `{success, msg}` reply with the route's `more` fields after them. */
export const successReply = (more: Record<string, unknown>) =>
  ({ type: 'object', properties: { ...successSchema.properties, ...more } }) as const;

/** The params of a route with one `:id` (idParams checks them). */
export interface IdParams {
  id: number;
}

/**
 * A row id in a request: a positive integer JavaScript holds exactly, which also fits the
 * databases' 64-bit ids (a larger one would be a 500 on PostgreSQL, not a 400).
 */
export const rowId = { type: 'integer', minimum: 1, maximum: 9007199254740991 } as const;

export const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: rowId },
} as const;

/** Standard error replies for an authenticated route. */
export const authErrors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema } as const;

/** A maintenance window as machines, instances and offers show it. */
export const maintenanceWindowSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    machine_id: { type: 'integer' },
    start_time: { type: 'number' },
    end_time: { type: 'number' },
    duration_hours: { type: 'number' },
    maintenance_category: { type: 'string' },
  },
} as const;
