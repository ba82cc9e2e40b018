// Billing history in the official CLI's formats (docs/market.md, "Billing history"):
// GET  /api/v0/users/me/invoices?sdate&edate&inc_charges → {invoices, current}     (show invoices)
// POST /api/v0/contracts/fetch/ {label, contract_ids}     → {contracts}             (--instance_label)
// GET  /api/v0/invoices?select_filters                    → [invoice, …]            (search invoices)
// GET  /api/v1/invoices/?select_filters&limit&after_token → {results, next_token}  (show invoices-v1 -i)
// GET  /api/v0/charges/?select_filters&limit&after_token  → {results, next_token}  (show invoices-v1 -c)
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { authErrors, rowId } from '../../http/schemas.js';
import {
  contractsLabelled,
  MAX_CONTRACT_IDS,
  MAX_INVOICE_DAYS,
  showInvoices,
  type InvoicesQuery,
} from './billing.invoices.js';
import {
  chargesV1,
  invoicesV1,
  PAGE_MAX_LIMIT,
  searchInvoices,
  SEARCH_MAX_LIMIT,
  type ChargesQuery,
  type InvoicesV1Query,
} from './billing.invoices-v1.js';

const str = { type: 'string' } as const;
const num = { type: 'number' } as const;
const nullableNum = { type: ['number', 'null'] } as const;

const invoiceItemSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer', description: "payments: the credit's id" },
    type: { type: 'string', description: 'charge or payment' },
    kind: { type: 'string', description: 'charges: compute or disk' },
    service: str,
    instance_id: { type: ['integer', 'null'] },
    description: str,
    quantity: { type: 'number', description: 'charges: hours billed' },
    rate: { type: 'number', description: "charges: $/hour, the instance's locked rate" },
    amount: { type: 'number', description: 'USD, positive for charges and payments alike' },
    timestamp: {
      type: 'number',
      description: 'unix seconds: the end of the last billed period, or when the credit was added',
    },
    start: num,
    end: num,
  },
} as const;

/** An entry of a v1 page: an invoice (a credit) or a contract's charges, with its items. */
const entrySchema = (metadata: Record<string, unknown>, items: unknown) =>
  ({
    type: 'object',
    properties: {
      start: nullableNum,
      end: nullableNum,
      type: str,
      source: { type: ['string', 'null'] },
      description: str,
      amount: num,
      metadata: { type: 'object', properties: metadata },
      items,
    },
  }) as const;

const chargeItemSchema = entrySchema({}, { type: 'array', items: {} });

const pageSchema = (entry: unknown) =>
  ({
    type: 'object',
    properties: {
      success: { type: 'boolean' },
      count: { type: 'integer', description: 'entries on this page' },
      total: { type: 'integer', description: 'entries the filters select, on every page' },
      next_token: {
        type: ['string', 'null'],
        description: 'after_token of the next page; null after the last',
      },
      results: { type: 'array', items: entry },
    },
  }) as const;

/** The query of a v1 page whose range field is `dateField`, with the route's own `more` fields. */
const pageQuery = (dateField: string, more: Record<string, unknown>) =>
  ({
    type: 'object',
    properties: {
      select_filters: {
        type: 'string',
        description: `JSON {field: {op: value}}; ${dateField} (epoch seconds) is required`,
      },
      latest_first: { type: 'string', description: 'true (default) or false' },
      limit: { type: 'string', description: `1 to ${PAGE_MAX_LIMIT} (default 60)` },
      after_token: { type: 'string', description: "the previous page's next_token, with the same order" },
      ...more,
    },
  }) as const;

