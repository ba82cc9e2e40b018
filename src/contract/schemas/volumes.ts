// Local volumes: disk on one machine that outlives the instances using it (docs/volumes.md).
// Hosts list volume space on a machine (POST /volumes/) and withdraw it (POST /volumes/unlist);
// renters search it (POST /volumes/search/, the offer query language), make volumes from it
// (PUT /volumes/), list theirs (GET /volumes) and delete one (DELETE /volumes/?id=). An instance
// mounts one through the create body's `volume_info` (instances.ts). The official CLI's shapes.
import { authErrors, errorSchema, plainText, rowId, successReply } from './common.js';

const tags = ['volumes'] as const;

/** Largest volume or listing, GB (1 PB). */
export const MAX_VOLUME_GB = 1_000_000;
/** The size a volume made by a create's volume_info gets when it names none, GB. */
export const DEFAULT_VOLUME_GB = 15;
/** Longest volume label. */
export const VOLUME_LABEL_MAX = 64;

const sizeGb = { type: 'integer', minimum: 1, maximum: MAX_VOLUME_GB, description: 'GB' } as const;

export const listVolumeBody = {
  type: 'object',
  additionalProperties: false,
  required: ['size', 'machine', 'price_disk'],
  properties: {
    size: { ...sizeGb, description: 'GB of the machine offered for volumes' },
    machine: {
      anyOf: [rowId, { type: 'array', minItems: 1, maxItems: 256, items: rowId }],
      description: 'a machine id, or several (list volumes)',
    },
    price_disk: { type: 'number', minimum: 0, maximum: 1000, description: '$ per GB-month' },
    end_date: {
      type: ['number', 'null'],
      minimum: 0,
      description: 'end of the listing, epoch seconds; absent or null: open-ended',
    },
  },
} as const;

export const volumeAskSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer', description: 'the volume offer (search volumes, create volume)' },
    machine_id: { type: 'integer' },
    size: { type: 'integer', description: 'GB listed' },
    used: { type: 'integer', description: 'GB its volumes take' },
    price_disk: { type: 'number', description: '$ per GB-month' },
    end_date: { type: ['number', 'null'], description: 'epoch seconds; null: open-ended' },
  },
} as const;

export const listVolume = {
  method: 'POST',
  url: '/api/v0/volumes',
  schema: {
    tags,
    summary:
      "List disk space on your machines for volumes (one listing per machine; listing again changes it). The size never exceeds the machine's free disk",
    body: listVolumeBody,
    response: {
      200: successReply({ volume_asks: { type: 'array', items: volumeAskSchema } }),
      ...authErrors,
      409: errorSchema,
    },
  },
} as const;

export const unlistVolume = {
  method: 'POST',
  url: '/api/v0/volumes/unlist',
  schema: {
    tags,
    summary: 'Withdraw a volume listing (refused while a volume made from it exists)',
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['id'],
      properties: { id: { ...rowId, description: 'the volume offer' } },
    },
    response: { 200: successReply({}), ...authErrors, 409: errorSchema },
  },
} as const;

/** One volume offer as search volumes shows it. */
export const volumeOfferSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer', description: 'volume offer id (create volume, --create-volume)' },
    ask_contract_id: { type: 'integer', description: 'same as id' },
    machine_id: { type: 'integer' },
    host_id: { type: 'integer' },
    disk_space: { type: 'number', description: 'GB left to make volumes from' },
    storage_cost: { type: 'number', description: '$ per GB-month' },
    storage_total_cost: { type: 'number', description: 'storage_cost × allocated_storage, $ per month' },
    disk_bw: { type: 'number', description: 'MB/s' },
    disk_name: { type: 'string' },
    inet_up: { type: 'number', description: 'Mbps' },
    inet_down: { type: 'number', description: 'Mbps' },
    reliability: { type: 'number', description: '0..1' },
    reliability2: { type: 'number', description: '0..1' },
    verified: { type: 'boolean' },
    verification: { type: 'string', enum: ['verified', 'unverified'] },
    geolocation: { type: 'string' },
    driver_version: { type: 'string' },
    cuda_max_good: { type: 'number' },
    cpu_ghz: { type: 'number' },
    duration: { type: 'number', description: 'seconds until the listing ends (a year when open-ended)' },
    end_date: { type: ['number', 'null'], description: 'epoch seconds; null: open-ended' },
    external: { type: 'boolean', description: 'always false' },
  },
} as const;

