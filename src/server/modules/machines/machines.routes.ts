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
import {
  authErrors,
  errorSchema,
  idParams,
  maintenanceWindowSchema,
  rowId,
  successReply,
  type IdParams,
} from '../../http/schemas.js';
import {
  listHostMachines,
  listMachine,
  setMinBid,
  showHostMachine,
  unlistMachine,
  type ListPrices,
} from './machines.service.js';
import { deleteMachine } from './machines.delete.js';

export const machineSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    machine_id: { type: 'integer' },
    hostname: { type: 'string' },
    gpu_name: { type: 'string' },
    num_gpus: { type: 'integer' },
    gpu_ram: { type: 'integer', description: 'MB per GPU' },
    cpu_cores: { type: 'integer' },
    cpu_ram: { type: 'integer', description: 'MB' },
    disk_space: { type: 'number', description: 'GB' },
    listed: { type: 'boolean' },
    rented: { type: 'boolean' },
    online: { type: 'boolean' },
    online_state: { type: 'string' },
    last_heartbeat_at: { type: ['number', 'null'] },
    listed_gpu_cost: { type: 'number', description: '$/hour per GPU' },
    listed_storage_cost: { type: 'number', description: '$/GB-month' },
    min_bid: { type: 'number', description: '$/hour, whole machine' },
    end_date: { type: ['number', 'null'] },
    reliability: { type: 'number' },
    verified: { type: 'boolean' },
    current_rentals_running: { type: 'integer' },
    maintenances: { type: 'array', items: maintenanceWindowSchema },
    // The columns of the established CLI's machines table.
    reliability2: { type: 'number', description: 'same as reliability' },
    verification: { type: 'string', description: '"verified" or "unverified"' },
    driver_version: { type: 'string' },
    public_ipaddr: {
      type: ['string', 'null'],
      description: "address renters reach its instances at (its agent's public host); null: none given",
    },
    geolocation: { type: 'string' },
    min_bid_price: { type: 'number', description: '$/hour per GPU: min_bid / num_gpus' },
    gpu_occupancy: { type: 'string', description: 'GPUs rented / GPUs ("0/2", "2/2")' },
    num_reports: { type: 'integer', description: 'always 0: openrig takes no reports' },
    credit_discount_max: { type: 'number', description: 'always 0: openrig gives no long-term discount' },
    listed_inet_up_cost: { type: 'number', description: 'always 0: openrig charges no bandwidth ($/GB)' },
    listed_inet_down_cost: { type: 'number', description: 'always 0: openrig charges no bandwidth ($/GB)' },
  },
} as const;

const prices = {
  price_gpu: { type: 'number', minimum: 0, maximum: 1000, description: '$/hour per GPU, on-demand' },
  price_disk: { type: 'number', minimum: 0, maximum: 1000, description: '$/GB-month' },
  min_bid: {
    type: 'number',
    minimum: 0,
    maximum: 100000,
    description: '$/hour for the machine, interruptible; 0 = no bids',
  },
  end_date: { type: ['number', 'null'], description: 'Unix time the listing ends; null = open-ended' },
} as const;

const oneReply = {
  200: { type: 'object', properties: { success: { type: 'boolean' }, machine: machineSchema } },
  ...authErrors,
} as const;

/** The CLI's `list machine` body, as its schema checks it (price_min_bid is per GPU). */
interface CreateAsksBody {
  machine: number;
  price_gpu?: number | null;
  price_disk?: number | null;
  price_min_bid?: number | null;
  end_date?: number | null;
}

