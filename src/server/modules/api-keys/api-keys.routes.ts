import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { PLAIN_TEXT_PATTERN } from '../../http/plain-text.js';
import { authErrors, errorSchema, idParams, type IdParams } from '../../http/schemas.js';
import { createApiKey, getApiKey, listApiKeys, revokeApiKey } from './api-keys.service.js';

const permissionsSchema = {
  description:
    '"full" (default), "read_only", {family: "read"|"write"} (families: user, api_keys, ssh_keys, offers, instances, machines, maintenance, tfa, billing), or the marketplace format {"api": {category: {}}} (categories: instance_read, instance_write, user_read, user_write, billing_read, billing_write, machine_read, machine_write, misc); see docs/compatibility.md',
  anyOf: [
    { type: 'string', enum: ['full', 'read_only'] },
    {
      type: 'object',
      required: ['api'],
      properties: { api: { type: 'object', additionalProperties: { type: 'object' } } },
    },
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
      description: 'As given at creation (either format); "full" when none were given',
    },
    team_id: { type: ['integer', 'null'] },
    created_at: { type: 'number' },
    last_used_at: { type: ['number', 'null'] },
  },
} as const;

/** The body of a key creation; `permissions` is checked by the service (api-keys.service.ts). */
interface CreateKeyBody {
  name?: string | null;
  permissions?: unknown;
}

export async function apiKeysRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  const base = '/api/v0/auth/apikeys';
  app.post<{ Body: CreateKeyBody | undefined }>(
    base,
    {
      config: { scope: 'api_keys' },
      schema: {
        tags: ['api keys'],
        summary: 'Create an API key; the key is in this reply only',
        body: {
          type: 'object',
          properties: {
            name: { type: ['string', 'null'], maxLength: 100, pattern: PLAIN_TEXT_PATTERN },
            permissions: permissionsSchema,
            key_params: { type: ['string', 'null'], description: 'accepted and ignored' },
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
    async (req) => createApiKey(deps, requireAuth(req), req.body ?? {}),
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
  app.get<{ Params: IdParams }>(
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
      apikey: await getApiKey(deps, requireAuth(req), req.params.id),
    }),
  );
  app.delete<{ Params: IdParams }>(
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
      await revokeApiKey(deps, requireAuth(req), req.params.id);
      return { success: true, msg: 'API key revoked' };
    },
  );
}
