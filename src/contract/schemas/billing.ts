// Billing: the balance and the ledger, a host's earnings, and the billing history in the official
// CLI's formats (invoices, charges, contracts by label).
import {
  authErrors,
  countText,
  errorSchema,
  idParams,
  jsonListText,
  jsonObjectText,
  orderEntry,
  ownerParam,
  rowId,
} from './common.js';

/** The most days one GET /users/me/invoices spans. */
export const MAX_INVOICE_DAYS = 366;
/** The most instance ids one POST /contracts/fetch/ names. */
export const MAX_CONTRACT_IDS = 10_000;
/** The most entries a v1 page (invoices, charges) holds. */
export const PAGE_MAX_LIMIT = 500;
/** The most invoices GET /invoices answers. */
export const SEARCH_MAX_LIMIT = 1000;

export const earningsSchema = {
  type: 'object',
  properties: {
    gpu_earn: { type: 'number', description: 'USD of compute charges' },
    sto_earn: { type: 'number', description: 'USD of disk charges' },
    bwu_earn: { type: 'number', description: 'always 0: openrig has no bandwidth charges' },
    bwd_earn: { type: 'number', description: 'always 0: openrig has no bandwidth charges' },
    earn: { type: 'number', description: 'USD in all' },
  },
} as const;

const str = { type: 'string' } as const;
/** Epoch seconds as query text (a fraction allowed); empty, null or None: absent. */
const epochText = {
  type: 'string',
  pattern: '^(?:|null|None|[0-9]{1,11}(?:\\.[0-9]*)?|\\.[0-9]+)$',
} as const;
/** A UTC day number as query text (a fraction names the day it falls in); empty or null: absent. */
const dayText = { type: 'string', pattern: '^(?:|null|[0-9]{1,6}(?:\\.[0-9]*)?|\\.[0-9]+)$' } as const;
const num = { type: 'number' } as const;
const nullableNum = { type: ['number', 'null'] } as const;

export const invoiceItemSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer', description: "payments: the credit's id" },
    type: { type: 'string', enum: ['charge', 'payment'], description: 'charge or payment' },
    kind: {
      type: 'string',
      enum: ['compute', 'disk', 'volume'],
      description: "charges: an instance's compute or disk, or a volume's storage",
    },
    service: str,
    instance_id: { type: ['integer', 'null'] },
    volume_id: { type: 'integer', description: 'volume charges: the volume' },
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
const entrySchema = <const M, const I>(metadata: M, items: I) =>
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

const pageSchema = <const E>(entry: E) =>
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
const pageQuery = <const F extends string, const P>(dateField: F, more: P) =>
  ({
    type: 'object',
    required: ['select_filters'],
    properties: {
      select_filters: {
        type: 'string',
        pattern: `^\\s*\\{[\\s\\S]*"${dateField}"[\\s\\S]*\\}\\s*$`,
        description: `JSON {field: {op: value}}; ${dateField} is required: its range in epoch seconds, e.g. {"${dateField}": {"gte": 1767225600, "lte": 1769903999}}`,
      },
      latest_first: {
        type: 'string',
        enum: ['true', 'false', 'True', 'False', '1', '0', ''],
        description: 'true (default) or false',
      },
      limit: countText(PAGE_MAX_LIMIT, `1 to ${PAGE_MAX_LIMIT} (default 60)`),
      after_token: { type: 'string', description: "the previous page's next_token, with the same order" },
      ...more,
    },
  }) as const;

export const billingSummary = {
  method: 'GET',
  url: '/api/v0/billing',
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
} as const;

export const ledgerCharges = {
  method: 'GET',
  url: '/api/v0/billing/charges',
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
                volume_id: { type: ['integer', 'null'], description: 'the volume of a `volume` charge' },
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
} as const;

