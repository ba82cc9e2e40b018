// The instances module's routes, one file per concern:
//   instances.create.routes.ts   renting an offer (PUT/POST /asks/:id)
//   instances.list.routes.ts     the lists, the v1 filters, one instance (the polled read)
//   instances.actions.routes.ts  stop/start/label, update, destroy, bulk forms, SSH keys
//   instances.remote.routes.ts   logs, command, reboot, recycle and their results
// Each route's schema is its contract in src/contract/schemas/instances.ts.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { registerRoutes } from '../../http/route.js';
import { createInstance } from './instances.create.routes.js';
import { instanceFilters, listInstances, listInstancesV1, showInstance } from './instances.list.routes.js';
import {
  attachSshKey,
  bulkChangeState,
  bulkDestroy,
  changeBid,
  changeInstanceState,
  destroyInstance,
  detachSshKey,
  instanceSshKeys,
  updateInstanceConfig,
} from './instances.actions.routes.js';
import {
  rebootInstance,
  recycleInstance,
  remoteResult,
  requestLogs,
  runCommand,
} from './instances.remote.routes.js';

export { polledInstance } from './instances.list.routes.js';

/** In registration order (the OpenAPI document lists them so). */
export const instanceRoutes = [
  createInstance,
  listInstances,
  listInstancesV1,
  instanceFilters,
  showInstance,
  changeInstanceState,
  updateInstanceConfig,
  changeBid,
  destroyInstance,
  bulkChangeState,
  bulkDestroy,
  instanceSshKeys,
  attachSshKey,
  detachSshKey,
  requestLogs,
  runCommand,
  rebootInstance,
  recycleInstance,
  remoteResult,
];

export async function instancesRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, instanceRoutes);
}
