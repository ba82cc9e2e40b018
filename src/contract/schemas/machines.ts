// Machines of hosts: the list, one machine, listing and unlisting (also in the CLI's forms), the
// minimum bid and deleting a machine.
import {
  authErrors,
  errorSchema,
  idParams,
  maintenanceWindowSchema,
  ownerParam,
  rowId,
  successReply,
} from './common.js';

const tags = ['machines'] as const;

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
    verification: {
      type: 'string',
      description: '"verified", "unverified" or "deverified" (GET /api/v0/machines/ID/verification says why)',
    },
    driver_version: { type: 'string' },
    public_ipaddr: {
      type: ['string', 'null'],
      description: "address renters reach its instances at (its agent's public host); null: none given",
    },
    runtime: {
      type: ['string', 'null'],
      enum: ['process', 'docker', null],
      description: "how its agent runs instances ('process': host processes, no isolation); null: not said",
    },
    volume_method: {
      type: ['string', 'null'],
      enum: ['ext4-loop', 'directory', null],
      description:
        "how its agent keeps volumes ('ext4-loop': a size-limited image per volume; 'directory': size not enforced); null: not said",
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

/** The operator's rule for how an unverified machine becomes verified (OPENRIG_VERIFICATION_RULE). */
const verificationRule = {
  type: 'string',
  description:
    "how an unverified machine becomes verified on this installation (the operator's rule); until then renters' default searches (openrig's CLI, the official client) leave it out",
} as const;

export const machineReply = {
  type: 'object',
  properties: { success: { type: 'boolean' }, machine: machineSchema, verification_rule: verificationRule },
} as const;

const oneReply = { 200: machineReply, ...authErrors } as const;

export const machinesList = {
  type: 'object',
  properties: { machines: { type: 'array', items: machineSchema }, verification_rule: verificationRule },
} as const;

export const listMachines = {
  method: 'GET',
  url: '/api/v0/machines',
  schema: {
    tags,
    summary: "The caller's machines",
    response: { 200: machinesList, 401: errorSchema, 403: errorSchema },
  },
} as const;

/** One machine as a bare array of one row: existing clients iterate the reply as a table. */
export const showMachine = {
  method: 'GET',
  url: '/api/v0/machines/:id',
  schema: {
    tags,
    summary: "One of the caller's machines, as an array of one row",
    params: idParams,
    querystring: { type: 'object', properties: { owner: ownerParam } },
    response: { 200: { type: 'array', items: machineSchema }, ...authErrors },
  },
} as const;

export const listMachineBody = { type: 'object', additionalProperties: false, properties: prices } as const;

export const listMachine = {
  method: 'PUT',
  url: '/api/v0/machines/:id/list',
  schema: {
    tags,
    summary: 'List a machine for rent (make it an offer) at these prices',
    params: idParams,
    body: listMachineBody,
    response: oneReply,
  },
} as const;

export const unlistMachine = {
  method: 'PUT',
  url: '/api/v0/machines/:id/unlist',
  schema: {
    tags,
    summary: 'Unlist a machine (no new rentals; a current one goes on)',
    params: idParams,
    response: oneReply,
  },
} as const;

/** The CLI's `list machine` (price_min_bid is per GPU). */
export const createAsks = {
  method: 'PUT',
  url: '/api/v0/machines/create_asks',
  schema: {
    tags,
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
} as const;

/** The CLI's `set min-bid ID --price P`: {client_id, price}, per GPU. */
export const setMinBid = {
  method: 'PUT',
  url: '/api/v0/machines/:id/minbid',
  schema: {
    tags,
    summary: "Set a machine's minimum bid, per GPU, without listing or unlisting it",
    params: idParams,
    body: {
      type: 'object',
      additionalProperties: true,
      required: ['price'],
      properties: {
        price: {
          ...prices.min_bid,
          type: 'number',
          description: '$/hour per GPU; the machine takes bids from this × its GPUs; 0 = no bids',
        },
      },
    },
    response: oneReply,
  },
} as const;

/** The machine is deleted, with what went with it. */
export const deleteMachineReply = successReply({
  machine_id: { type: 'integer' },
  instances_destroyed: { type: 'integer' },
  maintenances_cancelled: { type: 'integer' },
});

/**
 * The CLI's `delete machine ID`: POST with `{}`; it prints `msg` when `success` is false and the
 * reply text otherwise.
 */
export const forceDeleteMachine = {
  method: 'POST',
  url: '/api/v0/machines/:id/force_delete',
  schema: {
    tags,
    summary:
      "Delete one of the caller's machines: refused (409) while a client's instance on it is live; the host's own instances on it are destroyed and its maintenance windows cancelled",
    params: idParams,
    body: { type: ['object', 'null'] },
    response: { 200: deleteMachineReply, ...authErrors, 409: errorSchema },
  },
} as const;

/** The CLI's `unlist machine`. */
export const deleteAsks = {
  method: 'DELETE',
  url: '/api/v0/machines/:id/asks',
  schema: {
    tags,
    summary: 'Unlist a machine (CLI form)',
    params: idParams,
    response: oneReply,
  },
} as const;
