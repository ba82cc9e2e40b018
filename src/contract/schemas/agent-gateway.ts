// The agent protocol's routes (agent-protocol.ts, docs/agent.md): the host's own API key, scope
// `machines` (write). Their schemas validate the agent's bodies strictly and document the protocol
// in the OpenAPI document under "agent".
import { AGENT_API_PREFIX } from '../agent-protocol.js';
import { errorSchema, plainText, rowId } from './common.js';

const agentUid = {
  type: 'string',
  pattern: '^[A-Za-z0-9-]{8,64}$',
  description: 'Stable id of the agent process, kept in its --state-dir',
} as const;
const machineIds = { type: 'array', maxItems: 256, items: rowId } as const;
/** Host-supplied names: plain one-line text (they reach renters' e-mails and listings). */
const str = (max: number) => plainText(max);
/** More than any one instance's disk can hold (1 PB): a larger figure is a broken measurement. */
const MAX_DISK_BYTES = 1e15;

export const registerBody = {
  type: 'object',
  additionalProperties: false,
  required: ['agent_uid', 'machines'],
  properties: {
    agent_uid: agentUid,
    version: str(64),
    runtime: { type: 'string', enum: ['process', 'docker'] },
    volume_method: {
      type: 'string',
      enum: ['ext4-loop', 'directory'],
      description:
        'How the agent keeps volumes: size-limited ext4 images, or plain directories (size not enforced)',
    },
    public_host: {
      type: 'string',
      minLength: 1,
      maxLength: 253,
      pattern: '^[A-Za-z0-9.:-]+$',
      description: "Host name or IP address renters reach the machines' instances at",
    },
    price_gpu: {
      type: 'number',
      minimum: 0,
      maximum: 1000,
      description: '$/hour per GPU; lists each machine as an on-demand offer',
    },
    price_disk: { type: 'number', minimum: 0, maximum: 1000, description: '$ per GB-month' },
    config_generations: {
      type: 'boolean',
      description:
        "true: the agent recreates an instance's container of an older configuration generation (updates of its instances are allowed)",
    },
    location: {
      type: 'string',
      maxLength: 100,
      pattern: '^([^\\u0000-\\u001f\\u007f]+, )?[A-Z]{2}$',
      description:
        'where the machines are, as renters search for it: "City, CC" or an ISO country code "CC" (geolocation)',
    },
    machines: {
      type: 'array',
      minItems: 1,
      maxItems: 256,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['slot', 'gpu_name', 'num_gpus'],
        properties: {
          slot: { type: 'integer', minimum: 0, maximum: 255 },
          hostname: str(255),
          gpu_name: plainText(100, { minLength: 1 }),
          num_gpus: { type: 'integer', minimum: 1, maximum: 64 },
          // Bounds well above any real machine: a larger figure is a broken or made-up
          // measurement, refused with a 400 naming the field.
          gpu_ram: {
            type: 'integer',
            minimum: 0,
            maximum: 1_048_576,
            description: 'MB per GPU (at most 1 TB)',
          },
          cpu_name: str(200),
          cpu_cores: { type: 'integer', minimum: 0, maximum: 4096 },
          cpu_ghz: { type: 'number', minimum: 0, maximum: 10 },
          cpu_ram: { type: 'integer', minimum: 0, maximum: 67_108_864, description: 'MB (at most 64 TB)' },
          disk_space: { type: 'number', minimum: 0, maximum: 1_000_000, description: 'GB (at most 1 PB)' },
          driver_version: str(64),
          cuda_max_good: { type: 'number', minimum: 0, maximum: 100 },
          dlperf: { type: 'number', minimum: 0, maximum: 100_000 },
        },
      },
    },
  },
} as const;

export const registerReply = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    machines: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          slot: { type: 'integer' },
          machine_id: { type: 'integer' },
          verification: {
            type: 'string',
            enum: ['verified', 'unverified', 'deverified'],
            description:
              "unverified or deverified: hidden from renters' default searches (openrig's CLI, the official client)",
          },
        },
      },
    },
    verification_rule: {
      type: 'string',
      description: "the operator's rule for how an unverified machine becomes verified",
    },
    deleted_machines: {
      type: 'array',
      description: "the agent's machines that their host deleted: refused for good, not to be served",
      items: { type: 'object', properties: { slot: { type: 'integer' }, machine_id: { type: 'integer' } } },
    },
    heartbeat_s: { type: 'number' },
    unknown_after_s: { type: 'number' },
    offline_after_s: { type: 'number' },
    usage_reports: {
      type: 'boolean',
      description: 'true: instance reports may carry disk_usage_bytes and gpu_util',
    },
    config_generations: {
      type: 'boolean',
      description: 'true: instances carry their configuration generation, and reports may carry theirs',
    },
    loop_delay_reports: {
      type: 'boolean',
      description: "true: a sync may carry event_loop_delay_ms, the agent's event-loop delay",
    },
    long_polls: {
      type: 'boolean',
      description: 'true: the server answers POST wait, which the agent holds to be woken at once',
    },
    benchmarks: {
      type: 'boolean',
      description: 'true: the server takes POST benchmarks; the agent runs its benchmarks and posts each run',
    },
    benchmark_interval_s: {
      type: 'number',
      description: 'how often the agent runs its benchmarks again (seconds)',
    },
  },
} as const;

