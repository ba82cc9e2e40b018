// Webhook endpoints and the event feed (docs/webhooks.md).
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import type { Deps } from '../../deps.js';
import { requireAuth } from '../../http/auth.js';
import { authErrors, errorSchema } from '../../http/schemas.js';
import * as svc from './webhooks.service.js';

const Id = Type.Integer({ minimum: 1, maximum: 9007199254740991 });
const IdParams = Type.Object({ id: Id });
const DeliveryParams = Type.Object({ id: Id, delivery_id: Id });
const EventsList = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
  minItems: 1,
  maxItems: 50,
  description: 'Event types or prefixes: instance.running, instance.*, * (default *)',
});
const CreateBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2000 }),
    events: Type.Optional(EventsList),
    description: Type.Optional(Type.String({ maxLength: 500 })),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
const UpdateBody = Type.Object(
  {
    url: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })),
    events: Type.Optional(EventsList),
    description: Type.Optional(Type.String({ maxLength: 500 })),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
const EventsQuery = Type.Object({
  after: Type.Optional(Type.String({ maxLength: 100, description: 'The id of the last event already seen' })),
  types: Type.Optional(
    Type.String({ maxLength: 2000, description: 'Comma-separated types or prefixes (instance.*)' }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
});
const DeliveriesQuery = Type.Object({
  before: Type.Optional(Id),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
});
const SettingsBody = Type.Object(
  { balance_low_threshold: Type.Union([Type.Number({ minimum: 0, maximum: 1e9 }), Type.Null()]) },
  { additionalProperties: false },
);
const EmptyBody = Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]);

const webhookSchema = Type.Object({
  id: Type.Integer(),
  url: Type.String(),
  description: Type.String(),
  events: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  disabled_reason: Type.Union([Type.String(), Type.Null()]),
  failing_since: Type.Union([Type.Number(), Type.Null()]),
  previous_secret_valid_until: Type.Union([Type.Number(), Type.Null()]),
  created_at: Type.Number(),
  updated_at: Type.Number(),
});
const withSecret = Type.Object({
  success: Type.Boolean(),
  webhook: webhookSchema,
  secret: Type.String({ description: 'The signing secret (whsec_…): shown in this reply only' }),
});
const eventSchema = Type.Object({
  id: Type.String(),
  type: Type.String(),
  timestamp: Type.String(),
  created_at: Type.Number(),
  data: Type.Object({}, { additionalProperties: true }),
});
const attemptSchema = Type.Object({
  at: Type.Number(),
  status_code: Type.Union([Type.Integer(), Type.Null()]),
  latency_ms: Type.Integer(),
  success: Type.Boolean(),
  error: Type.Union([Type.String(), Type.Null()]),
});
const deliverySchema = Type.Object({
  id: Type.Integer(),
  webhook_id: Type.Integer(),
  event_id: Type.String(),
  event_type: Type.String(),
  state: Type.String({ description: 'pending, delivered or failed' }),
  attempts: Type.Integer(),
  next_attempt_at: Type.Union([Type.Number(), Type.Null()]),
  last_status: Type.Union([Type.Integer(), Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()]),
  last_latency_ms: Type.Union([Type.Integer(), Type.Null()]),
  delivered_at: Type.Union([Type.Number(), Type.Null()]),
  created_at: Type.Number(),
  attempt_log: Type.Array(attemptSchema),
});
const ok = Type.Object({ success: Type.Boolean(), msg: Type.Optional(Type.String()) });
const tags = ['webhooks'];
const cfg = { scope: 'webhooks' } as const;

