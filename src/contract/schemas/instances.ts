// The instances API: renting an offer (create), the instance row as every reply shows it, the
// state changes, the lists and the requests an instance's agent carries out.
import {
  authErrors,
  errorSchema,
  idParams,
  maintenanceWindowSchema,
  countText,
  jsonListText,
  jsonObjectText,
  JSON_STRING,
  nullable,
  orderEntry,
  ownerParam,
  plainText,
  rowId,
  successReply,
  successSchema,
} from './common.js';
import { DOCKER_OPTIONS_PATTERN } from '../docker-options.js';
import { sshPublicKey } from './ssh-keys.js';
import { portalBody, portalViewSchema } from './gateway.js';

const num = { type: 'number' } as const;
const int = { type: 'integer' } as const;
const str = { type: 'string' } as const;
const nstr = { type: ['string', 'null'] } as const;
const tags = ['instances'] as const;

/** The error replies of the instance routes. */
export const instanceErrors = {
  ...authErrors,
  402: errorSchema,
  409: errorSchema,
  422: errorSchema,
} as const;

/**
 * The instance row as clients read it. Times in epoch seconds; `extra_env` as [key, value] pairs;
 * `ports` as {"22/tcp": [{HostIp, HostPort}]}; `allowed_actions` from the state machine;
 * `accrued_cost` in dollars so far (compute + disk).
 */
export const instanceSchema = {
  type: 'object',
  properties: {
    id: int,
    machine_id: int,
    host_id: int,
    actual_status: nstr,
    intended_status: str,
    cur_state: str,
    next_state: str,
    allowed_actions: { type: 'array', items: str },
    machine_available: {
      type: 'boolean',
      description: 'false when this stopped instance cannot start: another client rents its machine now',
    },
    status_msg: str,
    label: str,
    image_uuid: str,
    image_runtype: str,
    image_args: { type: ['array', 'null'], items: str },
    onstart: str,
    extra_env: { type: 'array', items: { type: 'array', items: str } },
    num_gpus: int,
    gpu_name: str,
    gpu_ram: { type: 'integer', description: 'MB per GPU' },
    gpu_totalram: { type: 'integer', description: 'MB' },
    gpu_util: {
      type: ['number', 'null'],
      description:
        'mean utilisation of its GPUs, percent, as its host last measured; null unless running or not measured (simulated GPUs)',
    },
    cpu_name: str,
    cpu_cores: int,
    cpu_cores_effective: num,
    cpu_ram: { type: 'integer', description: 'MB' },
    disk_space: { type: 'number', description: 'GB allocated to the instance' },
    disk_usage: {
      type: ['number', 'null'],
      description: 'GB its disk holds, as its host last measured (about once a minute); null until then',
    },
    disk_util: {
      type: ['number', 'null'],
      description:
        'disk_usage / disk_space, a fraction (above 1 where the host cannot enforce the size); null without either',
    },
    inet_up: num,
    inet_down: num,
    reliability2: num,
    geolocation: str,
    driver_version: str,
    cuda_max_good: num,
    direct_port_count: int,
    verification: { type: 'string', enum: ['verified', 'unverified'], description: "the machine's" },
    direct_port_start: { type: 'integer', description: 'lowest published host port, -1 when none' },
    direct_port_end: { type: 'integer', description: 'highest published host port, -1 when none' },
    ssh_host: nstr,
    ssh_port: { type: ['integer', 'null'] },
    public_ipaddr: nstr,
    ports: {
      type: 'object',
      additionalProperties: {
        type: 'array',
        items: { type: 'object', properties: { HostIp: str, HostPort: str } },
      },
    },
    is_bid: { type: 'boolean' },
    market_tier: {
      type: 'string',
      enum: ['owner', 'on-demand', 'bid'],
      description: "the market tier: the owner's own rental, on-demand, or interruptible (bid)",
    },
    min_bid: {
      type: 'number',
      description:
        "$/hour: the lowest bid that wins the machine now (the host's floor, or just above the running bid)",
    },
    bid_waiting: {
      type: 'boolean',
      description: 'an interruptible instance waiting for its bid to win the machine',
    },
    waiting_reason: { type: ['string', 'null'], description: 'why it waits (null when it does not)' },
    preempted_by: {
      type: ['string', 'null'],
      description: 'the tier that last preempted it (owner, on-demand, bid); null when never',
    },
    portal: portalViewSchema,
    dph_base: { type: 'number', description: 'compute $/hour (charged only while running)' },
    dph_total: { type: 'number', description: 'compute + disk $/hour' },
    disk_dph: { type: 'number', description: 'disk $/hour (charged from creation until destroy)' },
    storage_cost: { type: 'number', description: '$/GB-month' },
    accrued_cost: { type: 'number', description: 'dollars charged so far' },
    billed_until: num,
    start_date: num,
    duration: { type: 'number', description: 'seconds since start_date' },
    uptime_mins: {
      type: ['number', 'null'],
      description: 'minutes since it last became running; null unless running',
    },
    created_at: num,
    template_id: {
      type: ['integer', 'null'],
      description: 'the template it was created from; null when none',
    },
    template_name: { ...nstr, description: "that template's name when the instance was created" },
    template_hash_id: {
      ...nstr,
      description: "that template's hash_id (its version) when the instance was created",
    },
    maintenances: { type: 'array', items: maintenanceWindowSchema },
    host_last_seen: {
      type: ['number', 'null'],
      description: 'when its host last reported (epoch seconds): unknown or offline since about then',
    },
    machine_runtime: {
      type: ['string', 'null'],
      enum: ['process', 'docker', null],
      description:
        "how its host runs it: 'process' (a plain process of the host's user, no isolation), 'docker' (a container); null: not said",
    },
  },
} as const;

