// Webhook endpoints and the event feed (docs/webhooks.md); schemas in src/contract/schemas/webhooks.ts.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/webhooks.js';
import * as svc from './webhooks.service.js';

const cfg = { scope: 'webhooks' } as const;

export const createWebhook = route(C.createWebhook)({
  config: cfg,
  handler: (deps) => async (req) => {
    const { secret, ...webhook } = await svc.createWebhook(deps, requireAuth(req), req.body);
    return { success: true, webhook, secret };
  },
});

export const listWebhooks = route(C.listWebhooks)({
  config: cfg,
  handler: (deps) => async (req) => ({
    success: true,
    webhooks: await svc.listWebhooks(deps, requireAuth(req)),
  }),
});

export const showWebhook = route(C.showWebhook)({
  config: cfg,
  handler: (deps) => async (req) => ({
    success: true,
    webhook: await svc.getWebhook(deps, requireAuth(req), req.params.id),
  }),
});

export const updateWebhook = route(C.updateWebhook)({
  config: cfg,
  handler: (deps) => async (req) => ({
    success: true,
    webhook: await svc.updateWebhook(deps, requireAuth(req), req.params.id, req.body),
  }),
});

export const deleteWebhook = route(C.deleteWebhook)({
  config: cfg,
  handler: (deps) => async (req) => {
    await svc.deleteWebhook(deps, requireAuth(req), req.params.id);
    return { success: true, msg: 'Webhook deleted' };
  },
});

export const rotateSecret = route(C.rotateSecret)({
  config: cfg,
  handler: (deps) => async (req) => {
    const { secret, ...webhook } = await svc.rotateSecret(deps, requireAuth(req), req.params.id);
    return { success: true, webhook, secret };
  },
});

export const testWebhook = route(C.testWebhook)({
  config: cfg,
  handler: (deps) => async (req) => ({
    success: true,
    ...(await svc.testWebhook(deps, requireAuth(req), req.params.id)),
  }),
});

export const listDeliveries = route(C.listDeliveries)({
  config: cfg,
  handler: (deps) => async (req) => ({
    success: true,
    deliveries: await svc.listDeliveries(deps, requireAuth(req), req.params.id, req.query),
  }),
});

export const retryDelivery = route(C.retryDelivery)({
  config: cfg,
  handler: (deps) => async (req) => {
    await svc.retryDelivery(deps, requireAuth(req), req.params.id, req.params.delivery_id);
    return { success: true, msg: 'Delivery queued' };
  },
});

export const getEventSettings = route(C.getEventSettings)({
  config: cfg,
  handler: (deps) => async (req) => ({
    success: true,
    ...(await svc.getEventSettings(deps, requireAuth(req))),
  }),
});

export const putEventSettings = route(C.putEventSettings)({
  config: cfg,
  handler: (deps) => async (req) => ({
    success: true,
    ...(await svc.putEventSettings(deps, requireAuth(req), req.body)),
  }),
});

export const listEvents = route(C.listEvents)({
  config: cfg,
  handler: (deps) => async (req) => ({
    success: true,
    ...(await svc.listEvents(deps, requireAuth(req), req.query)),
  }),
});

export const webhookRoutes = [
  createWebhook,
  listWebhooks,
  showWebhook,
  updateWebhook,
  deleteWebhook,
  rotateSecret,
  testWebhook,
  listDeliveries,
  retryDelivery,
  getEventSettings,
  putEventSettings,
  listEvents,
];

export async function webhooksRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, webhookRoutes);
}
