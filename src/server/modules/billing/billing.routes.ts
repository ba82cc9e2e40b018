// Balance and charges. Registered by instancesRoutes (modules/index.ts is shared).
// GET /api/v0/billing/          → balance, and each live instance's accrued cost and rates
// GET /api/v0/billing/charges/  → the ledger, newest first (?limit, ?before_id for the next page)
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.js';
import { requireAuth } from '../../http/auth.js';
import { authErrors } from '../../http/schemas.js';
import { CommonErrors } from '../../errors.js';
import { MICROS_PER_USD } from './billing.meter.js';

const usd = (micros: number) => micros / MICROS_PER_USD;

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
    async (req) => {
      const userId = requireAuth(req).user.id;
      const u = await deps.db
        .selectFrom('users')
        .select('balance_micros')
        .where('id', '=', userId)
        .executeTakeFirstOrThrow();
      const rows = await deps.db
        .selectFrom('instances')
        .select(['id', 'actual_status', 'accrued_micros', 'dph_compute', 'dph_disk', 'billed_until'])
        .where('user_id', '=', userId)
        .where('destroyed_at', 'is', null)
        .orderBy('id')
        .execute();
      return {
        success: true,
        balance: usd(u.balance_micros),
        balance_micros: u.balance_micros,
        instances: rows.map((r) => ({
          id: r.id,
          actual_status: r.actual_status,
          accrued_cost: usd(r.accrued_micros),
          compute_dph: r.dph_compute,
          disk_dph: r.dph_disk,
          billed_until: r.billed_until / 1000,
        })),
      };
    },
  );
  app.get(
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
    async (req) => {
      const userId = requireAuth(req).user.id;
      const q = req.query as { limit?: number; before_id?: number; instance_id?: number };
      const limit = q.limit ?? 100;
      if (limit < 1) throw CommonErrors.badRequest('limit must be at least 1');
      let qb = deps.db.selectFrom('billing_ledger').selectAll().where('user_id', '=', userId);
      if (q.before_id) qb = qb.where('id', '<', q.before_id);
      if (q.instance_id) qb = qb.where('instance_id', '=', q.instance_id);
      const rows = await qb
        .orderBy('id', 'desc')
        .limit(limit + 1)
        .execute();
      const page = rows.slice(0, limit);
      return {
        success: true,
        charges: page.map((r) => ({
          id: r.id,
          instance_id: r.instance_id,
          kind: r.kind,
          amount: usd(r.amount_micros),
          amount_micros: r.amount_micros,
          period_start: r.period_start / 1000,
          period_end: r.period_end / 1000,
        })),
        next_before_id: rows.length > limit ? page[page.length - 1]!.id : null,
      };
    },
  );
}
