import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.js';
import { requireAuth } from '../../http/auth.js';
import { authErrors, errorSchema, idParams } from '../../http/schemas.js';
import { createApiKey, getApiKey, listApiKeys, revokeApiKey } from './api-keys.service.js';

const permissionsSchema = {
  description:
    '"full" (default), "read_only", or {family: "read"|"write"}; families: user, api_keys, ssh_keys, offers, instances, machines, maintenance, tfa, billing',
  anyOf: [
    { type: 'string', enum: ['full', 'read_only'] },
    { type: 'object', additionalProperties: { type: 'string', enum: ['read', 'write'] } },
    { type: 'null' },
  ],
} as const;

const keySchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    key_prefix: { type: 'string' },
    permissions: {
      anyOf: [{ type: 'string' }, { type: 'object', additionalProperties: { type: 'string' } }],
    },
    team_id: { type: ['integer', 'null'] },
    created_at: { type: 'number' },
    last_used_at: { type: ['number', 'null'] },
  },
} as const;

export async function apiKeysRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  const base = '/api/v0/auth/apikeys';
  app.post(
    base,
    {
      config: { scope: 'api_keys' },
      schema: {
        tags: ['api keys'],
        summary: 'Create an API key; the key is in this reply only',
        body: {
          type: 'object',
          properties: {
            name: { type: 'string', maxLength: 100 },
            permissions: permissionsSchema,
            key_params: {},
          },
        },
        response: {
          200: {
            type: 'object',
            properties: { ...keySchema.properties, success: { type: 'boolean' }, key: { type: 'string' } },
          },
          ...authErrors,
        },
      },
    },
    async (req) =>
      createApiKey(deps, requireAuth(req), (req.body ?? {}) as { name?: string; permissions?: unknown }),
  );
  app.get(
    base,
    {
      config: { scope: 'api_keys' },
      schema: {
        tags: ['api keys'],
        response: {
          200: {
            type: 'object',
            properties: { success: { type: 'boolean' }, apikeys: { type: 'array', items: keySchema } },
          },
          401: errorSchema,
          403: errorSchema,
        },
      },
    },
    async (req) => ({ success: true, apikeys: await listApiKeys(deps, requireAuth(req)) }),
  );
  app.get(
    `${base}/:id`,
    {
      config: { scope: 'api_keys' },
      schema: {
        tags: ['api keys'],
        params: idParams,
        response: {
          200: { type: 'object', properties: { success: { type: 'boolean' }, apikey: keySchema } },
          ...authErrors,
        },
      },
    },
    async (req) => ({
      success: true,
      apikey: await getApiKey(deps, requireAuth(req), (req.params as { id: number }).id),
    }),
  );
  app.delete(
    `${base}/:id`,
    {
      config: { scope: 'api_keys' },
      schema: {
        tags: ['api keys'],
        params: idParams,
        response: {
          200: { type: 'object', properties: { success: { type: 'boolean' }, msg: { type: 'string' } } },
          ...authErrors,
        },
      },
    },
    async (req) => {
      await revokeApiKey(deps, requireAuth(req), (req.params as { id: number }).id);
      return { success: true, msg: 'API key revoked' };
    },
  );
}
