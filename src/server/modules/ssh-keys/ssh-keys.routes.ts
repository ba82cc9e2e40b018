// The account's SSH public keys: POST/GET /api/v0/ssh/, PUT/DELETE /api/v0/ssh/:id.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/ssh-keys.js';
import {
  addSshKey as add,
  deleteSshKey as remove,
  listSshKeys as list,
  replaceSshKey as replace,
} from './ssh-keys.service.js';

export const addSshKey = route(C.addSshKey)({
  config: { scope: 'ssh_keys' },
  handler: (deps) => async (req) => {
    const k = await add(deps, requireAuth(req), req.body.ssh_key);
    return { success: true, key: k, ...k };
  },
});

export const listSshKeys = route(C.listSshKeys)({
  config: { scope: 'ssh_keys' },
  handler: (deps) => async (req) => ({ success: true, ssh_keys: await list(deps, requireAuth(req).user.id) }),
});

export const replaceSshKey = route(C.replaceSshKey)({
  config: { scope: 'ssh_keys' },
  handler: (deps) => async (req) => {
    const k = await replace(deps, requireAuth(req), req.params.id, req.body.ssh_key);
    return { success: true, key: k, ...k };
  },
});

export const deleteSshKey = route(C.deleteSshKey)({
  config: { scope: 'ssh_keys' },
  handler: (deps) => async (req) => {
    await remove(deps, requireAuth(req), req.params.id);
    return { success: true, msg: 'SSH key deleted' };
  },
});

export const sshKeyRoutes = [addSshKey, listSshKeys, replaceSshKey, deleteSshKey];

export async function sshKeysRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, sshKeyRoutes);
}
