// Machines of hosts: GET /api/v0/machines/ (docs/market.md).
// Listing and unlisting: PUT /api/v0/machines/{id}/list/ {price_gpu, price_disk, min_bid, end_date}
// and PUT /api/v0/machines/{id}/unlist/; the CLI's forms (PUT /machines/create_asks/ and
// DELETE /machines/{id}/asks/) do the same, but for the minimum bid, which the CLI gives per GPU
// (price_min_bid) and /list/ for the whole machine (min_bid). PUT /machines/{id}/minbid/ sets the
// minimum bid alone, per GPU (the CLI's `set min-bid`). POST /machines/{id}/force_delete/ deletes
// a machine (machines.delete.ts).
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/machines.js';
import {
  listHostMachines,
  listMachine as list,
  setMinBid as setBid,
  showHostMachine,
  unlistMachine as unlist,
} from './machines.service.js';
import { deleteMachine } from './machines.delete.js';

export const listMachines = route(C.listMachines)({
  config: { scope: 'machines' },
  handler: (deps) => async (req) => ({
    machines: await listHostMachines(deps.db, requireAuth(req).user.id, deps.clock.now()),
    verification_rule: deps.config.agent.verificationRule,
  }),
});

/** One machine as a bare array of one row: existing clients iterate the reply as a table. */
export const showMachine = route(C.showMachine)({
  config: { scope: 'machines' },
  handler: (deps) => async (req) => [
    await showHostMachine(deps.db, requireAuth(req).user.id, req.params.id, deps.clock.now()),
  ],
});

export const listMachine = route(C.listMachine)({
  config: { scope: 'machines' },
  handler: (deps) => async (req) => ({
    success: true,
    machine: await list(deps, requireAuth(req).user.id, req.params.id, req.body ?? {}),
    verification_rule: deps.config.agent.verificationRule,
  }),
});

export const unlistMachine = route(C.unlistMachine)({
  config: { scope: 'machines' },
  handler: (deps) => async (req) => ({
    success: true,
    machine: await unlist(deps.db, requireAuth(req).user.id, req.params.id),
  }),
});

/** The CLI's `list machine`: {machine, price_gpu, price_disk, price_min_bid, end_date, …}. */
export const createAsks = route(C.createAsks)({
  config: { scope: 'machines' },
  handler: (deps) => async (req) => {
    const b = req.body;
    return {
      success: true,
      machine: await list(deps, requireAuth(req).user.id, b.machine, {
        price_gpu: b.price_gpu ?? undefined,
        price_disk: b.price_disk ?? undefined,
        min_bid_per_gpu: b.price_min_bid ?? undefined,
        end_date: b.end_date,
      }),
      verification_rule: deps.config.agent.verificationRule,
    };
  },
});

/** The CLI's `set min-bid ID --price P`: {client_id, price}, per GPU. */
export const setMinBid = route(C.setMinBid)({
  config: { scope: 'machines' },
  handler: (deps) => async (req) => ({
    success: true,
    machine: await setBid(deps.db, requireAuth(req).user.id, req.params.id, req.body?.price),
  }),
});

/** The CLI's `delete machine ID` (machines.delete.ts). */
export const forceDeleteMachine = route(C.forceDeleteMachine)({
  config: { scope: 'machines', access: 'write' },
  handler: (deps) => async (req) => deleteMachine(deps, requireAuth(req).user.id, req.params.id),
});

/** The CLI's `unlist machine`. */
export const deleteAsks = route(C.deleteAsks)({
  config: { scope: 'machines' },
  handler: (deps) => async (req) => ({
    success: true,
    machine: await unlist(deps.db, requireAuth(req).user.id, req.params.id),
  }),
});

export const machineRoutes = [
  listMachines,
  showMachine,
  listMachine,
  unlistMachine,
  createAsks,
  setMinBid,
  forceDeleteMachine,
  deleteAsks,
];

export async function machinesRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, machineRoutes);
}
