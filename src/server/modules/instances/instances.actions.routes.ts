// Changing instances: stop, start and label one; recreate its container from a new configuration;
// destroy it; the same for several at once; its SSH keys. The instance_api_key reaches only the
// routes marked `instanceKey: true` (start/stop/destroy of its own instance).
import { requireAuth } from '../../http/auth.js';
import { route } from '../../http/route.js';
import { quoteValue } from '../../errors.js';
import { isIntendedStatus } from '../../../contract/instance-states.js';
import * as C from '../../../contract/schemas/instances.js';
import {
  attachSshKey as attach,
  bulkChangeState as bulkChange,
  bulkDestroy as bulkDestroyIds,
  checkIds,
  destroyInstance as destroy,
  detachSshKey as detach,
  instanceSshKeys as sshKeysOf,
  updateInstance,
} from './instances.actions.js';
import { InstanceErrors } from './instances.errors.js';
import { updateInstanceConfig as updateConfig } from './instances.update.js';
import { changeBid as changeBidOf } from './instances.bid.js';

export const changeInstanceState = route(C.changeInstanceState)({
  config: { scope: 'instances', instanceKey: true, errorsCarrySuccess: true },
  handler: (deps) => async (req) => ({
    success: true,
    msg: await updateInstance(deps, requireAuth(req), req.params.id, req.body ?? {}),
  }),
});

export const updateInstanceConfig = route(C.updateInstanceConfig)({
  config: { scope: 'instances', errorsCarrySuccess: true },
  handler: (deps) => async (req) => updateConfig(deps, requireAuth(req), req.params.id, req.body),
});

export const destroyInstance = route(C.destroyInstance)({
  config: { scope: 'instances', instanceKey: true, errorsCarrySuccess: true },
  handler: (deps) => async (req) => {
    const id = req.params.id;
    const r = await destroy(deps, requireAuth(req), id);
    return {
      success: true,
      msg: r.changed ? `Instance ${id} destroyed` : `Instance ${id} was already destroyed`,
    };
  },
});

export const bulkChangeState = route(C.bulkChangeState)({
  config: { scope: 'instances', errorsCarrySuccess: true },
  handler: (deps) => async (req) => {
    const b = req.body ?? {};
    if (!isIntendedStatus(b.state))
      throw InstanceErrors.badRequest(`state must be "stopped" or "running", not ${quoteValue(b.state)}`);
    return bulkChange(deps, requireAuth(req), checkIds('ids', b.ids), b.state);
  },
});

export const bulkDestroy = route(C.bulkDestroy)({
  config: { scope: 'instances', errorsCarrySuccess: true },
  handler: (deps) => async (req) => {
    const b = req.body ?? {};
    return bulkDestroyIds(deps, requireAuth(req), checkIds('instance_ids', b.instance_ids ?? b.ids));
  },
});

export const instanceSshKeys = route(C.instanceSshKeys)({
  config: { scope: 'instances', errorsCarrySuccess: true },
  handler: (deps) => async (req) => {
    const keys = await sshKeysOf(deps, requireAuth(req), req.params.id);
    return { success: true, ssh_keys: keys.map((k) => ({ public_key: k })) };
  },
});

export const attachSshKey = route(C.attachSshKey)({
  config: { scope: 'instances', errorsCarrySuccess: true },
  handler: (deps) => async (req) => {
    const id = req.params.id;
    const r = await attach(deps, requireAuth(req), id, req.body.ssh_key);
    return { success: true, msg: `SSH key attached to instance ${id}`, key_id: r.key_id };
  },
});

export const detachSshKey = route(C.detachSshKey)({
  config: { scope: 'instances', errorsCarrySuccess: true },
  handler: (deps) => async (req) => {
    const p = req.params;
    await detach(deps, requireAuth(req), p.id, p.key_id);
    return { success: true, msg: `SSH key ${p.key_id} detached from instance ${p.id}` };
  },
});

export const changeBid = route(C.changeBid)({
  config: { scope: 'instances', errorsCarrySuccess: true },
  handler: (deps) => async (req) =>
    changeBidOf(deps, requireAuth(req), req.params.id, req.body?.price ?? null),
});