/** The create body. Each field's value is checked further by the server. */
/** The modes a runtype names, space-separated. */
export const RUNTYPE_TOKENS = [
  'ssh',
  'ssh_proxy',
  'ssh_direc',
  'ssh_direct',
  'jupyter',
  'jupyter_proxy',
  'jupyter_direc',
  'jupyter_direct',
  'args',
] as const;

/** A runtype field: modes of RUNTYPE_TOKENS, space-separated; null or empty: ssh. */
export const runtypeField = <const D extends string>(description: D) =>
  ({
    type: ['string', 'null'],
    maxLength: 100,
    pattern: `^(?:|\\s*(?:${RUNTYPE_TOKENS.join('|')})(?:\\s+(?:${RUNTYPE_TOKENS.join('|')}))*\\s*)$`,
    description,
    example: 'ssh',
  }) as const;

export const createInstanceBody = {
  type: 'object',
  properties: {
    image: nullable(
      'string',
      'A container image reference, e.g. "pytorch/pytorch:latest" (null: the template\'s, with template_hash_id)',
    ),
    disk: nullable('number', 'GB'),
    price: nullable('number', 'A bid in $/hour; null or absent: on demand'),
    onstart: nullable('string', 'A script run at start (≤ 4048 characters unless gzip+base64)'),
    env: {
      type: ['object', 'null'],
      additionalProperties: { type: ['string', 'number', 'boolean'] },
      description: 'NAME: value, and port requests as "-p 8080:8080": "1"',
    },
    label: nullable('string'),
    runtype: runtypeField('ssh, ssh_proxy, jupyter_proxy, args … (space-separated)'),
    args: { type: ['array', 'null'], items: { type: 'string' } },
    image_login: nullable('string', 'Registry credentials, e.g. "-u USER -p TOKEN registry"'),
    extra: nullable('string'),
    client_id: nullable('string', '"me"'),
    portal: portalBody,
    template_hash_id: nullable(
      'string',
      'A template (yours or a public one) whose image, env, onstart, runtype and disk fill what the body does not give',
    ),
  },
  // An image, or a template that gives one (every template has an image).
  anyOf: [
    {
      required: ['image'],
      properties: { image: { type: 'string', maxLength: 512, pattern: '^\\s*\\S+\\s*$' } },
    },
    { required: ['template_hash_id'], properties: { template_hash_id: { type: 'string', minLength: 1 } } },
  ],
  description: 'image (one image reference), unless template_hash_id names a template that gives it',
  additionalProperties: true,
} as const;

export const createInstanceReply = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    new_contract: { type: 'integer' },
    instance_api_key: { type: 'string' },
    is_bid: { type: 'boolean', description: 'interruptible (a bid) or on-demand' },
    price: { type: ['number', 'null'], description: 'the bid, $/hour for the machine; null on-demand' },
    bid_waiting: { type: 'boolean', description: 'the bid waits: it does not win the machine now' },
    msg: { type: 'string' },
  },
} as const;