/** One event-loop delay figure in milliseconds, at most an hour. */
const delayMs = { type: 'number', minimum: 0, maximum: 3_600_000 } as const;

export const syncBody = {
  type: 'object',
  additionalProperties: false,
  required: ['agent_uid', 'machine_ids', 'instances'],
  properties: {
    agent_uid: agentUid,
    machine_ids: machineIds,
    instances: {
      type: 'array',
      maxItems: 1024,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'state'],
        properties: {
          id: rowId,
          state: { type: 'string', enum: ['loading', 'running', 'exited', 'stopped'] },
          status_msg: str(500),
          ssh_port: { type: ['integer', 'null'], minimum: 1, maximum: 65535 },
          ports: {
            type: 'object',
            maxProperties: 64,
            propertyNames: { pattern: '^[0-9]{1,5}/(tcp|udp)$' },
            additionalProperties: {
              type: 'array',
              maxItems: 4,
              items: {
                type: 'object',
                additionalProperties: false,
                required: ['HostIp', 'HostPort'],
                properties: { HostIp: str(64), HostPort: { type: 'string', pattern: '^[0-9]{1,5}$' } },
              },
            },
          },
          disk_usage_bytes: {
            type: ['integer', 'null'],
            minimum: 0,
            maximum: MAX_DISK_BYTES,
            description: "Bytes the instance's disk holds, as last measured; absent: unchanged",
          },
          gpu_util: {
            type: ['number', 'null'],
            minimum: 0,
            maximum: 100,
            description: "Mean utilisation of the instance's GPUs, percent; absent: unchanged",
          },
          generation: {
            type: 'integer',
            minimum: 1,
            description:
              "The configuration generation of what the report describes; older than the instance's: moves nothing",
          },
        },
      },
    },
    event_loop_delay_ms: {
      type: 'object',
      additionalProperties: false,
      required: ['p50', 'p99', 'max'],
      properties: { p50: delayMs, p99: delayMs, max: delayMs },
      description:
        "How late the agent's event loop ran since its last sync (ms); the server's metrics keep it",
    },
  },
} as const;

export const syncReply = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    heartbeat_s: { type: 'number' },
    server_time: { type: 'number' },
    unknown_machine_ids: { type: 'array', items: { type: 'integer' } },
    deleted_machine_ids: {
      type: 'array',
      items: { type: 'integer' },
      description: 'those of unknown_machine_ids that their host deleted: refused for good',
    },
    instances: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: { type: 'integer' },
          machine_id: { type: 'integer' },
          desired: { type: 'string', enum: ['running', 'stopped', 'destroyed'] },
          actual_status: { type: ['string', 'null'] },
          image: { type: 'string' },
          disk: { type: 'number' },
          onstart: { type: 'string' },
          env: { type: 'object', additionalProperties: { type: 'string' } },
          label: { type: 'string' },
          container_api_key: { type: ['string', 'null'] },
          authorized_keys: { type: 'array', items: { type: 'string' } },
          ports: {
            type: 'array',
            items: {
              type: 'object',
              properties: { container: { type: 'integer' }, proto: { type: 'string', enum: ['tcp', 'udp'] } },
            },
          },
          image_login: { type: ['string', 'null'] },
          args: { type: ['array', 'null'], items: { type: 'string' } },
          entrypoint: { type: ['string', 'null'] },
          generation: { type: 'integer', description: 'The configuration generation the container must run' },
          stop_grace_s: {
            type: 'integer',
            description:
              'a preempted instance: seconds left of its grace period between SIGTERM and the stop',
          },
          volumes: {
            type: 'array',
            description: 'the volumes it mounts read-write: made on first use, kept after it is destroyed',
            items: {
              type: 'object',
              properties: {
                id: { type: 'integer' },
                mount_path: { type: 'string' },
                size_gb: { type: 'integer' },
              },
            },
          },
        },
      },
    },
    volumes: {
      type: 'array',
      description:
        "every live volume of the agent's machines; a volume it holds that is not listed was deleted",
      items: {
        type: 'object',
        properties: {
          id: { type: 'integer' },
          machine_id: { type: 'integer' },
          size_gb: { type: 'integer' },
        },
      },
    },
    requests: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: { type: 'integer' },
          instance_id: { type: 'integer' },
          kind: { type: 'string', enum: ['logs', 'command', 'reboot', 'recycle'] },
          tail: { type: ['integer', 'null'] },
          filter: { type: ['string', 'null'] },
          daemon: { type: 'boolean' },
          argv: { type: 'array', items: { type: 'string' } },
        },
      },
    },
  },
} as const;