export const searchVolumes = {
  method: 'POST',
  url: '/api/v0/volumes/search',
  schema: {
    tags,
    summary: 'Search volume offers',
    description:
      'The offer query language over volume offers: each field as {op: value} (eq neq gt gte lt lte in notin), plus order, limit and allocated_storage (GB priced into storage_total_cost). Fields: id, machine_id, host_id, disk_space, storage_cost, disk_bw, inet_up, inet_down, reliability, reliability2, verified, geolocation, driver_version, cuda_max_good, cpu_ghz, duration, external. Unknown or ill-typed filters are refused.',
    body: { type: 'object', additionalProperties: true },
    response: {
      200: { type: 'object', properties: { offers: { type: 'array', items: volumeOfferSchema } } },
      ...authErrors,
    },
  },
} as const;

export const createVolumeBody = {
  type: 'object',
  additionalProperties: false,
  required: ['size', 'id'],
  properties: {
    size: { ...sizeGb, description: 'GB of the new volume' },
    id: { ...rowId, description: 'the volume offer (search volumes)' },
    name: { ...plainText(VOLUME_LABEL_MAX), description: 'a label' },
  },
} as const;

export const createVolume = {
  method: 'PUT',
  url: '/api/v0/volumes',
  schema: {
    tags,
    summary: 'Make a volume from a volume offer; it is charged storage_cost × GB per month until deleted',
    body: createVolumeBody,
    response: {
      200: successReply({ volume_id: { type: 'integer' } }),
      ...authErrors,
      409: errorSchema,
    },
  },
} as const;

/** One of the caller's volumes as show volumes lists it. */
export const volumeSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    label: { type: 'string' },
    disk_space: { type: 'number', description: 'GB' },
    status: {
      type: 'string',
      description:
        'ready; a clone being made: "cloning" then "cloning N%"; a clone that failed: "clone failed: why" (delete it)',
    },
    type: { type: 'string', enum: ['local_volume'] },
    machine_id: { type: 'integer' },
    host_id: { type: 'integer' },
    ask_id: { type: 'integer', description: 'the volume offer it was made from' },
    geolocation: { type: 'string' },
    reliability2: { type: 'number' },
    verification: { type: 'string' },
    inet_up: { type: 'number' },
    inet_down: { type: 'number' },
    driver_version: { type: 'string' },
    disk_name: { type: 'string' },
    cluster_id: { type: 'null' },
    storage_cost: { type: 'number', description: '$ per GB-month, locked when made' },
    total_cost: { type: 'number', description: '$ charged so far' },
    start_date: { type: 'number', description: 'when it was made, epoch seconds' },
    instances: { type: 'array', items: { type: 'integer' }, description: 'the live instance mounting it' },
    mount_path: { type: ['string', 'null'], description: 'where that instance mounts it' },
  },
} as const;

export const showVolumes = {
  method: 'GET',
  url: '/api/v0/volumes',
  schema: {
    tags,
    summary: 'Your volumes',
    querystring: {
      type: 'object',
      additionalProperties: false,
      properties: {
        owner: { type: 'string', enum: ['me'], description: 'the caller: "me", the only value' },
        type: {
          type: 'string',
          enum: ['local_volume', 'network_volume', 'all_volume'],
          description: 'openrig has local volumes only: network_volume lists none',
        },
      },
    },
    response: {
      200: { type: 'object', properties: { volumes: { type: 'array', items: volumeSchema } } },
      ...authErrors,
    },
  },
} as const;

export const deleteVolume = {
  method: 'DELETE',
  url: '/api/v0/volumes',
  schema: {
    tags,
    summary: 'Delete one of your volumes and its data on the host (refused while a live instance mounts it)',
    querystring: {
      type: 'object',
      additionalProperties: false,
      required: ['id'],
      properties: { id: { ...rowId, description: 'the volume' } },
    },
    response: { 200: successReply({}), ...authErrors, 409: errorSchema },
  },
} as const;

export const cloneVolumeBody = {
  type: 'object',
  additionalProperties: false,
  required: ['src_id', 'dst_id'],
  properties: {
    src_id: { ...rowId, description: 'the volume to clone (one of yours, ready)' },
    dst_id: { ...rowId, description: 'the volume offer the new volume is made from (search volumes)' },
    size: {
      type: 'number',
      minimum: 1,
      maximum: MAX_VOLUME_GB,
      description: "GB of the new volume, whole; default the source's, never less",
    },
    disable_compression: { type: 'boolean', description: 'copy without compressing the data on the way' },
  },
} as const;

export const cloneVolume = {
  method: 'POST',
  url: '/api/v0/volumes/copy',
  schema: {
    tags,
    summary:
      "Clone a volume: a new volume from a volume offer, its data copied from the source by the hosts' agents; its status says the progress, and ready once copied",
    body: cloneVolumeBody,
    response: {
      200: successReply({ volume_id: { type: 'integer' }, copy_id: { type: 'integer' } }),
      ...authErrors,
      409: errorSchema,
    },
  },
} as const;