const createSchema = {
  tags,
  summary: 'Rent an offer: create an instance',
  description:
    'Body: image, disk (GB), onstart (≤ 4048 chars unless gzip+base64), env (incl. "-p 8080:8080" port requests), label, runtype, args, price (bid), image_login, portal (ports served through the gateway), template_hash_id (a template fills what the body does not give). Optional Idempotency-Key header.',
  params: idParams,
  body: createInstanceBody,
  headers: { type: 'object', properties: { 'idempotency-key': { type: 'string' } } },
  response: { 200: createInstanceReply, ...instanceErrors },
} as const;

/** PUT and POST /api/v0/asks/:id: the same route under both methods. */
export const createInstance = {
  method: ['PUT', 'POST'],
  url: '/api/v0/asks/:id',
  schema: createSchema,
} as const;

const ownerQuery = { type: 'object', properties: { owner: ownerParam } } as const;

/** An instance row of the v0 list and of the one-instance read: the volumes it mounts besides (docs/volumes.md), read in the row's own statement. */
const listedInstanceSchema = {
  ...instanceSchema,
  properties: {
    ...instanceSchema.properties,
    volume_info: {
      type: 'array',
      description: 'the volumes it mounts (docs/volumes.md)',
      items: {
        type: 'object',
        properties: {
          id: int,
          label: { type: 'string' },
          mount_path: nstr,
          total_space: { type: 'number', description: 'GB' },
        },
      },
    },
  },
} as const;

export const instancesList = {
  type: 'object',
  properties: {
    instances_found: { type: 'integer' },
    instances: { type: 'array', items: listedInstanceSchema },
  },
} as const;

export const listInstances = {
  method: 'GET',
  url: '/api/v0/instances',
  schema: {
    tags,
    summary: "The caller's instances",
    querystring: ownerQuery,
    response: { 200: instancesList, ...instanceErrors },
  },
} as const;

/** The fields the v1 list orders by. */
export const INSTANCE_ORDER_COLUMNS = [
  'id',
  'machine_id',
  'start_date',
  'label',
  'image_uuid',
  'actual_status',
  'dph_total',
  'disk_space',
  'num_gpus',
  'gpu_name',
  'geolocation',
] as const;

export const instancesPage = {
  type: 'object',
  properties: {
    instances_found: { type: 'integer', description: 'instances on this page' },
    instances: { type: 'array', items: instanceSchema },
    next_token: { type: ['string', 'null'] },
    total_instances: {
      type: 'integer',
      description: 'instances the filters select, on every page',
    },
    label_counts: {
      type: 'object',
      description: 'total_instances by label; unlabeled instances under ""',
      additionalProperties: { type: 'integer' },
    },
  },
} as const;

export const listInstancesV1 = {
  method: 'GET',
  url: '/api/v1/instances',
  schema: {
    tags,
    summary: "The caller's instances, a page at a time",
    querystring: {
      type: 'object',
      properties: {
        select_filters: jsonObjectText(
          'JSON {field: {op: value}} (eq neq gt gte lt lte in notin); fields id, machine_id, actual_status, intended_status, label, image_uuid, gpu_name, verification, num_gpus',
        ),
        order_by: {
          type: 'string',
          pattern: jsonListText(orderEntry(INSTANCE_ORDER_COLUMNS), 0, 4),
          example: '[{"col":"id","dir":"asc"}]',
          description:
            `JSON array of {"col", "dir": "asc"|"desc"} (at most 4; dir default asc; ties broken by id), col one of ${INSTANCE_ORDER_COLUMNS.join(', ')}. ` +
            'Strings order by code point; a null actual_status orders first ascending, last descending',
        },
        limit: countText(1000, '1 to 1000 (default 25)'),
        after_token: {
          type: 'string',
          description: "the previous page's next_token, with the same order_by",
        },
        select_cols: {
          type: 'string',
          pattern: jsonListText(JSON_STRING, 0, 200),
          example: '["id","label"]',
          description:
            'JSON array of at most 200 field names (strings): each row carries only those (and id); names it does not have are ignored; ["*"] for all',
        },
        owner: ownerParam,
      },
    },
    response: { 200: instancesPage, ...instanceErrors },
  },
} as const;

