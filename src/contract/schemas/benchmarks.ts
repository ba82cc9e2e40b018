// The benchmarks routes (docs/benchmarks.md): the agent posts its runs and measures its network
// against the server (host's API key, scope machines write); anyone signed in searches the
// benchmark rows (`search benchmarks`); a host reads its machine's benchmarks and verification
// history.
import { AGENT_API_PREFIX } from '../agent-protocol.js';
import { NET_BENCH_MAX_BYTES } from '../benchmarks.js';
import { authErrors, errorSchema, idParams, jsonObjectText, plainText, rowId } from './common.js';

const agentTags = ['agent'] as const;
const tags = ['benchmarks'] as const;
const agentErrors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema } as const;

const agentUid = { type: 'string', pattern: '^[A-Za-z0-9-]{8,64}$' } as const;
/** A measured figure: finite, not negative, at most `max` (a larger one is a broken measurement). */
const fig = (max: number, description: string) =>
  ({ type: 'number', minimum: 0, maximum: max, description }) as const;
const states = { type: 'string', enum: ['unverified', 'verified', 'deverified'] } as const;

export const benchmarkBody = {
  type: 'object',
  additionalProperties: false,
  required: [
    'agent_uid',
    'machine_id',
    'version',
    'cpu',
    'mem_bw',
    'disk_bw',
    'inet_up',
    'inet_down',
    'system',
    'gpu',
  ],
  properties: {
    agent_uid: agentUid,
    machine_id: rowId,
    version: plainText(64),
    trigger: plainText(64),
    cpu: {
      type: 'object',
      additionalProperties: false,
      required: ['name', 'arch', 'cores', 'ghz', 'score', 'has_avx'],
      properties: {
        name: plainText(200),
        arch: plainText(32),
        cores: { type: 'integer', minimum: 0, maximum: 4096 },
        ghz: fig(10, 'highest clock, GHz'),
        score: fig(1e9, "the fixed workload's score on one core"),
        has_avx: { type: 'boolean' },
      },
    },
    mem_bw: fig(10_000, 'GB/s'),
    disk_bw: fig(1_000_000, 'MB/s'),
    inet_up: fig(1_000_000, 'Mbps'),
    inet_down: fig(1_000_000, 'Mbps'),
    system: {
      type: 'object',
      additionalProperties: false,
      required: ['ubuntu_version', 'mobo_name'],
      properties: { ubuntu_version: plainText(32), mobo_name: plainText(200) },
    },
    gpu: {
      oneOf: [
        {
          type: 'object',
          additionalProperties: false,
          required: ['error'],
          properties: { error: plainText(500) },
        },
        {
          type: 'object',
          additionalProperties: false,
          required: [
            'name',
            'count',
            'ram_mb',
            'driver',
            'compute_cap',
            'pci_gen',
            'pcie_bw',
            'gpu_mem_bw',
            'total_flops',
            'power_limit',
            'max_temp',
            'display_active',
            'nvlink_bw',
            'cuda',
          ],
          properties: {
            name: plainText(100, { minLength: 1 }),
            count: { type: 'integer', minimum: 1, maximum: 64 },
            ram_mb: { type: 'integer', minimum: 0, maximum: 1_048_576 },
            driver: plainText(64),
            compute_cap: { type: 'integer', minimum: 0, maximum: 10_000 },
            pci_gen: fig(16, 'PCIe generation'),
            pcie_bw: fig(1_000, 'GB/s per GPU'),
            gpu_mem_bw: fig(100_000, 'GB/s per GPU'),
            total_flops: fig(1_000_000, 'TFLOPS, all GPUs'),
            power_limit: fig(10_000, 'W per GPU'),
            max_temp: fig(200, '°C'),
            display_active: { type: 'boolean' },
            nvlink_bw: fig(10_000, 'GB/s per GPU'),
            cuda: plainText(500),
          },
        },
      ],
    },
    seconds: fig(86_400, 'how long the run took'),
  },
} as const;

