// Scoped API keys: POST/GET /api/v0/auth/apikeys/, GET/DELETE /api/v0/auth/apikeys/:id.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/api-keys.js';
import {
  createApiKey as create,
  getApiKey,
  listApiKeys as list,
  revokeApiKey as revoke,
} from './api-keys.service.js';

export const createApiKey = route(C.createApiKey)({
  config: { scope: 'api_keys' },
  handler: (deps) => async (req) => create(deps, requireAuth(req), req.body ?? {}),
});

export const listApiKeys = route(C.listApiKeys)({
  config: { scope: 'api_keys' },
  handler: (deps) => async (req) => ({ success: true, apikeys: await list(deps, requireAuth(req)) }),
});

export const showApiKey = route(C.showApiKey)({
  config: { scope: 'api_keys' },
  handler: (deps) => async (req) => ({
    success: true,
    apikey: await getApiKey(deps, requireAuth(req), req.params.id),
  }),
});

export const revokeApiKey = route(C.revokeApiKey)({
  config: { scope: 'api_keys' },
  handler: (deps) => async (req) => {
    await revoke(deps, requireAuth(req), req.params.id);
    return { success: true, msg: 'API key revoked' };
  },
});

export const apiKeyRoutes = [createApiKey, listApiKeys, showApiKey, revokeApiKey];

export async function apiKeysRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, apiKeyRoutes);
}