export async function invoiceRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.get<{ Querystring: InvoicesQuery }>(
    '/api/v0/users/me/invoices',
    {
      config: { scope: 'billing' },
      schema: {
        tags: ['billing'],
        summary: "The caller's billing history: credits, and charges per instance, UTC day and kind",
        querystring: {
          type: 'object',
          properties: {
            owner: str,
            sdate: { type: 'string', description: 'unix seconds; default 30 days before edate' },
            edate: {
              type: 'string',
              description: `unix seconds; default now; at most ${MAX_INVOICE_DAYS} days after sdate`,
            },
            inc_charges: { type: 'string', description: 'true (default) or false: credits only' },
          },
        },
        response: {
          200: {
            type: 'object',
            properties: {
              success: { type: 'boolean' },
              sdate: num,
              edate: num,
              invoices: { type: 'array', items: invoiceItemSchema },
              totals: {
                type: 'object',
                properties: { charges: num, credits: num },
                description: 'USD of the charges and of the credits listed, summed exactly',
              },
              current: {
                type: 'object',
                description: "today's (UTC) charges so far, and the balance (credit)",
                properties: { charges: num, service_fee: num, total: num, credit: num },
              },
            },
          },
          ...authErrors,
        },
      },
    },
    async (req) => showInvoices(deps.db, requireAuth(req).user.id, req.query, deps.clock.now()),
  );

  app.post<{ Body: { label: string; contract_ids: number[] } }>(
    '/api/v0/contracts/fetch',
    {
      // A read of the caller's instances (their labels), sent as a POST.
      config: { scope: 'instances', access: 'read' },
      schema: {
        tags: ['billing'],
        summary: 'Those of the given instance ids that are yours and carry this label',
        body: {
          type: 'object',
          required: ['label', 'contract_ids'],
          properties: {
            label: { type: 'string', maxLength: 1024 },
            contract_ids: {
              type: 'array',
              maxItems: MAX_CONTRACT_IDS,
              items: rowId,
            },
          },
        },
        response: {
          200: {
            type: 'object',
            properties: {
              success: { type: 'boolean' },
              contracts: {
                type: 'array',
                items: { type: 'object', properties: { id: { type: 'integer' }, label: str } },
              },
            },
          },
          ...authErrors,
        },
      },
    },
    async (req) => contractsLabelled(deps.db, requireAuth(req).user.id, req.body),
  );

  app.get<{ Querystring: { select_filters?: string; select_cols?: string; limit?: string } }>(
    '/api/v0/invoices',
    {
      config: { scope: 'billing' },
      schema: {
        tags: ['billing'],
        summary: "Search the caller's invoices (the credits added to the account), newest first",
        querystring: {
          type: 'object',
          properties: {
            select_filters: { type: 'string', description: 'JSON {field: {op: value}}' },
            select_cols: { type: 'string', description: 'accepted; every field is returned' },
            limit: { type: 'string', description: `1 to ${SEARCH_MAX_LIMIT} (default ${SEARCH_MAX_LIMIT})` },
          },
        },
        response: {
          200: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                id: { type: 'integer' },
                user_id: { type: 'integer' },
                when: num,
                paid_on: num,
                payment_expected: num,
                amount_cents: num,
                original_amount: num,
                amount: { type: 'number', description: 'USD' },
                is_credit: { type: 'boolean' },
                is_delayed: { type: 'boolean' },
                failed: { type: 'boolean' },
                refunded: { type: 'boolean' },
                is_check: { type: 'boolean' },
                cut_amount: num,
                cut_percent: num,
                service: str,
                description: str,
              },
            },
          },
          ...authErrors,
        },
      },
    },
    async (req) => searchInvoices(deps.db, requireAuth(req).user.id, req.query),
  );

  app.get<{ Querystring: InvoicesV1Query }>(
    '/api/v1/invoices',
    {
      config: { scope: 'billing' },
      schema: {
        tags: ['billing'],
        summary: "The caller's invoices (credits added to the account), a page at a time",
        querystring: pageQuery('when', {
          order_by: {
            type: 'string',
            description:
              'JSON array of {"col": when|paid_on|amount_cents, "dir": asc|desc}; overrides latest_first',
          },
        }),
        response: {
          200: pageSchema(
            entrySchema(
              { invoice_id: { type: 'integer' }, service: str },
              { type: 'array', items: chargeItemSchema },
            ),
          ),
          ...authErrors,
        },
      },
    },
    async (req) => invoicesV1(deps.db, requireAuth(req).user.id, req.query),
  );

  app.get<{ Querystring: ChargesQuery }>(
    '/api/v0/charges',
    {
      config: { scope: 'billing' },
      schema: {
        tags: ['billing'],
        summary: "The caller's charges per instance over a range of UTC days, a page at a time",
        querystring: pageQuery('day', {
          format: { type: 'string', description: 'table (default) or tree: the same for openrig' },
        }),
        response: {
          200: pageSchema(
            entrySchema(
              { label: { type: ['string', 'null'] }, template_id: { type: ['integer', 'null'] } },
              { type: 'array', items: chargeItemSchema },
            ),
          ),
          ...authErrors,
        },
      },
    },
    async (req) => chargesV1(deps.db, requireAuth(req).user.id, req.query),
  );
}
