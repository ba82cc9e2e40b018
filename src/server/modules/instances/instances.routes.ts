// Instances: create from an offer, list, show, stop/start/label,
// destroy, bulk forms, SSH key attach/detach. The instance_api_key reaches only the routes marked
// `instanceKey: true` (start/stop/destroy of its own instance); the auth hook refuses it elsewhere.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.js';
import { requireAuth } from '../../http/auth.js';
import { authErrors, errorSchema, idParams } from '../../http/schemas.js';
import { AppError, quoteValue } from '../../errors.js';
import { isIntendedStatus } from '../../../contract/instance-states.js';
import { createInstance } from './instances.create.js';
import { getInstance, listInstances, listInstancesV1, type V1Query } from './instances.query.js';
import {
  attachSshKey,
  bulkChangeState,
  bulkDestroy,
  changeState,
  checkIds,
  destroyInstance,
  detachSshKey,
  setLabel,
} from './instances.actions.js';
import { instanceSchema } from './instances.view.js';
import { InstanceErrors } from './instances.errors.js';

const errors = { ...authErrors, 402: errorSchema, 409: errorSchema, 422: errorSchema } as const;
const ok = { type: 'object', properties: { success: { type: 'boolean' }, msg: { type: 'string' } } } as const;
const bulkReply = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
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
const anyBody = { type: 'object', additionalProperties: true } as const;
const listQuery = { type: 'object', properties: { owner: { type: 'string' } } } as const;