export async function machinesRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.get(
    '/api/v0/machines',
    {
      config: { scope: 'machines' },
      schema: {
        tags: ['machines'],
        summary: "The caller's machines",
        response: {
          200: { type: 'object', properties: { machines: { type: 'array', items: machineSchema } } },
          401: errorSchema,
          403: errorSchema,
        },
      },
    },
    async (req) => ({
      machines: await listHostMachines(deps.db, requireAuth(req).user.id, deps.clock.now()),
    }),
  );
  // One machine as a bare array of one row: existing clients iterate the reply as a table.
  app.get<{ Params: { id: number } }>(
    '/api/v0/machines/:id',
    {
      config: { scope: 'machines' },
      schema: {
        tags: ['machines'],
        summary: "One of the caller's machines, as an array of one row",
        params: idParams,
        querystring: { type: 'object', properties: { owner: { type: 'string' } } },
        response: { 200: { type: 'array', items: machineSchema }, ...authErrors },
      },
    },
    async (req) => [
      await showHostMachine(deps.db, requireAuth(req).user.id, req.params.id, deps.clock.now()),
    ],
  );
  app.put<{ Params: IdParams; Body: ListPrices | undefined }>(
    '/api/v0/machines/:id/list',
    {
      config: { scope: 'machines' },
      schema: {
        tags: ['machines'],
        summary: 'List a machine for rent (make it an offer) at these prices',
        params: idParams,
        body: { type: 'object', additionalProperties: false, properties: prices },
        response: oneReply,
      },
    },
    async (req) => ({
      success: true,
      machine: await listMachine(deps, requireAuth(req).user.id, req.params.id, req.body ?? {}),
    }),
  );
  app.put<{ Params: IdParams }>(
    '/api/v0/machines/:id/unlist',
    {
      config: { scope: 'machines' },
      schema: {
        tags: ['machines'],
        summary: 'Unlist a machine (no new rentals; a current one goes on)',
        params: idParams,
        response: oneReply,
      },
    },
    async (req) => ({
      success: true,
      machine: await unlistMachine(deps.db, requireAuth(req).user.id, req.params.id),
    }),
  );
  // The CLI's `list machine`: PUT /machines/create_asks/ {machine, price_gpu, price_disk, price_min_bid, end_date, …}.
  app.put<{ Body: CreateAsksBody }>(
    '/api/v0/machines/create_asks',
    {
      config: { scope: 'machines' },
      schema: {
        tags: ['machines'],
        summary: 'List a machine (CLI form)',
        body: {
          type: 'object',
          required: ['machine'],
          additionalProperties: true,
          properties: {
            machine: rowId,
            // The CLI sends null for every option not given: null keeps the current value.
            price_gpu: { ...prices.price_gpu, type: ['number', 'null'] },
            price_disk: { ...prices.price_disk, type: ['number', 'null'] },
            price_min_bid: {
              ...prices.min_bid,
              type: ['number', 'null'],
              description: '$/hour per GPU, interruptible (the CLI defines -b so); 0 = no bids',
            },
            end_date: prices.end_date,
          },
        },
        response: oneReply,
      },
    },
    async (req) => {
      const b = req.body;
      return {
        success: true,
        machine: await listMachine(deps, requireAuth(req).user.id, b.machine, {
          price_gpu: b.price_gpu ?? undefined,
          price_disk: b.price_disk ?? undefined,
          min_bid_per_gpu: b.price_min_bid ?? undefined,
          end_date: b.end_date,
        }),
      };
    },
  );
  // The CLI's `set min-bid ID --price P`: PUT /machines/{id}/minbid/ {client_id, price}, per GPU.
  app.put<{ Params: IdParams; Body: { price?: number | null } }>(
    '/api/v0/machines/:id/minbid',
    {
      config: { scope: 'machines' },
      schema: {
        tags: ['machines'],
        summary: "Set a machine's minimum bid, per GPU, without listing or unlisting it",
        params: idParams,
        body: {
          type: 'object',
          additionalProperties: true,
          properties: {
            price: {
              ...prices.min_bid,
              type: ['number', 'null'],
              description: '$/hour per GPU; the machine takes bids from this × its GPUs; 0 = no bids',
            },
          },
        },
        response: oneReply,
      },
    },
    async (req) => ({
      success: true,
      machine: await setMinBid(deps.db, requireAuth(req).user.id, req.params.id, req.body?.price),
    }),
  );
  // The CLI's `delete machine ID`: POST /machines/{id}/force_delete/ with `{}`; it prints `msg`
  // when `success` is false and the reply text otherwise.
  app.post<{ Params: IdParams }>(
    '/api/v0/machines/:id/force_delete',
    {
      config: { scope: 'machines', access: 'write' },
      schema: {
        tags: ['machines'],
        summary:
          "Delete one of the caller's machines: refused (409) while a client's instance on it is live; the host's own instances on it are destroyed and its maintenance windows cancelled",
        params: idParams,
        body: { type: ['object', 'null'] },
        response: {
          200: successReply({
            machine_id: { type: 'integer' },
            instances_destroyed: { type: 'integer' },
            maintenances_cancelled: { type: 'integer' },
          }),
          ...authErrors,
          409: errorSchema,
        },
      },
    },
    async (req) => deleteMachine(deps, requireAuth(req).user.id, req.params.id),
  );
  // The CLI's `unlist machine`.
  app.delete<{ Params: IdParams }>(
    '/api/v0/machines/:id/asks',
    {
      config: { scope: 'machines' },
      schema: {
        tags: ['machines'],
        summary: 'Unlist a machine (CLI form)',
        params: idParams,
        response: oneReply,
      },
    },
    async (req) => ({
      success: true,
      machine: await unlistMachine(deps.db, requireAuth(req).user.id, req.params.id),
    }),
  );
}
