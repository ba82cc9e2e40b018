// Reading instances: the caller's list (v0 and the paged v1), the v1 filters' values, and one
// instance, the read every client polls while it waits for an instance to run.
import { keyJoinedRow, requireAuth, type KeyJoinedRead } from '../../http/auth.js';
import { route } from '../../http/route.js';
import * as C from '../../../contract/schemas/instances.js';
import {
  getInstance,
  instanceFilterValues,
  listInstances as list,
  listInstancesV1 as listV1,
} from './instances.query.js';
import { liveInstanceQuery, type InstanceWithWindows } from './instances.repo.js';

/**
 * The polled read, made with the API key lookup where that saves a round trip (KeyJoinedRead in
 * http/auth.ts), for an id written as the route's schema takes it unchanged (digits, no leading
 * zero, a safe integer); any other id is left to the schema and the usual read.
 */
export const polledInstance: KeyJoinedRead = {
  args(req, now) {
    const id = (req.params as { id?: unknown }).id;
    if (typeof id !== 'string' || !/^[1-9][0-9]{0,15}$/.test(id) || !Number.isSafeInteger(Number(id)))
      return null;
    return [Number(id), now];
  },
  build: (on, userId, id, now) => liveInstanceQuery(on, userId, id as number, now as number),
};

export const listInstances = route(C.listInstances)({
  config: { scope: 'instances' },
  handler: (deps) => async (req) => {
    const instances = await list(deps.store, requireAuth(req).user.id, deps.clock.now());
    return { instances_found: instances.length, instances };
  },
});

export const listInstancesV1 = route(C.listInstancesV1)({
  config: { scope: 'instances' },
  handler: (deps) => async (req) => listV1(deps, requireAuth(req).user.id, req.query, deps.clock.now()),
});

export const instanceFilters = route(C.instanceFilters)({
  config: { scope: 'instances' },
  handler: (deps) => async (req) => ({
    filters: await instanceFilterValues(deps.db, requireAuth(req).user.id),
  }),
});

export const showInstance = route(C.showInstance)({
  config: { scope: 'instances', keyJoinedRead: polledInstance },
  handler: (deps) => async (req) => {
    const id = req.params.id;
    const joined = keyJoinedRow(req, polledInstance);
    const row = joined?.args[0] === id ? (joined.row as InstanceWithWindows | null) : undefined;
    return {
      instances: await getInstance(deps.store, requireAuth(req).user.id, id, deps.clock.now(), row),
    };
  },
});
