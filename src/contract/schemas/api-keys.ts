// Scoped API keys: create (the key is in that reply only), list, show, revoke.
import { authErrors, errorSchema, idParams, PLAIN_TEXT_PATTERN } from './common.js';

const tags = ['api keys'] as const;
const base = '/api/v0/auth/apikeys';

export const permissionsSchema = {
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

export const apiKeySchema = {
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

/** The key created: its row, and the key itself (in this reply only). */
export const createdApiKey = {
  type: 'object',
  properties: { ...apiKeySchema.properties, success: { type: 'boolean' }, key: { type: 'string' } },
} as const;

/** `permissions` is checked by the server, whose messages name the rule broken. */
export const createApiKey = {
  method: 'POST',
  url: base,
  schema: {
    tags,
    summary: 'Create an API key; the key is in this reply only',
    body: {
      type: 'object',
      properties: {
        name: { type: ['string', 'null'], maxLength: 100, pattern: PLAIN_TEXT_PATTERN },
        permissions: permissionsSchema,
        key_params: { type: ['string', 'null'], description: 'accepted and ignored' },
      },
    },
    response: { 200: createdApiKey, ...authErrors },
  },
} as const;

export const apiKeysList = {
  type: 'object',
  properties: { success: { type: 'boolean' }, apikeys: { type: 'array', items: apiKeySchema } },
} as const;

export const listApiKeys = {
  method: 'GET',
  url: base,
  schema: { tags, response: { 200: apiKeysList, 401: errorSchema, 403: errorSchema } },
} as const;

export const showApiKey = {
  method: 'GET',
  url: `${base}/:id`,
  schema: {
    tags,
    params: idParams,
    response: {
      200: { type: 'object', properties: { success: { type: 'boolean' }, apikey: apiKeySchema } },
      ...authErrors,
    },
  },
} as const;

export const revokeApiKey = {
  method: 'DELETE',
  url: `${base}/:id`,
  schema: {
    tags,
    params: idParams,
    response: {
      200: { type: 'object', properties: { success: { type: 'boolean' }, msg: { type: 'string' } } },
      ...authErrors,
    },
  },
} as const;