export async function webhooksRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  const base = '/api/v0/webhooks';
  app.post<{ Body: Static<typeof CreateBody> }>(
    `${base}/`,
    {
      config: cfg,
      schema: {
        tags,
        summary: 'Register a webhook; the signing secret is in this reply only',
        body: CreateBody,
        response: { 200: withSecret, ...authErrors },
      },
    },
    async (req) => {
      const { secret, ...webhook } = await svc.createWebhook(deps, requireAuth(req), req.body);
      return { success: true, webhook, secret };
    },
  );
  app.get(
    `${base}/`,
    {
      config: cfg,
      schema: {
        tags,
        summary: "The caller's webhooks",
        response: {
          200: Type.Object({ success: Type.Boolean(), webhooks: Type.Array(webhookSchema) }),
          ...authErrors,
        },
      },
    },
    async (req) => ({ success: true, webhooks: await svc.listWebhooks(deps, requireAuth(req)) }),
  );
  app.get<{ Params: Static<typeof IdParams> }>(
    `${base}/:id/`,
    {
      config: cfg,
      schema: {
        tags,
        params: IdParams,
        response: { 200: Type.Object({ success: Type.Boolean(), webhook: webhookSchema }), ...authErrors },
      },
    },
    async (req) => ({ success: true, webhook: await svc.getWebhook(deps, requireAuth(req), req.params.id) }),
  );
  app.put<{ Params: Static<typeof IdParams>; Body: Static<typeof UpdateBody> }>(
    `${base}/:id/`,
    {
      config: cfg,
      schema: {
        tags,
        summary: 'Change url, events, description or enabled (enabling forgets past failures)',
        params: IdParams,
        body: UpdateBody,
        response: { 200: Type.Object({ success: Type.Boolean(), webhook: webhookSchema }), ...authErrors },
      },
    },
    async (req) => ({
      success: true,
      webhook: await svc.updateWebhook(deps, requireAuth(req), req.params.id, req.body),
    }),
  );
  app.delete<{ Params: Static<typeof IdParams> }>(
    `${base}/:id/`,
    { config: cfg, schema: { tags, params: IdParams, response: { 200: ok, ...authErrors } } },
    async (req) => {
      await svc.deleteWebhook(deps, requireAuth(req), req.params.id);
      return { success: true, msg: 'Webhook deleted' };
    },
  );
  app.post<{ Params: Static<typeof IdParams> }>(
    `${base}/:id/rotate-secret/`,
    {
      config: cfg,
      schema: {
        tags,
        summary: 'A new signing secret (in this reply only); the previous one keeps signing for 24 h',
        params: IdParams,
        body: EmptyBody,
        response: { 200: withSecret, ...authErrors },
      },
    },
    async (req) => {
      const { secret, ...webhook } = await svc.rotateSecret(deps, requireAuth(req), req.params.id);
      return { success: true, webhook, secret };
    },
  );
  app.post<{ Params: Static<typeof IdParams> }>(
    `${base}/:id/test/`,
    {
      config: cfg,
      schema: {
        tags,
        summary: 'Queue a webhook.test delivery to this endpoint',
        params: IdParams,
        body: EmptyBody,
        response: {
          200: Type.Object({ success: Type.Boolean(), delivery_id: Type.Integer(), event_id: Type.String() }),
          ...authErrors,
          409: errorSchema,
        },
      },
    },
    async (req) => ({ success: true, ...(await svc.testWebhook(deps, requireAuth(req), req.params.id)) }),
  );
  app.get<{ Params: Static<typeof IdParams>; Querystring: Static<typeof DeliveriesQuery> }>(
    `${base}/:id/deliveries/`,
    {
      config: cfg,
      schema: {
        tags,
        summary: 'Deliveries to this endpoint, newest first, with every attempt (status code, latency)',
        params: IdParams,
        querystring: DeliveriesQuery,
        response: {
          200: Type.Object({ success: Type.Boolean(), deliveries: Type.Array(deliverySchema) }),
          ...authErrors,
        },
      },
    },
    async (req) => ({
      success: true,
      deliveries: await svc.listDeliveries(deps, requireAuth(req), req.params.id, req.query),
    }),
  );
  app.post<{ Params: Static<typeof DeliveryParams> }>(
    `${base}/:id/deliveries/:delivery_id/retry/`,
    {
      config: cfg,
      schema: {
        tags,
        summary: 'Send a delivery again now, with the same webhook-id',
        params: DeliveryParams,
        body: EmptyBody,
        response: { 200: ok, ...authErrors },
      },
    },
    async (req) => {
      await svc.retryDelivery(deps, requireAuth(req), req.params.id, req.params.delivery_id);
      return { success: true, msg: 'Delivery queued' };
    },
  );
  const settingsSchema = Type.Object({
    success: Type.Boolean(),
    balance_low_threshold: Type.Union([Type.Number(), Type.Null()]),
  });
  app.get(
    '/api/v0/events/settings/',
    {
      config: cfg,
      schema: {
        tags,
        summary: 'Event settings: the balance.low threshold',
        response: { 200: settingsSchema, ...authErrors },
      },
    },
    async (req) => ({ success: true, ...(await svc.getEventSettings(deps, requireAuth(req))) }),
  );
  app.put<{ Body: Static<typeof SettingsBody> }>(
    '/api/v0/events/settings/',
    {
      config: cfg,
      schema: {
        tags,
        summary: 'Set the balance (dollars) at or below which balance.low fires; null turns it off',
        body: SettingsBody,
        response: { 200: settingsSchema, ...authErrors },
      },
    },
    async (req) => ({ success: true, ...(await svc.putEventSettings(deps, requireAuth(req), req.body)) }),
  );
  app.get<{ Querystring: Static<typeof EventsQuery> }>(
    '/api/v0/events/',
    {
      config: cfg,
      schema: {
        tags,
        summary: "The caller's events of the last 30 days, oldest first, after the event `after`",
        querystring: EventsQuery,
        response: {
          200: Type.Object({
            success: Type.Boolean(),
            events: Type.Array(eventSchema),
            has_more: Type.Boolean(),
            next_after: Type.Union([Type.String(), Type.Null()]),
          }),
          ...authErrors,
        },
      },
    },
    async (req) => ({ success: true, ...(await svc.listEvents(deps, requireAuth(req), req.query)) }),
  );
}
