import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { authErrors, errorSchema, idParams, type IdParams } from '../../http/schemas.js';
import { addSshKey, deleteSshKey, listSshKeys, replaceSshKey } from './ssh-keys.service.js';

export const sshKeySchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    ssh_key: { type: 'string' },
    public_key: { type: 'string' },
    key_type: { type: 'string' },
    fingerprint: { type: 'string' },
    comment: { type: 'string' },
    created_at: { type: 'number' },
  },
} as const;

const body = {
  type: 'object',
  required: ['ssh_key'],
  properties: { ssh_key: { type: 'string', maxLength: 16384 } },
} as const;

const one = {
  type: 'object',
  properties: { success: { type: 'boolean' }, key: sshKeySchema, ...sshKeySchema.properties },
} as const;

/** The body of a key registration or replacement, as `body` checks it. */
interface SshKeyBody {
  ssh_key: string;
}

export async function sshKeysRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.post<{ Body: SshKeyBody }>(
    '/api/v0/ssh',
    {
      config: { scope: 'ssh_keys' },
      schema: {
        tags: ['ssh keys'],
        summary: 'Register an OpenSSH public key',
        body,
        response: { 200: one, ...authErrors },
      },
    },
    async (req) => {
      const k = await addSshKey(deps, requireAuth(req), req.body.ssh_key);
      return { success: true, key: k, ...k };
    },
  );
  app.get(
    '/api/v0/ssh',
    {
      config: { scope: 'ssh_keys' },
      schema: {
        tags: ['ssh keys'],
        response: {
          200: {
            type: 'object',
            properties: { success: { type: 'boolean' }, ssh_keys: { type: 'array', items: sshKeySchema } },
          },
          401: errorSchema,
          403: errorSchema,
        },
      },
    },
    async (req) => ({ success: true, ssh_keys: await listSshKeys(deps, requireAuth(req).user.id) }),
  );
  app.put<{ Params: IdParams; Body: SshKeyBody }>(
    '/api/v0/ssh/:id',
    {
      config: { scope: 'ssh_keys' },
      schema: { tags: ['ssh keys'], params: idParams, body, response: { 200: one, ...authErrors } },
    },
    async (req) => {
      const k = await replaceSshKey(deps, requireAuth(req), req.params.id, req.body.ssh_key);
      return { success: true, key: k, ...k };
    },
  );
  app.delete<{ Params: IdParams }>(
    '/api/v0/ssh/:id',
    {
      config: { scope: 'ssh_keys' },
      schema: {
        tags: ['ssh keys'],
        params: idParams,
        response: {
          200: { type: 'object', properties: { success: { type: 'boolean' }, msg: { type: 'string' } } },
          ...authErrors,
        },
      },
    },
    async (req) => {
      await deleteSshKey(deps, requireAuth(req), req.params.id);
      return { success: true, msg: 'SSH key deleted' };
    },
  );
}
