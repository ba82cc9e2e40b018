// Instances: create from an offer, list, show, stop/start/label,
// destroy, bulk forms, SSH key attach/detach. The instance_api_key reaches only the routes marked
// `instanceKey: true` (start/stop/destroy of its own instance); the auth hook refuses it elsewhere.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { keyJoinedRow, requireAuth, type KeyJoinedRead } from '../../http/auth.js';
import {
  authErrors,
  errorSchema,
  idParams,
  successReply,
  successSchema,
  type IdParams,
} from '../../http/schemas.js';
import { sendError } from '../../http/error-handler.js';
import { quoteValue } from '../../errors.js';
import { isIntendedStatus } from '../../../contract/instance-states.js';
import { createInstance } from './instances.create.js';
import {
  getInstance,
  instanceFilterValues,
  listInstances,
  listInstancesV1,
  V1_ORDER_COLUMNS,
  type V1Query,
} from './instances.query.js';
import {
  attachSshKey,
  instanceSshKeys,
  bulkChangeState,
  bulkDestroy,
  checkIds,
  destroyInstance,
  detachSshKey,
  updateInstance,
  type StateChange,
} from './instances.actions.js';
import { instanceSchema } from './instances.view.js';
import { liveInstanceQuery, type InstanceWithWindows } from './instances.repo.js';
import { RESULTS_PATH, readResult, requestCommand, requestLogs, requestRestart } from './instances.remote.js';
import { InstanceErrors } from './instances.errors.js';
import { updateInstanceConfig } from './instances.update.js';

const errors = { ...authErrors, 402: errorSchema, 409: errorSchema, 422: errorSchema } as const;

/**
 * The polled read, made with the API key lookup where that saves a round trip (KeyJoinedRead in
 * http/auth.ts), for an id written as the route's schema takes it unchanged (digits, no leading
 * zero, a safe integer); any other id is left to the schema and the usual read.
 */
export const polledInstance: KeyJoinedRead = {
  args(req, now) {
    const id = (req.params as { id?: unknown }).id;
    if (typeof id !== 'string' || !/^[1-9][0-9]{0,15}$/.test(id) || !Number.isSafeInteger(Number(id)))
      return null;
    return [Number(id), now];
  },
  build: (on, userId, id, now) => liveInstanceQuery(on, userId, id as number, now as number),
};
const bulkReply = {
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
const nullable = (type: string, description?: string) => ({ type: [type, 'null'], description });
/** The create body. Each field's value is checked further by parseCreateBody (instances.request.ts). */
const createBody = {
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
    runtype: nullable('string', 'ssh, ssh_proxy, jupyter_proxy, args … (space-separated)'),
    args: { type: ['array', 'null'], items: { type: 'string' } },
    image_login: nullable('string', 'Registry credentials, e.g. "-u USER -p TOKEN registry"'),
    extra: nullable('string'),
    client_id: nullable('string', '"me"'),
    template_hash_id: nullable(
      'string',
      'A template (yours or a public one) whose image, env, onstart, runtype and disk fill what the body does not give',
    ),
  },
  additionalProperties: true,
} as const;
interface CreateBody {
  [field: string]: unknown;
}
const stateBody = {
  type: 'object',
  properties: {
    state: { type: 'string', description: '"stopped" or "running"' },
    label: { type: 'string', description: 'At most 1024 characters' },
  },
} as const;
const bulkStateBody = {
  type: 'object',
  properties: {
    state: { type: 'string', description: '"stopped" or "running"' },
    ids: { type: 'array', items: { type: 'integer' } },
  },
} as const;
interface BulkStateBody {
  state?: string;
  ids?: number[];
}
const bulkDestroyBody = {
  type: 'object',
  properties: {
    instance_ids: { type: 'array', items: { type: 'integer' } },
    ids: { type: 'array', items: { type: 'integer' }, description: 'Older name of instance_ids' },
  },
} as const;
interface BulkDestroyBody {
  instance_ids?: number[];
  ids?: number[];
}
/** The logs request body, as its schema checks it. */
interface LogsBody {
  tail?: string | number;
  filter?: string;
  daemon_logs?: string | boolean;
}
interface SshKeyBody {
  ssh_key: string;
}
const listQuery = { type: 'object', properties: { owner: { type: 'string' } } } as const;