export const instanceFilters = {
  method: 'GET',
  url: '/api/v0/instances/filters',
  schema: {
    tags,
    summary: "The values the v1 list's filters can take: each status, verification and GPU combination",
    querystring: ownerQuery,
    response: {
      200: {
        type: 'object',
        properties: {
          filters: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                actual_status: { type: ['string', 'null'] },
                verification: { type: 'string' },
                gpu_name: { type: 'string' },
              },
            },
          },
        },
      },
      ...instanceErrors,
    },
  },
} as const;

/** `{instances: {...}}`, or `{instances: null}` when it is not the caller's or does not exist. */
export const instanceEnvelope = {
  type: 'object',
  properties: { instances: { ...listedInstanceSchema, type: ['object', 'null'] } },
} as const;

export const showInstance = {
  method: 'GET',
  url: '/api/v0/instances/:id',
  schema: {
    tags,
    summary: 'One instance ({instances: null} when not yours or missing)',
    params: idParams,
    querystring: ownerQuery,
    response: { 200: instanceEnvelope, ...instanceErrors },
  },
} as const;

export const changeStateBody = {
  type: 'object',
  properties: {
    state: { type: 'string', enum: ['stopped', 'running'] },
    label: plainText(1024),
  },
  // A state, a label, or both.
  anyOf: [{ required: ['state'] }, { required: ['label'] }],
} as const;

/** The instances a bulk call acts on: 1 to 1000 ids. */
const bulkIds = (description?: string) =>
  ({
    type: 'array',
    items: rowId,
    minItems: 1,
    maxItems: 1000,
    ...(description ? { description } : {}),
  }) as const;

export const changeInstanceState = {
  method: 'PUT',
  url: '/api/v0/instances/:id',
  schema: {
    tags,
    summary: 'Stop ({state: "stopped"}), start ({state: "running"}) or label an instance',
    params: idParams,
    body: changeStateBody,
    response: { 200: successSchema, ...instanceErrors },
  },
} as const;

/** The fields an update changes. */
const UPDATE_FIELDS = [
  'image',
  'env',
  'onstart',
  'args',
  'runtype',
  'template_id',
  'template_hash_id',
] as const;
/** Not null: a field sent as null counts as not given. */
const notNull = { not: { type: 'null' } } as const;

export const updateInstanceBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    id: { type: ['integer', 'string', 'null'], description: 'The instance (as the path names it)' },
    image: nullable('string', 'A container image reference'),
    env: {
      type: ['object', 'string', 'null'],
      description:
        'NAME: value and "-p 8080:8080": "1" port requests (or docker-style options "-e K=V -p 80:80"); replaces the env',
      pattern: DOCKER_OPTIONS_PATTERN,
    },
    onstart: nullable('string', 'The onstart script (≤ 4048 characters unless gzip+base64)'),
    args: {
      type: ['array', 'string', 'null'],
      items: { type: 'string' },
      description: 'Arguments (runtype args), as a list or one string split as a shell does',
    },
    runtype: runtypeField('ssh, jupyter_proxy ssh_proxy, args … (args given: args)'),
    template_id: {
      type: ['integer', 'string', 'null'],
      description: "A template's id (yours or a public one)",
    },
    template_hash_id: nullable('string', "A template's hash_id (yours or a public one)"),
  },
  // One field to change at least (a field sent as null counts as not given).
  anyOf: [
    { required: ['image'], properties: { image: notNull } },
    { required: ['env'], properties: { env: notNull } },
    { required: ['onstart'], properties: { onstart: notNull } },
    { required: ['args'], properties: { args: notNull } },
    { required: ['runtype'], properties: { runtype: notNull } },
    { required: ['template_id'], properties: { template_id: notNull } },
    { required: ['template_hash_id'], properties: { template_hash_id: notNull } },
  ],
  description: `Nothing to update: give ${UPDATE_FIELDS.slice(0, -1).join(', ')} or ${UPDATE_FIELDS.at(-1)}`,
} as const;

/** The instance as the update wrote it: loading until its host has recreated it (stopped: stays). */
export const updateInstanceReply = successReply({ updated_instance: listedInstanceSchema });