export const resultsBody = {
  type: 'object',
  additionalProperties: false,
  required: ['agent_uid', 'machine_ids', 'results'],
  properties: {
    agent_uid: agentUid,
    machine_ids: machineIds,
    results: {
      type: 'array',
      maxItems: 100,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'ok', 'output'],
        properties: {
          id: rowId,
          ok: { type: 'boolean' },
          output: { type: 'string', maxLength: 8 * 1024 * 1024 },
        },
      },
    },
  },
} as const;

export const resultsReply = {
  type: 'object',
  properties: { success: { type: 'boolean' }, accepted: { type: 'integer' } },
} as const;

export const shutdownBody = {
  type: 'object',
  additionalProperties: false,
  required: ['agent_uid', 'machine_ids'],
  properties: { agent_uid: agentUid, machine_ids: machineIds },
} as const;

export const shutdownReply = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    machines_offline: { type: 'integer' },
    instances_offline: { type: 'integer' },
  },
} as const;

export const authorizedKeysBody = {
  type: 'object',
  additionalProperties: false,
  required: ['instance_id'],
  properties: { instance_id: rowId },
} as const;

export const authorizedKeysReply = {
  type: 'object',
  properties: { authorized_keys: { type: 'array', items: { type: 'string' } } },
} as const;

export const waitBody = {
  type: 'object',
  additionalProperties: false,
  required: ['agent_uid', 'machine_ids'],
  properties: {
    agent_uid: agentUid,
    machine_ids: machineIds,
    after_request_id: {
      type: 'integer',
      minimum: 0,
      description: 'the highest request id the agent has been handed: a newer pending one answers at once',
    },
    timeout_s: {
      type: 'number',
      minimum: 1,
      maximum: 300,
      description: 'how long the server may hold the call (it holds at most its own limit)',
    },
  },
} as const;

export const waitReply = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    wake: { type: 'boolean', description: 'true: sync now; false: nothing came, wait again' },
  },
} as const;

const tags = ['agent'] as const;
const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 409: errorSchema } as const;

export const register = {
  method: 'POST',
  url: `${AGENT_API_PREFIX}/register`,
  schema: {
    tags,
    summary: "Register the agent's machines (hardware, price); answers their ids and the heartbeat timing",
    body: registerBody,
    response: { 200: registerReply, ...errors },
  },
} as const;

export const sync = {
  method: 'POST',
  url: `${AGENT_API_PREFIX}/sync`,
  schema: {
    tags,
    summary:
      "Heartbeat and reconcile: report each instance's actual state, receive the instances to hold and their desired state",
    body: syncBody,
    response: { 200: syncReply, ...errors },
  },
} as const;

export const shutdown = {
  method: 'POST',
  url: `${AGENT_API_PREFIX}/shutdown`,
  schema: {
    tags,
    summary: 'Clean agent shutdown: its machines and their instances go offline at once',
    body: shutdownBody,
    response: { 200: shutdownReply, ...errors },
  },
} as const;

export const results = {
  method: 'POST',
  url: `${AGENT_API_PREFIX}/results`,
  schema: {
    tags,
    summary: "Answers to client requests of the agent's instances (logs and command output, reboot, recycle)",
    body: resultsBody,
    response: { 200: resultsReply, ...errors },
  },
} as const;

export const authorizedKeys = {
  method: 'POST',
  url: `${AGENT_API_PREFIX}/authorized-keys`,
  schema: {
    tags,
    summary: 'The public keys an instance of this host accepts right now (its SSH server asks at each login)',
    body: authorizedKeysBody,
    response: { 200: authorizedKeysReply, ...errors },
  },
} as const;

export const wait = {
  method: 'POST',
  url: `${AGENT_API_PREFIX}/wait`,
  schema: {
    tags,
    summary:
      "Held until a client's request or a change of what the agent's machines should run is queued (then sync), or a timeout",
    body: waitBody,
    response: { 200: waitReply, ...errors },
  },
} as const;
