// The account's environment variables, all on /api/v0/secrets/ (docs/env-vars.md). The `user`
// family: read for GET, write for the rest.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/env-vars.js';
import {
  createEnvVar as create,
  deleteEnvVar as remove,
  listEnvVars as list,
  updateEnvVar as update,
} from './env-vars.service.js';

export const listEnvVars = route(C.listEnvVars)({
  config: { scope: 'user' },
  handler: (deps) => async (req) => ({ success: true, secrets: await list(deps, requireAuth(req)) }),
});

export const createEnvVar = route(C.createEnvVar)({
  config: { scope: 'user' },
  handler: (deps) => async (req) => ({ success: true, msg: await create(deps, requireAuth(req), req.body) }),
});

export const updateEnvVar = route(C.updateEnvVar)({
  config: { scope: 'user' },
  handler: (deps) => async (req) => ({ success: true, msg: await update(deps, requireAuth(req), req.body) }),
});

export const deleteEnvVar = route(C.deleteEnvVar)({
  config: { scope: 'user' },
  handler: (deps) => async (req) => ({ success: true, msg: await remove(deps, requireAuth(req), req.body) }),
});

export const envVarRoutes = [listEnvVars, createEnvVar, updateEnvVar, deleteEnvVar];

export async function envVarsRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, envVarRoutes);
}
