// The offers API: search (POST /bundles/, and GET /bundles?q= for older clients) and the GPU names
// offered. The search body is validated by the server's filter compiler, not by a schema: its
// messages name the exact field, operator or value at fault.
import { authErrors, jsonObjectText, maintenanceWindowSchema } from './common.js';

const tags = ['offers'] as const;

/**
 * An offer row. Its searchable fields are the server's offer fields (each with its type and unit;
 * a test checks the two agree), then the plan's.
 */
export const offerSchema = {
  type: 'object',
  properties: {
    id: { type: ['integer', 'null'], description: 'offer id (the value to rent with; equals machine_id)' },
    machine_id: { type: ['integer', 'null'], description: 'machine id' },
    host_id: { type: ['integer', 'null'], description: 'id of the host (the machine owner)' },
    gpu_name: {
      type: 'string',
      description: 'GPU model, with spaces ("RTX 4090"; underscores are read as spaces)',
    },
    num_gpus: { type: ['integer', 'null'], description: 'number of GPUs (GPUs)' },
    gpu_ram: { type: ['integer', 'null'], description: 'memory per GPU (MB)' },
    gpu_total_ram: { type: ['integer', 'null'], description: 'gpu_ram × num_gpus (MB)' },
    cpu_name: { type: 'string', description: 'CPU model' },
    cpu_cores: { type: ['integer', 'null'], description: 'CPU cores of the machine (cores)' },
    cpu_cores_effective: {
      type: ['number', 'null'],
      description: 'CPU cores the instance gets (the whole machine is rented) (cores)',
    },
    cpu_ghz: { type: ['number', 'null'], description: 'CPU clock (GHz)' },
    cpu_ram: { type: ['integer', 'null'], description: 'system memory (MB)' },
    disk_space: {
      type: ['number', 'null'],
      description:
        "disk available for the instance (the machine's, less what stopped instances on it hold) (GB)",
    },
    disk_bw: { type: ['number', 'null'], description: 'disk bandwidth (MB/s)' },
    inet_up: { type: ['number', 'null'], description: 'upload bandwidth (Mbps)' },
    inet_down: { type: ['number', 'null'], description: 'download bandwidth (Mbps)' },
    pcie_bw: { type: ['number', 'null'], description: 'PCIe bandwidth per GPU (GB/s)' },
    direct_port_count: {
      type: ['integer', 'null'],
      description: 'directly reachable ports (SSH needs one) (ports)',
    },
    cuda_max_good: {
      type: ['number', 'null'],
      description: 'highest CUDA version the driver supports (CUDA version)',
    },
    driver_version: {
      type: 'string',
      description:
        'NVIDIA driver version ("535.86.05"); filtered and ordered by its number major × 1,000,000 + minor × 1,000 + patch (535086005)',
    },
    reliability: { type: ['number', 'null'], description: 'host reliability score (0..1)' },
    reliability2: {
      type: ['number', 'null'],
      description: 'same as reliability (the name the CLI sends) (0..1)',
    },
    verified: { type: 'boolean', description: 'machine verified by the operator' },
    verification: { type: 'string', description: '"verified", "unverified" or "deverified" (docs/trust.md)' },
    geolocation: {
      type: 'string',
      description:
        'location as the host gave it ("Oregon, US"); a filter value of two letters also matches the country code after the last ", "',
    },
    dlperf: {
      type: ['number', 'null'],
      description: 'deep-learning performance score of the machine (DLPerf)',
    },
    total_flops: {
      type: ['number', 'null'],
      description: 'FP16 matrix-multiply throughput of all the GPUs, as benchmarked (TFLOPS)',
    },
    gpu_mem_bw: {
      type: ['number', 'null'],
      description: 'GPU memory bandwidth per GPU, as benchmarked (GB/s)',
    },
    pci_gen: {
      type: ['number', 'null'],
      description: "PCIe generation of the GPUs' links, as the driver reports it (PCIe gen)",
    },
    compute_cap: {
      type: ['integer', 'null'],
      description: 'CUDA compute capability × 100 (890 for 8.9), as the driver reports it',
    },
    gpu_arch: {
      type: 'string',
      description: 'GPU vendor: "nvidia", or "" without a GPU the agent could query',
    },
    gpu_max_power: { type: ['number', 'null'], description: 'GPU power limit, as the driver reports it (W)' },
    gpu_max_temp: {
      type: ['number', 'null'],
      description: 'GPU slowdown temperature, as the driver reports it (°C)',
    },
    gpu_display_active: {
      type: 'boolean',
      description: 'a display is active on a GPU, as the driver reports it',
    },
    bw_nvlink: {
      type: ['number', 'null'],
      description: 'NVLink bandwidth per GPU as the driver reports its links (0: none) (GB/s)',
    },
    cpu_arch: { type: 'string', description: 'CPU architecture ("amd64", "arm64")' },
    has_avx: { type: 'boolean', description: 'the CPU supports AVX' },
    ubuntu_version: {
      type: 'string',
      description: 'Ubuntu release of the host ("22.04"; "" on another system)',
    },
    mobo_name: { type: 'string', description: 'motherboard model, as the host firmware names it' },
    static_ip: {
      type: 'boolean',
      description: "the host declares its public address static (the agent's --static-ip)",
    },
    dph_base: {
      type: ['number', 'null'],
      description:
        'compute price for the search type: on-demand and reserved = GPU price × num_gpus; bid = min_bid (the lowest winning bid) ($/h)',
    },
    storage_cost: { type: ['number', 'null'], description: 'disk price ($/GB-month)' },
    min_bid: {
      type: ['number', 'null'],
      description:
        "lowest bid that wins the machine now for an interruptible rental: the host's floor, or just above the running bid (0: no bids) ($/h)",
    },
    dph_total: {
      type: ['number', 'null'],
      description: 'dph_base + storage_cost × allocated_storage / 720 ($/h)',
    },
    dlperf_per_dphtotal: {
      type: ['number', 'null'],
      description: 'dlperf / dph_total (0 when dph_total is 0) (DLPerf per $/h)',
    },
    flops_per_dphtotal: {
      type: ['number', 'null'],
      description: 'total_flops / dph_total (0 when dph_total is 0) (TFLOPS per $/h)',
    },
    score: {
      type: ['number', 'null'],
      description:
        'dlperf / (GPU price × num_gpus) × reliability: on-demand and storage-independent, so the default order (score desc) is served by an index',
    },
    duration: {
      type: ['number', 'null'],
      description: 'seconds until the listing ends (31536000 for an open-ended listing) (s)',
    },
    listed: { type: 'boolean', description: 'listed for rent by its host (default filter: true)' },
    rented: {
      type: 'boolean',
      description:
        'an on-demand or owner rental holds the machine (one only bids hold is not rented; default filter: false)',
    },
    rentable: { type: 'boolean', description: 'listed, not rented, and its host not offline' },
    online: { type: 'boolean', description: "the machine's agent is heartbeating" },
    external: { type: 'boolean', description: 'offer from another marketplace: always false here' },
    gpu_frac: {
      type: ['number', 'null'],
      description:
        "share of the machine's GPUs an offer rents: always 1 (an instance rents the whole machine) (0..1)",
    },
    inet_up_cost: {
      type: ['number', 'null'],
      description: 'upload bandwidth price: always 0 (openrig charges compute and disk only) ($/GB)',
    },
    inet_down_cost: {
      type: ['number', 'null'],
      description: 'download bandwidth price: always 0 (openrig charges compute and disk only) ($/GB)',
    },
    datacenter: {
      type: 'boolean',
      description: 'offer of a certified datacenter: always false (openrig certifies no datacenters)',
    },
    vms_enabled: {
      type: 'boolean',
      description:
        'machine runs virtual-machine instances: always false (instances are containers or processes)',
    },
    ask_contract_id: { type: 'integer' },
    is_bid: { type: 'boolean' },
    search_type: { type: 'string' },
    allocated_storage: { type: 'number' },
    maintenances: {
      type: 'array',
      items: maintenanceWindowSchema,
      description: 'current and upcoming maintenance windows of the machine (empty when none)',
    },
  },
} as const;