export async function instancesRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  const create = {
    config: { scope: 'instances' as const },
    schema: {
      tags: ['instances'],
      summary: 'Rent an offer: create an instance',
      description:
        'Body: image, disk (GB), onstart (≤ 4048 chars unless gzip+base64), env (incl. "-p 8080:8080" port requests), label, runtype, args, price (bid), image_login. Optional Idempotency-Key header.',
      params: idParams,
      body: anyBody,
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
  const createHandler = async (req: {
    params: unknown;
    body: unknown;
    headers: Record<string, unknown>;
    auth: unknown;
  }) =>
    createInstance(
      deps,
      requireAuth(req as never),
      (req.params as { id: number }).id,
      req.body,
      req.headers['idempotency-key'],
    );
  app.put('/api/v0/asks/:id', create, createHandler);
  app.post('/api/v0/asks/:id', create, createHandler);

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
      const instances = await listInstances(deps.db, requireAuth(req).user.id, deps.clock.now());
      return { instances_found: instances.length, instances };
    },
  );
  app.get(
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
            order_by: { type: 'string' },
            limit: { type: 'string' },
            after_token: { type: 'string' },
            owner: { type: 'string' },
          },
        },
        response: {
          200: {
            type: 'object',
            properties: {
              instances_found: { type: 'integer' },
              instances: { type: 'array', items: instanceSchema },
              next_token: { type: ['string', 'null'] },
            },
          },
          ...errors,
        },
      },
    },
    async (req) => listInstancesV1(deps.db, requireAuth(req).user.id, req.query as V1Query, deps.clock.now()),
  );
  app.get(
    '/api/v0/instances/:id',
    {
      config: { scope: 'instances' },
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
    async (req) => ({
      instances: await getInstance(
        deps.store,
        requireAuth(req).user.id,
        (req.params as { id: number }).id,
        deps.clock.now(),
      ),
    }),
  );
  app.put(
    '/api/v0/instances/:id',
    {
      config: { scope: 'instances', instanceKey: true },
      schema: {
        tags: ['instances'],
        summary: 'Stop ({state: "stopped"}), start ({state: "running"}) or label an instance',
        params: idParams,
        body: anyBody,
        response: { 200: ok, ...errors },
      },
    },
    async (req) => {
      const auth = requireAuth(req);
      const id = (req.params as { id: number }).id;
      const b = (req.body ?? {}) as { state?: unknown; label?: unknown };
      if (b.state === undefined && b.label === undefined)
        throw InstanceErrors.badRequest('Give state ("stopped" or "running") or label');
      if (b.state !== undefined && !isIntendedStatus(b.state))
        throw InstanceErrors.badRequest(`state must be "stopped" or "running", not ${quoteValue(b.state)}`);
      if (b.label !== undefined && typeof b.label !== 'string')
        throw InstanceErrors.badRequest('label must be a string');
      if (b.label !== undefined && auth.via === 'instance_key')
        throw new AppError(
          403,
          'forbidden',
          'An instance API key can only start, stop or destroy its own instance',
          { success: false },
        );
      if (typeof b.label === 'string' && b.label.length > 1024)
        throw InstanceErrors.badRequest('label must be at most 1024 characters');
      // The state change first: when it is refused, the label is left alone too.
      let msg = `Instance ${id} labelled`;
      if (b.state !== undefined) {
        const r = await changeState(deps, auth, id, b.state);
        msg = r.changed
          ? `Instance ${id} ${b.state === 'stopped' ? 'stopped' : 'starting'}`
          : `Instance ${id} is already ${b.state === 'stopped' ? 'stopped' : 'running or starting'}`;
      }
      if (typeof b.label === 'string') await setLabel(deps, auth, id, b.label);
      return { success: true, msg };
    },
  );
  app.delete(
    '/api/v0/instances/:id',
    {
      config: { scope: 'instances', instanceKey: true },
      schema: {
        tags: ['instances'],
        summary: 'Destroy an instance (from any state; all billing stops)',
        params: idParams,
        response: { 200: ok, ...errors },
      },
    },
    async (req) => {
      const id = (req.params as { id: number }).id;
      const r = await destroyInstance(deps, requireAuth(req), id);
      return {
        success: true,
        msg: r.changed ? `Instance ${id} destroyed` : `Instance ${id} was already destroyed`,
      };
    },
  );
  app.put(
    '/api/v0/instances',
    {
      config: { scope: 'instances' },
      schema: {
        tags: ['instances'],
        summary: 'Stop or start several instances: {state, ids}',
        body: anyBody,
        response: { 200: bulkReply, ...errors },
      },
    },
    async (req) => {
      const b = (req.body ?? {}) as { state?: unknown; ids?: unknown };
      if (!isIntendedStatus(b.state))
        throw InstanceErrors.badRequest(`state must be "stopped" or "running", not ${quoteValue(b.state)}`);
      return bulkChangeState(deps, requireAuth(req), checkIds('ids', b.ids), b.state);
    },
  );
  app.delete(
    '/api/v0/instances',
    {
      config: { scope: 'instances' },
      schema: {
        tags: ['instances'],
        summary: 'Destroy several instances: {instance_ids}; repeats are harmless',
        body: anyBody,
        response: { 200: bulkReply, ...errors },
      },
    },
    async (req) => {
      const b = (req.body ?? {}) as { instance_ids?: unknown; ids?: unknown };
      return bulkDestroy(deps, requireAuth(req), checkIds('instance_ids', b.instance_ids ?? b.ids));
    },
  );
  app.post(
    '/api/v0/instances/:id/ssh',
    {
      config: { scope: 'instances' },
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
          200: {
            type: 'object',
            properties: {
              success: { type: 'boolean' },
              msg: { type: 'string' },
              key_id: { type: 'integer' },
            },
          },
          ...errors,
        },
      },
    },
    async (req) => {
      const id = (req.params as { id: number }).id;
      const r = await attachSshKey(deps, requireAuth(req), id, (req.body as { ssh_key: string }).ssh_key);
      return { success: true, msg: `SSH key attached to instance ${id}`, key_id: r.key_id };
    },
  );
  app.delete(
    '/api/v0/instances/:id/ssh/:key_id',
    {
      config: { scope: 'instances' },
      schema: {
        tags: ['instances'],
        summary: 'Detach an SSH key from an instance',
        params: {
          type: 'object',
          required: ['id', 'key_id'],
          properties: { id: idParams.properties.id, key_id: idParams.properties.id },
        },
        response: { 200: ok, ...errors },
      },
    },
    async (req) => {
      const p = req.params as { id: number; key_id: number };
      await detachSshKey(deps, requireAuth(req), p.id, p.key_id);
      return { success: true, msg: `SSH key ${p.key_id} detached from instance ${p.id}` };
    },
  );
}
