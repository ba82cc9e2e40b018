// The official CLI's env-var calls, all on /api/v0/secrets/ (docs/env-vars.md): show env-vars
// (GET), create env-var (POST {key, value}), update env-var (PUT {key, value}) and delete env-var
// (DELETE {key}, a JSON body). The `user` family: read for GET, write for the rest.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { authErrors, errorSchema, successSchema } from '../../http/schemas.js';
import { createEnvVar, deleteEnvVar, listEnvVars, updateEnvVar } from './env-vars.service.js';
import { ENV_VAR_LIMITS as L } from '../../../contract/env-var-rules.js';

const key = {
  type: 'string',
  description: `the variable name: [A-Za-z_][A-Za-z0-9_]*, at most ${L.name} characters; names openrig sets in every instance (CONTAINER_ID, OPENRIG_…) are refused`,
} as const;
const value = { type: 'string', description: `at most ${L.value} characters` } as const;

/** Checked further by the service (env-vars.names.ts), whose messages name the rule broken. */
const keyValue = {
  type: 'object',
  required: ['key', 'value'],
  properties: { key, value },
  additionalProperties: true,
} as const;

interface Body {
  [field: string]: unknown;
}

export async function envVarsRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.get(
    '/api/v0/secrets',
    {
      config: { scope: 'user' },
      schema: {
        tags: ['env-vars'],
        summary: "Your account's environment variables with their values",
        response: {
          200: {
            type: 'object',
            properties: {
              success: { type: 'boolean' },
              secrets: {
                type: 'object',
                additionalProperties: { type: 'string' },
                description: 'NAME: value',
              },
            },
          },
          ...authErrors,
        },
      },
    },
    async (req) => ({ success: true, secrets: await listEnvVars(deps, requireAuth(req)) }),
  );
  app.post<{ Body: Body }>(
    '/api/v0/secrets',
    {
      config: { scope: 'user' },
      schema: {
        tags: ['env-vars'],
        summary: `Add an environment variable that every instance you create from now on gets (at most ${L.perAccount})`,
        body: keyValue,
        response: { 200: successSchema, ...authErrors, 409: errorSchema },
      },
    },
    async (req) => ({ success: true, msg: await createEnvVar(deps, requireAuth(req), req.body) }),
  );
  app.put<{ Body: Body }>(
    '/api/v0/secrets',
    {
      config: { scope: 'user' },
      schema: {
        tags: ['env-vars'],
        summary: 'Change the value of one of your environment variables (instances created from now on)',
        body: keyValue,
        response: { 200: successSchema, ...authErrors },
      },
    },
    async (req) => ({ success: true, msg: await updateEnvVar(deps, requireAuth(req), req.body) }),
  );
  app.delete<{ Body: Body }>(
    '/api/v0/secrets',
    {
      config: { scope: 'user' },
      schema: {
        tags: ['env-vars'],
        summary: 'Delete one of your environment variables (instances created from now on)',
        body: { type: 'object', required: ['key'], properties: { key }, additionalProperties: true },
        response: { 200: successSchema, ...authErrors },
      },
    },
    async (req) => ({ success: true, msg: await deleteEnvVar(deps, requireAuth(req), req.body) }),
  );
}