export const machineEarnings = {
  method: 'GET',
  url: '/api/v0/users/me/machine-earnings',
  schema: {
    tags: ['billing'],
    summary: "What renters paid for the caller's machines, per machine and per UTC day",
    querystring: {
      type: 'object',
      properties: {
        owner: ownerParam,
        sday: {
          ...dayText,
          description:
            'first UTC day, in days since 1970-01-01; absent: the current period (this UTC month through today)',
        },
        eday: { ...dayText, description: 'last UTC day (included); at most 366 days after sday' },
        machid: {
          type: 'string',
          pattern: '^(?:|null|[1-9][0-9]{0,14})$',
          description: "one of the caller's machines; all when absent or null",
        },
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
          current: {
            type: 'object',
            description:
              'what the host is owed now (USD): total = earnings not yet in a payout, service_fee = the platform fee on them, balance = pending payouts + total − service_fee; credit = the account balance',
            properties: {
              balance: { type: 'number' },
              service_fee: { type: 'number' },
              total: { type: 'number' },
              credit: { type: 'number' },
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
} as const;

export const showInvoices = {
  method: 'GET',
  url: '/api/v0/users/me/invoices',
  schema: {
    tags: ['billing'],
    summary: "The caller's billing history: credits, and charges per instance, UTC day and kind",
    querystring: {
      type: 'object',
      properties: {
        owner: ownerParam,
        sdate: { ...epochText, description: 'unix seconds; default 30 days before edate' },
        edate: {
          ...epochText,
          description: `unix seconds; default now; at most ${MAX_INVOICE_DAYS} days after sdate`,
        },
        inc_charges: {
          type: 'string',
          pattern: '^(?:|null|None|true|True|1|false|False|0)$',
          description: 'true (default) or false: credits only',
        },
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
} as const;

export const fetchContracts = {
  method: 'POST',
  url: '/api/v0/contracts/fetch',
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
} as const;

export const searchInvoices = {
  method: 'GET',
  url: '/api/v0/invoices',
  schema: {
    tags: ['billing'],
    summary: "Search the caller's invoices (the credits added to the account), newest first",
    querystring: {
      type: 'object',
      properties: {
        select_filters: jsonObjectText('JSON {field: {op: value}}'),
        select_cols: { type: 'string', description: 'accepted; every field is returned' },
        limit: countText(SEARCH_MAX_LIMIT, `1 to ${SEARCH_MAX_LIMIT} (default ${SEARCH_MAX_LIMIT})`),
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
} as const;

export const invoicesV1 = {
  method: 'GET',
  url: '/api/v1/invoices',
  schema: {
    tags: ['billing'],
    summary:
      "The caller's invoices (credits added to the account, prepaid deposits, and its payouts as a host), a page at a time",
    querystring: pageQuery('when', {
      order_by: {
        type: 'string',
        pattern: jsonListText(orderEntry(['when', 'paid_on', 'amount_cents']), 1, 3, true),
        example: '[{"col":"when","dir":"desc"}]',
        description:
          'JSON array of 1 to 3 {"col": when|paid_on|amount_cents, "dir": asc|desc (default desc)}; overrides latest_first',
      },
    }),
    response: {
      200: pageSchema(
        entrySchema(
          {
            invoice_id: { type: 'integer' },
            service: str,
            status: { type: 'string', description: "a payout's: pending, paid or failed" },
          },
          { type: 'array', items: chargeItemSchema },
        ),
      ),
      ...authErrors,
    },
  },
} as const;

export const chargesV1 = {
  method: 'GET',
  url: '/api/v0/charges',
  schema: {
    tags: ['billing'],
    summary: "The caller's charges per instance and per volume over a range of UTC days, a page at a time",
    querystring: pageQuery('day', {
      format: {
        type: 'string',
        enum: ['table', 'tree', ''],
        description: 'table (default) or tree: the same for openrig',
      },
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
} as const;

/** A refused prepay or deposit read: `{error, msg}` with `success: false` (the CLI prints msg). */
const depositErrors = {
  ...authErrors,
  402: errorSchema,
  409: errorSchema,
} as const;

export const prepayInstance = {
  method: 'PUT',
  url: '/api/v0/instances/prepay/:id',
  schema: {
    tags: ['billing'],
    summary: 'Move credit from the balance into a discounted deposit on one of your on-demand instances',
    params: idParams,
    body: {
      type: 'object',
      required: ['amount'],
      properties: {
        amount: {
          type: ['number', 'string'],
          description: 'USD to move from the balance into the deposit; more than 0, at most the balance',
        },
      },
    },
    response: {
      200: {
        type: 'object',
        properties: {
          success: { type: 'boolean' },
          msg: str,
          timescale: {
            type: 'number',
            description: "months of the instance's list-price charges the deposit covers",
          },
          discount_rate: {
            type: 'number',
            description: 'the discount of charges paid from the deposit, a fraction (0.1 = 10 %)',
          },
          refundable_deposit: { type: 'number', description: 'USD in the deposit now' },
          balance: { type: 'number', description: 'USD left in the balance' },
        },
      },
      ...depositErrors,
    },
  },
} as const;

export const instanceDeposit = {
  method: 'GET',
  url: '/api/v0/instances/balance/:id',
  schema: {
    tags: ['billing'],
    summary: 'The prepaid deposit of one of your instances: what is left, and the discount it earned',
    params: idParams,
    querystring: { type: 'object', properties: { owner: ownerParam } },
    response: {
      200: {
        type: 'object',
        properties: {
          success: { type: 'boolean' },
          refundable_deposit: { type: 'number', description: 'USD left; refunded to the balance on destroy' },
          total_discount: { type: 'number', description: 'USD the discount took off charges so far' },
          discount_months: {
            type: 'number',
            description: 'the months the deposit covered at the last prepay',
          },
          discount_rate: { type: 'number', description: 'the discount, a fraction' },
          prepaid: { type: 'number', description: 'USD prepaid in all' },
          drawn: { type: 'number', description: 'USD of charges paid from the deposit' },
          refunded: { type: 'number', description: 'USD refunded to the balance on destroy' },
        },
      },
      ...authErrors,
    },
  },
} as const;
