// Balance and charges.
// GET /api/v0/billing/          → balance, and each live instance's accrued cost and rates
// GET /api/v0/billing/charges/  → the ledger, newest first (?limit, ?before_id for the next page)
// GET /api/v0/users/me/machine-earnings?sday&eday[&machid] → a host's earnings per machine and day
// and the billing history in the official CLI's formats (billing.invoices.routes.ts).
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { authErrors, rowId } from '../../http/schemas.js';
import { billingSummary, chargesPage, machineEarnings } from './billing.service.js';
import { invoiceRoutes } from './billing.invoices.routes.js';

/** The query of GET /billing/charges/, as its schema below checks it. */
interface ChargesQuery {
  limit?: number;
  before_id?: number;
  instance_id?: number;
}

const earningsSchema = {
  type: 'object',
  properties: {
    gpu_earn: { type: 'number', description: 'USD of compute charges' },
    sto_earn: { type: 'number', description: 'USD of disk charges' },
    bwu_earn: { type: 'number', description: 'always 0: openrig has no bandwidth charges' },
    bwd_earn: { type: 'number', description: 'always 0: openrig has no bandwidth charges' },
    earn: { type: 'number', description: 'USD in all' },
  },
} as const;

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
            before_id: rowId,
            instance_id: rowId,
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
  app.get<{ Querystring: { sday?: string; eday?: string; machid?: string } }>(
    '/api/v0/users/me/machine-earnings',
    {
      config: { scope: 'billing' },
      schema: {
        tags: ['billing'],
        summary: "What renters paid for the caller's machines, per machine and per UTC day",
        querystring: {
          type: 'object',
          properties: {
            owner: { type: 'string' },
            sday: {
              type: 'string',
              description: 'first UTC day, in days since 1970-01-01; yesterday when absent',
            },
            eday: { type: 'string', description: 'last UTC day (included); at most 366 days after sday' },
            machid: { type: 'string', description: "one of the caller's machines; all when absent or null" },
          },
        },
        response: {
          200: {
            type: 'object',
            properties: {
              success: { type: 'boolean' },
              sday: { type: 'integer' },
              eday: { type: 'integer' },
              start: { type: 'number', description: 'unix seconds: the start of day sday' },
              end: { type: 'number', description: 'unix seconds: the end of day eday' },
              summary: {
                type: 'object',
                properties: {
                  total_gpu: { type: 'number' },
                  total_stor: { type: 'number' },
                  total_bwu: { type: 'number' },
                  total_bwd: { type: 'number' },
                  total_earn: { type: 'number' },
                },
              },
              per_machine: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: { machine_id: { type: 'integer' }, ...earningsSchema.properties },
                },
              },
              per_day: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    day: { type: 'integer' },
                    date: { type: 'string', description: 'YYYY-MM-DD (UTC)' },
                    ...earningsSchema.properties,
                  },
                },
              },
            },
          },
          ...authErrors,
        },
      },
    },
    async (req) => machineEarnings(deps.db, requireAuth(req).user.id, req.query, deps.clock.now()),
  );
  await invoiceRoutes(app, deps);
}
