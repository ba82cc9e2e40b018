// Local volumes, on /api/v0/volumes… (docs/volumes.md). Listing and unlisting volume space are a
// host's (scope `machines`); searching, making, listing and deleting volumes a renter's (scope
// `instances`).
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/volumes.js';
import {
  createVolume as create,
  deleteVolume as remove,
  listVolumeSpace,
  searchVolumeOffers,
  showVolumes as show,
  unlistVolumeSpace,
} from './volumes.service.js';
import { cloneVolume as clone } from './volumes.clone.js';

export const listVolume = route(C.listVolume)({
  config: { scope: 'machines', errorsCarrySuccess: true },
  handler: (deps) => async (req) => {
    const r = await listVolumeSpace(deps, requireAuth(req), req.body);
    return { success: true, msg: r.msg, volume_asks: r.asks };
  },
});

export const unlistVolume = route(C.unlistVolume)({
  config: { scope: 'machines', errorsCarrySuccess: true },
  handler: (deps) => async (req) => ({
    success: true,
    msg: await unlistVolumeSpace(deps, requireAuth(req), req.body.id),
  }),
});

export const searchVolumes = route(C.searchVolumes)({
  config: { scope: 'instances', access: 'read' },
  // The official CLI refuses any other Content-Type than exactly application/json (no charset).
  handler: (deps) => async (req, reply) =>
    reply
      .header('content-type', 'application/json')
      .serializer((p: unknown) => JSON.stringify(p))
      .send(await searchVolumeOffers(deps, req.body)),
});

export const createVolume = route(C.createVolume)({
  config: { scope: 'instances', errorsCarrySuccess: true },
  handler: (deps) => async (req) => {
    const r = await create(deps, requireAuth(req), req.body);
    return { success: true, msg: r.msg, volume_id: r.id };
  },
});

export const showVolumes = route(C.showVolumes)({
  config: { scope: 'instances', access: 'read' },
  handler: (deps) => async (req) => ({ volumes: await show(deps, requireAuth(req), req.query.type) }),
});

export const deleteVolume = route(C.deleteVolume)({
  config: { scope: 'instances', errorsCarrySuccess: true },
  handler: (deps) => async (req) => ({
    success: true,
    msg: await remove(deps, requireAuth(req), req.query.id),
  }),
});

export const cloneVolume = route(C.cloneVolume)({
  config: { scope: 'instances', errorsCarrySuccess: true },
  handler: (deps) => async (req) => ({ success: true, ...(await clone(deps, requireAuth(req), req.body)) }),
});

export const volumeRoutes = [
  listVolume,
  unlistVolume,
  searchVolumes,
  createVolume,
  showVolumes,
  deleteVolume,
  cloneVolume,
];

export async function volumesRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, volumeRoutes);
}
