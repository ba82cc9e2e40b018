// Balance and charges.
// GET /api/v0/billing/          → balance, and each live instance's accrued cost and rates
// GET /api/v0/billing/charges/  → the ledger, newest first (?limit, ?before_id for the next page)
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.js';
import { requireAuth } from '../../http/auth.js';
import { authErrors } from '../../http/schemas.js';
import { billingSummary, chargesPage } from './billing.service.js';

/** The query of GET /billing/charges/, as its schema below checks it. */
interface ChargesQuery {
  limit?: number;
  before_id?: number;
  instance_id?: number;
}

export async function billingRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.get(
    '/api/v0/billing',
    {
      config: { scope: 'billing' },
      schema: {
        tags: ['billing'],
        summary: 'Balance and the accrued cost of each live instance',
        response: {
          200: {
            type: 'object',
            properties: {
              success: { type: 'boolean' },
              balance: { type: 'number', description: 'USD; negative when disk charges ran past zero' },
              balance_micros: { type: 'integer' },
              instances: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    id: { type: 'integer' },
                    actual_status: { type: ['string', 'null'] },
                    accrued_cost: { type: 'number' },
                    compute_dph: { type: 'number' },
                    disk_dph: { type: 'number' },
                    billed_until: { type: 'number' },
                  },
                },
              },
            },
          },
          ...authErrors,
        },
      },
    },
    async (req) => billingSummary(deps.db, requireAuth(req).user.id),
  );
  app.get<{ Querystring: ChargesQuery }>(
    '/api/v0/billing/charges',
    {
      config: { scope: 'billing' },
      schema: {
        tags: ['billing'],
        summary: 'Ledger of charges, newest first',
        querystring: {
          type: 'object',
          properties: {
            limit: { type: 'integer', minimum: 1, maximum: 1000 },
            before_id: { type: 'integer', minimum: 1, maximum: 9007199254740991 },
            instance_id: { type: 'integer', minimum: 1, maximum: 9007199254740991 },
          },
        },
        response: {
          200: {
            type: 'object',
            properties: {
              success: { type: 'boolean' },
              charges: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    id: { type: 'integer' },
                    instance_id: { type: ['integer', 'null'] },
                    kind: { type: 'string' },
                    amount: { type: 'number' },
                    amount_micros: { type: 'integer' },
                    period_start: { type: 'number' },
                    period_end: { type: 'number' },
                  },
                },
              },
              next_before_id: { type: ['integer', 'null'] },
            },
          },
          ...authErrors,
        },
      },
    },
    async (req) => chargesPage(deps.db, requireAuth(req).user.id, req.query),
  );
}
