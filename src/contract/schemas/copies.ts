// Copies (docs/data.md): the official CLI's `copy` and `cancel copy`, and the agent's side of
// the copies its machines carry out. Ids arrive as the CLI parsed them from `ID:/path`,
// `C.ID:/path` or `V.ID:/path`: a number, or a string (`"12"`, `"C.12"`, `"V.7"`, `"local"`), or
// null for a laptop's side; the service reads them and refuses what it cannot.
import { AGENT_API_PREFIX } from '../agent-protocol.js';
import { authErrors, errorSchema, successReply } from './common.js';

const tags = ['copies'] as const;

const endId = {
  type: ['integer', 'string', 'null'],
  description:
    'an instance id (`12`, `"12"`, `"C.12"`), a volume id (`"V.7"`, source only), or null / `"local"` for your own machine (rsync)',
} as const;
const copyPath = {
  type: 'string',
  maxLength: 4096,
  description: 'a Unix path; rsync semantics: a trailing slash on the source copies what the directory holds',
} as const;
const exclude = {
  type: 'array',
  maxItems: 64,
  items: { type: 'string', minLength: 1, maxLength: 1024 },
  description: 'openrig extension: rsync --exclude patterns',
} as const;

export const copyBody = {
  type: 'object',
  required: ['src_id', 'dst_id'],
  properties: {
    client_id: { type: 'string' },
    src_id: endId,
    dst_id: endId,
    src_path: copyPath,
    dst_path: copyPath,
    exclude,
  },
  additionalProperties: true,
} as const;

const endpointReply = {
  dst_addr: { type: 'string', description: "upload: the address of the destination instance's SSH server" },
  dst_port: { type: 'integer', description: "upload: its port (the instance's SSH port)" },
  src_addr: { type: 'string', description: "download: the address of the source instance's SSH server" },
  src_port: { type: 'integer', description: 'download: its port' },
  module: { type: 'string', description: 'the rsync module: the instance id' },
  exclude,
} as const;

export const copyReply = successReply({
  copy_id: { type: 'integer', description: 'the copy between instances, when one was started' },
  ...endpointReply,
});

export const copyDirect = {
  method: 'PUT',
  url: '/api/v0/commands/copy_direct',
  schema: {
    tags,
    summary:
      'Copy files from one of your instances (or volumes) into another of your running instances; with a local side, as /commands/rsync/',
    body: copyBody,
    response: { 200: copyReply, ...authErrors, 409: errorSchema },
  },
} as const;

export const cancelCopy = {
  method: 'DELETE',
  url: '/api/v0/commands/copy_direct',
  schema: {
    tags,
    summary: 'Cancel the copy under way into one of your instances',
    body: {
      type: 'object',
      required: ['dst_id'],
      properties: { client_id: { type: 'string' }, dst_id: { type: ['integer', 'string'] } },
      additionalProperties: true,
    },
    response: { 200: successReply({ canceled: { type: 'integer' } }), ...authErrors },
  },
} as const;

export const rsync = {
  method: 'PUT',
  url: '/api/v0/commands/rsync',
  schema: {
    tags,
    summary:
      'Where to run rsync to or from one of your running instances: its SSH server, as user vastai_kaalia, rsync module = the instance id, with your own key',
    body: copyBody,
    response: { 200: copyReply, ...authErrors, 409: errorSchema },
  },
} as const;

export const listCopies = {
  method: 'GET',
  url: '/api/v0/commands/copy_direct',
  schema: {
    tags,
    summary: 'Your copies between instances, newest first (the last 50)',
    response: {
      200: {
        type: 'object',
        properties: {
          success: { type: 'boolean' },
          copies: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                id: { type: 'integer' },
                src_id: { type: 'string' },
                src_path: { type: 'string' },
                dst_kind: { type: 'string', enum: ['instance', 'volume'] },
                dst_id: { type: 'integer' },
                dst_path: { type: 'string' },
                status: { type: 'string', enum: ['queued', 'running', 'done', 'failed', 'canceled'] },
                progress: { type: 'string' },
                bytes: { type: ['integer', 'null'] },
                msg: { type: 'string' },
                created_at: { type: 'number' },
                ended_at: { type: ['number', 'null'] },
              },
            },
          },
        },
      },
      ...authErrors,
    },
  },
} as const;