export const postBenchmarks = {
  method: 'POST',
  url: `${AGENT_API_PREFIX}/benchmarks`,
  schema: {
    tags: agentTags,
    summary:
      "One run of the agent's benchmarks on one of its machines: stored, and its figures become the offer's",
    body: benchmarkBody,
    response: {
      200: {
        type: 'object',
        properties: {
          success: { type: 'boolean' },
          verification: states,
          verification_reason: { type: 'string' },
        },
      },
      ...agentErrors,
    },
  },
} as const;

export const netDownload = {
  method: 'GET',
  url: `${AGENT_API_PREFIX}/benchmarks/download`,
  schema: {
    tags: agentTags,
    summary: 'Bytes for the agent to time its download (inet_down)',
    querystring: {
      type: 'object',
      required: ['bytes'],
      properties: { bytes: { type: 'integer', minimum: 1, maximum: NET_BENCH_MAX_BYTES } },
    },
    response: { 200: { type: 'object', properties: { data: { type: 'string' } } }, ...agentErrors },
  },
} as const;

export const netUpload = {
  method: 'POST',
  url: `${AGENT_API_PREFIX}/benchmarks/upload`,
  schema: {
    tags: agentTags,
    summary: 'Bytes the agent sends to time its upload (inet_up); answered with their count',
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['data'],
      properties: { data: { type: 'string', maxLength: NET_BENCH_MAX_BYTES } },
    },
    response: { 200: { type: 'object', properties: { bytes: { type: 'integer' } } }, ...agentErrors },
  },
} as const;

const benchmarkRow = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    contract_id: {
      type: 'null',
      description: 'always null: benchmarks are run by the agent, not in an instance',
    },
    machine_id: { type: 'integer' },
    name: {
      type: 'string',
      description: 'what was measured (dlperf, total_flops, gpu_mem_bw, pcie_bw, cpu_score, …)',
    },
    model: {
      type: 'string',
      description: 'the hardware measured: the GPU model, the CPU model, "disk" or "network"',
    },
    image: { type: 'string', description: 'what measured it: "openrig-agent VERSION"' },
    num_gpus: { type: 'integer' },
    score: { type: 'number' },
    unit: { type: 'string' },
    last_update: { type: 'number', description: 'when it was measured, epoch seconds' },
  },
} as const;

export const searchBenchmarks = {
  method: 'GET',
  url: '/api/v0/benchmarks',
  schema: {
    tags,
    summary: 'Search benchmark results (`search benchmarks`), newest first',
    querystring: {
      type: 'object',
      properties: {
        select_filters: jsonObjectText(
          'JSON object of field: {op: value} (eq neq gt gte lt lte in notin); fields id, machine_id, name, model, image, num_gpus, score, last_update (epoch seconds), contract_id',
        ),
        select_cols: { type: 'string', description: 'accepted; every field is returned' },
        limit: {
          type: 'string',
          pattern: '^\\s*(?:[1-9][0-9]{0,2}|1000)\\s*$',
          description: '1 to 1000, default 1000',
        },
      },
    },
    response: { 200: { type: 'array', items: benchmarkRow }, ...authErrors },
  },
} as const;

const verificationEvent = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    from: states,
    to: states,
    reason: { type: 'string' },
    by: { type: 'string', description: '"operator" or "rule"' },
    at: { type: 'number', description: 'epoch seconds' },
  },
} as const;

export const machineTrust = {
  method: 'GET',
  url: '/api/v0/machines/:id/verification',
  schema: {
    tags,
    summary: "One of your machines' verification, its history and its latest benchmarks",
    params: idParams,
    response: {
      200: {
        type: 'object',
        properties: {
          machine_id: { type: 'integer' },
          verification: states,
          verification_rule: { type: 'string' },
          history: { type: 'array', items: verificationEvent },
          benchmarks: { type: 'array', items: benchmarkRow },
        },
      },
      ...authErrors,
    },
  },
} as const;