export async function instancesRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  const create = {
    config: { scope: 'instances' as const, errorsCarrySuccess: true },
    schema: {
      tags: ['instances'],
      summary: 'Rent an offer: create an instance',
      description:
        'Body: image, disk (GB), onstart (≤ 4048 chars unless gzip+base64), env (incl. "-p 8080:8080" port requests), label, runtype, args, price (bid), image_login, template_hash_id (a template fills what the body does not give). Optional Idempotency-Key header.',
      params: idParams,
      body: createBody,
      headers: { type: 'object', properties: { 'idempotency-key': { type: 'string' } } },
      response: {
        200: {
          type: 'object',
          properties: {
            success: { type: 'boolean' },
            new_contract: { type: 'integer' },
            instance_api_key: { type: 'string' },
          },
        },
        ...errors,
      },
    },
  };
  type CreateRoute = {
    Params: IdParams;
    Body: CreateBody | undefined;
    Headers: { 'idempotency-key'?: string };
  };
  const createHandler = async (req: FastifyRequest<CreateRoute>) =>
    createInstance(deps, requireAuth(req), req.params.id, req.body, req.headers['idempotency-key']);
  app.put<CreateRoute>('/api/v0/asks/:id', create, createHandler);
  app.post<CreateRoute>('/api/v0/asks/:id', create, createHandler);

  app.get(
    '/api/v0/instances',
    {
      config: { scope: 'instances' },
      schema: {
        tags: ['instances'],
        summary: "The caller's instances",
        querystring: listQuery,
        response: {
          200: {
            type: 'object',
            properties: {
              instances_found: { type: 'integer' },
              instances: { type: 'array', items: instanceSchema },
            },
          },
          ...errors,
        },
      },
    },
    async (req) => {
      const instances = await listInstances(deps.store, requireAuth(req).user.id, deps.clock.now());
      return { instances_found: instances.length, instances };
    },
  );
  app.get<{ Querystring: V1Query }>(
    '/api/v1/instances',
    {
      config: { scope: 'instances' },
      schema: {
        tags: ['instances'],
        summary: "The caller's instances, a page at a time",
        querystring: {
          type: 'object',
          properties: {
            select_filters: { type: 'string' },
            order_by: {
              type: 'string',
              description:
                `JSON array of {"col", "dir": "asc"|"desc"} (at most 4; ties broken by id), col one of ${V1_ORDER_COLUMNS.join(', ')}. ` +
                'Strings order by code point; a null actual_status orders first ascending, last descending',
            },
            limit: { type: 'string' },
            after_token: {
              type: 'string',
              description: "the previous page's next_token, with the same order_by",
            },
            select_cols: {
              type: 'string',
              description:
                'JSON array of field names: each row carries only those (and id); names it does not have are ignored; ["*"] for all',
            },
            owner: { type: 'string' },
          },
        },
        response: {
          200: {
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
          },
          ...errors,
        },
      },
    },
    async (req) => listInstancesV1(deps, requireAuth(req).user.id, req.query, deps.clock.now()),
  );
  app.get(
    '/api/v0/instances/filters',
    {
      config: { scope: 'instances' },
      schema: {
        tags: ['instances'],
        summary: "The values the v1 list's filters can take: each status, verification and GPU combination",
        querystring: { type: 'object', properties: { owner: { type: 'string' } } },
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
          ...errors,
        },
      },
    },
    async (req) => ({ filters: await instanceFilterValues(deps.db, requireAuth(req).user.id) }),
  );
  app.get<{ Params: IdParams }>(
    '/api/v0/instances/:id',
    {
      config: { scope: 'instances', keyJoinedRead: polledInstance },
      schema: {
        tags: ['instances'],
        summary: 'One instance ({instances: null} when not yours or missing)',
        params: idParams,
        querystring: listQuery,
        response: {
          200: { type: 'object', properties: { instances: { ...instanceSchema, type: ['object', 'null'] } } },
          ...errors,
        },
      },
    },
    async (req) => {
      const id = req.params.id;
      const joined = keyJoinedRow(req, polledInstance);
      const row = joined?.args[0] === id ? (joined.row as InstanceWithWindows | null) : undefined;
      return {
        instances: await getInstance(deps.store, requireAuth(req).user.id, id, deps.clock.now(), row),
      };
    },
  );
  app.put<{ Params: IdParams; Body: StateChange | undefined }>(
    '/api/v0/instances/:id',
    {
      config: { scope: 'instances', instanceKey: true, errorsCarrySuccess: true },
      schema: {
        tags: ['instances'],
        summary: 'Stop ({state: "stopped"}), start ({state: "running"}) or label an instance',
        params: idParams,
        body: stateBody,
        response: { 200: successSchema, ...errors },
      },
    },
    async (req) => ({
      success: true,
      msg: await updateInstance(deps, requireAuth(req), req.params.id, req.body ?? {}),
    }),
  );
  app.put<{ Params: IdParams; Body: Record<string, unknown> | undefined }>(
    '/api/v0/instances/update_template/:id',
    {
      config: { scope: 'instances', errorsCarrySuccess: true },
      schema: {
        tags: ['instances'],
        summary: "Recreate an instance's container from a new configuration (same machine, GPUs and price)",
        description:
          "The given fields replace the instance's (a template's image, env, onstart and runtype are merged as create instance merges them, the given fields winning); checked as create instance checks them. The host recreates the container at its next sync (the disk starts afresh); the instance is loading until the new container runs, and a stopped one stays stopped. 409 invalid_state when unknown, offline or destroyed; 409 agent_outdated when the machine's agent cannot recreate containers.",
        params: idParams,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            id: { type: ['integer', 'string', 'null'], description: 'The instance (as the path names it)' },
            image: nullable('string', 'A container image reference'),
            env: {
              type: ['object', 'string', 'null'],
              description:
                'NAME: value and "-p 8080:8080": "1" port requests (or docker-style options "-e K=V -p 80:80"); replaces the env',
            },
            onstart: nullable('string', 'The onstart script (≤ 4048 characters unless gzip+base64)'),
            args: {
              type: ['array', 'string', 'null'],
              items: { type: 'string' },
              description: 'Arguments (runtype args), as a list or one string split as a shell does',
            },
            runtype: nullable('string', 'ssh, jupyter_proxy ssh_proxy, args … (args given: args)'),
            template_id: {
              type: ['integer', 'string', 'null'],
              description: "A template's id (yours or a public one)",
            },
            template_hash_id: nullable('string', "A template's hash_id (yours or a public one)"),
          },
        },
        response: {
          200: successReply({ updated_instance: instanceSchema }),
          ...errors,
        },
      },
    },
    async (req) => updateInstanceConfig(deps, requireAuth(req), req.params.id, req.body),
  );
  app.delete<{ Params: IdParams }>(
    '/api/v0/instances/:id',
    {
      config: { scope: 'instances', instanceKey: true, errorsCarrySuccess: true },
      schema: {
        tags: ['instances'],
        summary: 'Destroy an instance (from any state; all billing stops)',
        params: idParams,
        response: { 200: successSchema, ...errors },
      },
    },
    async (req) => {
      const id = req.params.id;
      const r = await destroyInstance(deps, requireAuth(req), id);
      return {
        success: true,
        msg: r.changed ? `Instance ${id} destroyed` : `Instance ${id} was already destroyed`,
      };
    },
  );
  app.put<{ Body: BulkStateBody | undefined }>(
    '/api/v0/instances',
    {
      config: { scope: 'instances', errorsCarrySuccess: true },
      schema: {
        tags: ['instances'],
        summary: 'Stop or start several instances: {state, ids}',
        body: bulkStateBody,
        response: { 200: bulkReply, ...errors },
      },
    },
    async (req) => {
      const b = req.body ?? {};
      if (!isIntendedStatus(b.state))
        throw InstanceErrors.badRequest(`state must be "stopped" or "running", not ${quoteValue(b.state)}`);
      return bulkChangeState(deps, requireAuth(req), checkIds('ids', b.ids), b.state);
    },
  );
  app.delete<{ Body: BulkDestroyBody | undefined }>(
    '/api/v0/instances',
    {
      config: { scope: 'instances', errorsCarrySuccess: true },
      schema: {
        tags: ['instances'],
        summary: 'Destroy several instances: {instance_ids}; repeats are harmless',
        body: bulkDestroyBody,
        response: { 200: bulkReply, ...errors },
      },
    },
    async (req) => {
      const b = req.body ?? {};
      return bulkDestroy(deps, requireAuth(req), checkIds('instance_ids', b.instance_ids ?? b.ids));
    },
  );
  app.get<{ Params: IdParams }>(
    '/api/v0/instances/:id/ssh',
    {
      config: { scope: 'instances', errorsCarrySuccess: true },
      schema: {
        tags: ['instances'],
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
          ...errors,
        },
      },
    },
    async (req) => {
      const keys = await instanceSshKeys(deps, requireAuth(req), req.params.id);
      return { success: true, ssh_keys: keys.map((k) => ({ public_key: k })) };
    },
  );
  app.post<{ Params: IdParams; Body: SshKeyBody }>(
    '/api/v0/instances/:id/ssh',
    {
      config: { scope: 'instances', errorsCarrySuccess: true },
      schema: {
        tags: ['instances'],
        summary: 'Attach an SSH public key to an instance',
        params: idParams,
        body: {
          type: 'object',
          required: ['ssh_key'],
          properties: { ssh_key: { type: 'string', maxLength: 16384 } },
        },
        response: {
          200: successReply({ key_id: { type: 'integer' } }),
          ...errors,
        },
      },
    },
    async (req) => {
      const id = req.params.id;
      const r = await attachSshKey(deps, requireAuth(req), id, req.body.ssh_key);
      return { success: true, msg: `SSH key attached to instance ${id}`, key_id: r.key_id };
    },
  );
  app.delete<{ Params: IdParams & { key_id: number } }>(
    '/api/v0/instances/:id/ssh/:key_id',
    {
      config: { scope: 'instances', errorsCarrySuccess: true },
      schema: {
        tags: ['instances'],
        summary: 'Detach an SSH key from an instance',
        params: {
          type: 'object',
          required: ['id', 'key_id'],
          properties: { id: idParams.properties.id, key_id: idParams.properties.id },
        },
        response: { 200: successSchema, ...errors },
      },
    },
    async (req) => {
      const p = req.params;
      await detachSshKey(deps, requireAuth(req), p.id, p.key_id);
      return { success: true, msg: `SSH key ${p.key_id} detached from instance ${p.id}` };
    },
  );
  // Requests the instance's agent carries out (logs, command, reboot, recycle), in the official
  // client's wire forms; each answers a result URL readable with no key.
  const origin = (req: { protocol: string; host: string }) => `${req.protocol}://${req.host}`;
  const resultReply = successReply({ result_url: { type: 'string' }, writeable_path: { type: 'string' } });
  app.put<{ Params: IdParams; Body: LogsBody | undefined }>(
    '/api/v0/instances/request_logs/:id',
    {
      config: { scope: 'instances', access: 'read', errorsCarrySuccess: true },
      schema: {
        tags: ['instances'],
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
        response: { 200: resultReply, ...errors },
      },
    },
    async (req) => requestLogs(deps, requireAuth(req), req.params.id, req.body ?? {}, origin(req)),
  );
  app.put<{ Params: IdParams; Body: { command: string } }>(
    '/api/v0/instances/command/:id',
    {
      config: { scope: 'instances', errorsCarrySuccess: true },
      schema: {
        tags: ['instances'],
        summary: 'Run an allow-listed command (ls, du, rm) in the container; read its output at result_url',
        params: idParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['command'],
          properties: { command: { type: 'string', minLength: 1, maxLength: 1000 } },
        },
        response: { 200: resultReply, ...errors },
      },
    },
    async (req) => requestCommand(deps, requireAuth(req), req.params.id, req.body.command, origin(req)),
  );
  for (const kind of ['reboot', 'recycle'] as const) {
    app.put<{ Params: IdParams }>(
      `/api/v0/instances/${kind}/:id`,
      {
        config: { scope: 'instances', errorsCarrySuccess: true },
        schema: {
          tags: ['instances'],
          summary:
            kind === 'reboot'
              ? 'Restart the container, keeping its disk'
              : 'Pull the image again and recreate the container, keeping the contract',
          params: idParams,
          body: { type: 'object', additionalProperties: false, properties: {} },
          response: { 200: resultReply, ...errors },
        },
      },
      async (req) => requestRestart(deps, requireAuth(req), req.params.id, kind, origin(req)),
    );
  }
  app.get<{ Params: { token: string } }>(
    `${RESULTS_PATH}/:token`,
    {
      config: { auth: 'none', secretParams: ['token'] },
      schema: {
        tags: ['instances'],
        summary:
          'The outcome of a logs, command, reboot or recycle request: 404 until the host sent it, then plain text',
        params: {
          type: 'object',
          required: ['token'],
          properties: { token: { type: 'string', maxLength: 100 } },
        },
        response: { 404: errorSchema },
      },
    },
    async (req, reply) => {
      const text = await readResult(deps, req.params.token);
      // Not there (yet, or any more) is an error like every other: {error, msg} as JSON.
      if (text === null)
        return sendError(reply, 404, 'not_found', 'No result at this URL yet (or it has expired)');
      reply.type('text/plain; charset=utf-8');
      return text;
    },
  );
}