export const updateInstanceConfig = {
  method: 'PUT',
  url: '/api/v0/instances/update_template/:id',
  schema: {
    tags,
    summary: "Recreate an instance's container from a new configuration (same machine, GPUs and price)",
    description:
      "The given fields replace the instance's (a template's image, env, onstart and runtype are merged as create instance merges them, the given fields winning); checked as create instance checks them. The host recreates the container at its next sync (the disk starts afresh); the instance is loading until the new container runs, and a stopped one stays stopped. 409 invalid_state when unknown, offline or destroyed; 409 agent_outdated when the machine's agent cannot recreate containers.",
    params: idParams,
    body: updateInstanceBody,
    response: { 200: updateInstanceReply, ...instanceErrors },
  },
} as const;

export const destroyInstance = {
  method: 'DELETE',
  url: '/api/v0/instances/:id',
  schema: {
    tags,
    summary: 'Destroy an instance (from any state; all billing stops)',
    params: idParams,
    response: { 200: successSchema, ...instanceErrors },
  },
} as const;

export const bulkReply = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    msg: { type: 'string', description: 'the outcome in a sentence, failures first' },
    results: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: { type: 'integer' },
          success: { type: 'boolean' },
          error: { type: 'string' },
          msg: { type: 'string' },
        },
      },
    },
  },
} as const;

export const bulkChangeState = {
  method: 'PUT',
  url: '/api/v0/instances',
  schema: {
    tags,
    summary: 'Stop or start several instances: {state, ids}',
    body: {
      type: 'object',
      required: ['state', 'ids'],
      properties: {
        state: { type: 'string', enum: ['stopped', 'running'] },
        ids: bulkIds(),
      },
    },
    response: { 200: bulkReply, ...instanceErrors },
  },
} as const;

export const bulkDestroy = {
  method: 'DELETE',
  url: '/api/v0/instances',
  schema: {
    tags,
    summary: 'Destroy several instances: {instance_ids}; repeats are harmless',
    body: {
      type: 'object',
      properties: {
        instance_ids: bulkIds(),
        ids: bulkIds('Older name of instance_ids (instance_ids wins when both are given)'),
      },
      anyOf: [{ required: ['instance_ids'] }, { required: ['ids'] }],
    },
    response: { 200: bulkReply, ...instanceErrors },
  },
} as const;

export const instanceSshKeys = {
  method: 'GET',
  url: '/api/v0/instances/:id/ssh',
  schema: {
    tags,
    summary: 'The SSH public keys an instance accepts (given at creation or attached since)',
    params: idParams,
    response: {
      200: {
        type: 'object',
        properties: {
          success: { type: 'boolean' },
          ssh_keys: {
            type: 'array',
            items: { type: 'object', properties: { public_key: { type: 'string' } } },
          },
        },
      },
      ...instanceErrors,
    },
  },
} as const;

export const attachSshKey = {
  method: 'POST',
  url: '/api/v0/instances/:id/ssh',
  schema: {
    tags,
    summary: 'Attach an SSH public key to an instance',
    params: idParams,
    body: {
      type: 'object',
      required: ['ssh_key'],
      properties: { ssh_key: sshPublicKey },
    },
    response: { 200: successReply({ key_id: { type: 'integer' } }), ...instanceErrors },
  },
} as const;

export const detachSshKey = {
  method: 'DELETE',
  url: '/api/v0/instances/:id/ssh/:key_id',
  schema: {
    tags,
    summary: 'Detach an SSH key from an instance',
    params: {
      type: 'object',
      required: ['id', 'key_id'],
      properties: { id: idParams.properties.id, key_id: idParams.properties.id },
    },
    response: { 200: successSchema, ...instanceErrors },
  },
} as const;

/** Reboot, recycle, logs and command: result_url answers once the host has done it. */
export const remoteRequestReply = successReply({
  result_url: { type: 'string' },
  writeable_path: { type: 'string' },
});

export const requestLogs = {
  method: 'PUT',
  url: '/api/v0/instances/request_logs/:id',
  schema: {
    tags,
    summary: "Ask the instance's host for its logs; read them at result_url (no key)",
    params: idParams,
    body: {
      type: 'object',
      additionalProperties: false,
      properties: {
        tail: { type: ['string', 'integer'], maxLength: 10 },
        filter: { type: 'string', maxLength: 1000 },
        daemon_logs: { type: ['string', 'boolean'], maxLength: 10 },
      },
    },
    response: { 200: remoteRequestReply, ...instanceErrors },
  },
} as const;