export const offersReply = {
  type: 'object',
  properties: { offers: { type: 'array', items: offerSchema } },
} as const;

const searchReply = { 200: offersReply, ...authErrors } as const;

/** The flat search body: each filter field at top level as `{op: value}`. */
export const searchBody = { type: 'object', additionalProperties: true } as const;

export const searchOffers = {
  method: 'POST',
  url: '/api/v0/bundles',
  schema: {
    tags,
    summary: 'Search offers',
    description:
      'Flat filter object: each field as {op: value} (eq neq gt gte lt lte in notin), plus order, type, limit, allocated_storage. See docs/market.md.',
    body: searchBody,
    response: searchReply,
  },
} as const;

export const searchOffersGet = {
  method: 'GET',
  url: '/api/v0/bundles',
  schema: {
    tags,
    summary: 'Search offers (older clients: ?q=JSON)',
    querystring: {
      type: 'object',
      properties: { q: jsonObjectText('a JSON object of filters, as POST /bundles/ takes its body') },
    },
    response: searchReply,
  },
} as const;

export const gpuNames = {
  method: 'GET',
  url: '/api/v0/gpu_names/unique',
  schema: {
    tags,
    summary: 'Distinct GPU names currently offered (no authentication; limited per IP)',
    response: {
      200: { type: 'object', properties: { gpu_names: { type: 'array', items: { type: 'string' } } } },
    },
  },
} as const;