// The agent's side.

const agentUid = { type: 'string', pattern: '^[A-Za-z0-9-]{8,64}$' } as const;

export const agentCopiesBody = {
  type: 'object',
  additionalProperties: false,
  required: ['agent_uid', 'machine_ids', 'reports'],
  properties: {
    agent_uid: agentUid,
    machine_ids: { type: 'array', maxItems: 256, items: { type: 'integer', minimum: 1 } },
    reports: {
      type: 'array',
      maxItems: 1000,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'state'],
        properties: {
          id: { type: 'integer', minimum: 1 },
          state: { type: 'string', enum: ['running', 'done', 'failed'] },
          progress: { type: 'string', maxLength: 300 },
          bytes: { type: 'integer', minimum: 0 },
          msg: { type: 'string', maxLength: 2000 },
        },
      },
    },
    receiving: {
      type: 'array',
      maxItems: 1000,
      description: 'the volume clones it receives, each with the port of the SSH server it opened',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'port'],
        properties: {
          id: { type: 'integer', minimum: 1 },
          port: { type: 'integer', minimum: 1, maximum: 65535 },
        },
      },
    },
  },
} as const;

export const agentCopies = {
  method: 'POST',
  url: `${AGENT_API_PREFIX}/copies`,
  schema: {
    tags: ['agent'],
    summary:
      "A source agent's copies: it reports the state of those it carries out, and is answered those it is to carry out now (each with its one-time key)",
    body: agentCopiesBody,
    response: {
      200: {
        type: 'object',
        properties: {
          success: { type: 'boolean' },
          copies: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                id: { type: 'integer' },
                status: { type: 'string' },
                src_kind: { type: 'string', enum: ['instance', 'volume'] },
                src_id: { type: 'integer' },
                src_path: { type: 'string' },
                dst_id: { type: 'integer' },
                dst_path: { type: 'string' },
                dst_host: { type: 'string' },
                dst_port: { type: 'integer' },
                dst_kind: { type: 'string', enum: ['instance', 'volume'] },
                dst_size_gb: { type: 'number', description: 'a destination volume: its size, GB' },
                excludes: { type: 'array', items: { type: 'string' } },
                key: { type: 'string', description: 'the one-time private key (OpenSSH format)' },
                compress: { type: 'boolean', description: 'rsync compresses the data on the way' },
              },
            },
          },
          receives: {
            type: 'array',
            description: 'volume clones into volumes of its machines: it opens an SSH server for each',
            items: {
              type: 'object',
              properties: {
                id: { type: 'integer' },
                volume_id: { type: 'integer' },
                size_gb: { type: 'integer' },
              },
            },
          },
        },
      },
      400: errorSchema,
      401: errorSchema,
      403: errorSchema,
    },
  },
} as const;

export const copyAuth = {
  method: 'POST',
  url: `${AGENT_API_PREFIX}/copy_auth`,
  schema: {
    tags: ['agent'],
    summary:
      "Asked by a destination's SSH server: whether a key is the one-time key of a copy into that instance (or of a clone into that volume); with consume, it is taken (once)",
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['public_key'],
      properties: {
        instance_id: { type: 'integer', minimum: 1, description: 'the destination instance' },
        volume_id: { type: 'integer', minimum: 1, description: "a volume clone's destination volume" },
        public_key: { type: 'string', maxLength: 4096, description: 'the key blob, base64' },
        consume: { type: 'boolean' },
      },
    },
    response: {
      200: {
        type: 'object',
        properties: { ok: { type: 'boolean' }, copy_id: { type: ['integer', 'null'] } },
      },
      400: errorSchema,
      401: errorSchema,
      403: errorSchema,
    },
  },
} as const;