/** A path word: plain characters, not an option, no ".." segment. */
const PATH_WORD = '(?!-)(?!(?:[^\\s/]*/)*\\.\\.(?:/|\\s|$))[A-Za-z0-9._/+=@:,-]+';
/** What rm may not be given: the root, or only dots and slashes. */
const NOT_ROOT = '(?![/.]+(?:\\s|$))';
const COMMAND_FORMS = [
  `ls(?:\\s+(?:-[lahRtrS1dFognAis]+|${PATH_WORD}))*`,
  `du(?:\\s+(?:--max-depth=[0-9]{1,2}|-[shackmx]*d(?:[0-9]{1,2}|\\s+[0-9]{1,2})|-[shackmx]+|${PATH_WORD}))*`,
  `rm(?:\\s+(?:-[rfRdv]+|${NOT_ROOT}${PATH_WORD}))*`,
];
/** The commands the container runs (the server's parseAllowedCommand says the same). */
const COMMAND_PATTERN = `^(?![^\\n\\r]*[\\n\\r])(?=\\s*\\S+(?:\\s+\\S+){0,31}\\s*$)\\s*(?:${COMMAND_FORMS.join('|')})\\s*$`;

export const runCommand = {
  method: 'PUT',
  url: '/api/v0/instances/command/:id',
  schema: {
    tags,
    summary: 'Run an allow-listed command (ls, du, rm) in the container; read its output at result_url',
    params: idParams,
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['command'],
      properties: {
        command: {
          type: 'string',
          minLength: 1,
          maxLength: 1000,
          pattern: COMMAND_PATTERN,
          description:
            'ls, du or rm with their usual options (ls -lahRtrS1dFognAis, du -shackmx, -d N, --max-depth=N, rm -rfRdv) and plain paths: no shell syntax, no "..", not rm of the root; at most 32 words, e.g. ls -l /root',
        },
      },
    },
    response: { 200: remoteRequestReply, ...instanceErrors },
  },
} as const;

const noBody = { type: 'object', additionalProperties: false, properties: {} } as const;

export const rebootInstance = {
  method: 'PUT',
  url: '/api/v0/instances/reboot/:id',
  schema: {
    tags,
    summary: 'Restart the container, keeping its disk',
    params: idParams,
    body: noBody,
    response: { 200: remoteRequestReply, ...instanceErrors },
  },
} as const;

export const recycleInstance = {
  method: 'PUT',
  url: '/api/v0/instances/recycle/:id',
  schema: {
    tags,
    summary: 'Pull the image again and recreate the container, keeping the contract',
    params: idParams,
    body: noBody,
    response: { 200: remoteRequestReply, ...instanceErrors },
  },
} as const;

export const changeBid = {
  method: 'PUT',
  url: '/api/v0/instances/bid_price/:id',
  schema: {
    tags,
    summary: "Change an interruptible instance's bid (the official CLI's change bid)",
    description:
      'Body: {"client_id": "me", "price": P} ($/hour for the machine), or "price": null for the lowest bid that wins the machine now. A higher bid may preempt the running one; a lower one may yield to a waiting bid (docs/market.md).',
    params: idParams,
    body: {
      type: 'object',
      properties: {
        client_id: {},
        price: { type: ['number', 'null'] },
      },
      additionalProperties: true,
    },
    response: {
      200: {
        type: 'object',
        properties: {
          success: { type: 'boolean' },
          msg: { type: 'string' },
          price: { type: 'number' },
          bid_waiting: { type: 'boolean' },
        },
      },
      ...instanceErrors,
    },
  },
} as const;

/** Where the outcome of a logs, command, reboot or recycle request is read. */
export const RESULTS_PATH = '/api/v0/instances/results';

export const remoteResult = {
  method: 'GET',
  url: `${RESULTS_PATH}/:token`,
  schema: {
    tags,
    summary:
      'The outcome of a logs, command, reboot or recycle request: 404 until the host sent it, then plain text',
    params: {
      type: 'object',
      required: ['token'],
      properties: { token: { type: 'string', maxLength: 100 } },
    },
    // 400: a token that is no token (too long, NUL, a malformed escape).
    response: { 400: errorSchema, 404: errorSchema },
  },
} as const;
