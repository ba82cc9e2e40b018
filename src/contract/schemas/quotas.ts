// Quotas and budgets (docs/quotas.md): a team's limits and each member's (GPUs running at once,
// $/hour running at once, spend per calendar month), an API key's own month budget; and the
// official CLI's subaccount and credit calls: `show subaccounts` (GET /subaccounts?owner=me) and
// `transfer credit` (PUT /commands/transfer_credit/). (`create subaccount`, POST /users/, is the
// accounts module's.)
import { authErrors, errorSchema, nullable, ownerParam, rowId, successReply } from './common.js';

const tags = ['quotas'] as const;

const teamIdQuery = {
  type: 'string',
  pattern: '^[1-9][0-9]{0,15}$',
  description: 'the team; default: the team of the key or session, else the one team you own or manage',
} as const;

/** A scope's limits (null: none) with what runs and what was spent this month. */
export const scopeLimitsSchema = {
  type: 'object',
  properties: {
    max_gpus: nullable('integer', 'the most GPUs running at once'),
    max_dph: nullable('number', 'the most $/hour (compute and disk) running at once'),
    month_budget: nullable('number', 'USD to spend per calendar month (UTC)'),
    running_gpus: { type: 'integer', description: 'GPUs of the live instances meant to run' },
    running_dph: { type: 'number', description: '$/hour of those instances' },
    month_spend: { type: 'number', description: 'USD charged this calendar month (UTC)' },
  },
} as const;

export const memberLimitsSchema = {
  type: 'object',
  properties: {
    user_id: { type: 'integer' },
    email: { type: 'string' },
    role: { type: 'string' },
    ...scopeLimitsSchema.properties,
  },
} as const;

export const quotasReply = successReply({
  team_id: { type: 'integer' },
  team_name: { type: 'string' },
  month: { type: 'string', description: 'YYYY-MM, UTC' },
  can_manage: { type: 'boolean', description: 'whether the caller may set limits (owner or manager)' },
  team: scopeLimitsSchema,
  members: { type: 'array', items: memberLimitsSchema },
});

export const getQuotas = {
  method: 'GET',
  url: '/api/v0/quotas',
  schema: {
    tags,
    summary: "A team's limits and each member's, with what runs now and this month's spend",
    querystring: {
      type: 'object',
      additionalProperties: false,
      properties: { team_id: teamIdQuery },
    },
    response: { 200: quotasReply, ...authErrors },
  },
} as const;

const limitFields = {
  max_gpus: { type: ['integer', 'null'], minimum: 0, maximum: 100000, description: 'null: no limit' },
  max_dph: { type: ['number', 'null'], minimum: 0, maximum: 1000000, description: '$/hour; null: no limit' },
  month_budget: {
    type: ['number', 'null'],
    minimum: 0,
    maximum: 1000000000,
    description: 'USD per calendar month (UTC); null: no budget',
  },
} as const;

export const setQuota = {
  method: 'PUT',
  url: '/api/v0/quotas',
  schema: {
    tags,
    summary:
      "Set a team's limits, or a member's (user_id or email): owners and managers only. Fields given replace, null clears, absent ones stay",
    body: {
      type: 'object',
      additionalProperties: false,
      minProperties: 1,
      properties: {
        team_id: rowId,
        user_id: { ...rowId, description: 'the member; absent: the team as a whole' },
        email: { type: 'string', maxLength: 320, description: 'the member, by e-mail' },
        ...limitFields,
      },
    },
    response: { 200: quotasReply, ...authErrors },
  },
} as const;

export const deleteQuota = {
  method: 'DELETE',
  url: '/api/v0/quotas',
  schema: {
    tags,
    summary: 'Remove every limit of a team, or of a member (user_id or email): owners and managers only',
    body: {
      type: 'object',
      additionalProperties: false,
      properties: {
        team_id: rowId,
        user_id: rowId,
        email: { type: 'string', maxLength: 320 },
      },
    },
    response: { 200: quotasReply, ...authErrors },
  },
} as const;

export const keyLimitSchema = {
  type: 'object',
  properties: {
    api_key_id: { type: 'integer' },
    name: { type: 'string' },
    month_budget: nullable('number', 'USD per calendar month (UTC); null: no budget'),
    month_spend: { type: 'number', description: 'USD charged this month for instances the key created' },
  },
} as const;

export const keyLimitsReply = successReply({
  month: { type: 'string' },
  keys: { type: 'array', items: keyLimitSchema },
});

export const getKeyLimits = {
  method: 'GET',
  url: '/api/v0/quotas/keys',
  schema: {
    tags,
    summary: "Your API keys' month budgets and what the instances each created cost this month",
    response: { 200: keyLimitsReply, ...authErrors },
  },
} as const;

export const setKeyLimit = {
  method: 'PUT',
  url: '/api/v0/quotas/keys/:id',
  schema: {
    tags,
    summary:
      "Set one of your API keys' month budget: a create made with it is refused once the instances it created cost that much this month, and they are stopped",
    params: { type: 'object', required: ['id'], properties: { id: rowId } },
    body: {
      type: 'object',
      required: ['month_budget'],
      additionalProperties: false,
      properties: { month_budget: limitFields.month_budget },
    },
    response: { 200: keyLimitsReply, ...authErrors },
  },
} as const;

export const subaccountSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    email: { type: 'string' },
    username: { type: 'string' },
    fullname: { type: 'string' },
    host_only: { type: 'boolean' },
    balance: { type: 'number' },
    credit: { type: 'number' },
    email_verified: { type: 'boolean' },
    parent_id: { type: 'integer' },
    created_at: { type: 'number', description: 'epoch seconds' },
  },
} as const;

export const listSubaccounts = {
  method: 'GET',
  url: '/api/v0/subaccounts',
  schema: {
    tags,
    summary: 'The accounts you made with create subaccount (POST /users/ with parent_id "me")',
    querystring: {
      type: 'object',
      additionalProperties: false,
      properties: { owner: ownerParam },
    },
    response: {
      200: {
        type: 'object',
        properties: { success: { type: 'boolean' }, users: { type: 'array', items: subaccountSchema } },
      },
      ...authErrors,
    },
  },
} as const;

export const transferCredit = {
  method: 'PUT',
  url: '/api/v0/commands/transfer_credit',
  schema: {
    tags,
    summary:
      'Move credit from your balance to another account (e-mail or id), in one transaction: invalid_recipient, insufficient_balance',
    body: {
      type: 'object',
      required: ['recipient', 'amount'],
      additionalProperties: false,
      properties: {
        sender: { type: 'string', enum: ['me'], description: 'the caller: "me", the only value' },
        recipient: {
          type: ['string', 'integer'],
          maxLength: 320,
          description: "the recipient's e-mail or account id",
        },
        amount: { type: 'number', description: 'USD, more than 0' },
      },
    },
    response: {
      200: successReply({
        amount: { type: 'number' },
        recipient_id: { type: 'integer' },
        balance: { type: 'number', description: 'your balance afterwards, USD' },
      }),
      ...authErrors,
      402: errorSchema,
    },
  },
} as const;
