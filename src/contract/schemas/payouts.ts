// A host's payouts (docs/payouts.md): the list of its own payouts and where it is paid. The
// operator's side is the `openrig admin payouts` command.
import { authErrors, PLAIN_TEXT_PATTERN } from './common.js';

const tags = ['payouts'] as const;

export const payoutSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    host_id: { type: 'integer' },
    status: { type: 'string', description: 'pending, paid or failed' },
    method: { type: 'string', description: 'paypal_manual, wise_manual, internal or none' },
    destination: { type: 'string' },
    period_start: { type: 'number', description: 'unix seconds' },
    period_end: { type: 'number', description: 'unix seconds' },
    gross: { type: 'number', description: "USD renters paid for the host's machines over the period" },
    cut_percent: { type: 'number' },
    cut_amount: { type: 'number', description: 'USD, the platform fee' },
    amount: { type: 'number', description: 'USD paid to the host: gross − cut_amount' },
    note: { type: 'string' },
    created_at: { type: 'number' },
    settled_at: { type: ['number', 'null'] },
  },
} as const;

const destinationSchema = {
  type: ['object', 'null'],
  properties: {
    method: { type: 'string' },
    destination: { type: 'string' },
    updated_at: { type: 'number' },
  },
} as const;

export const listMyPayouts = {
  method: 'GET',
  url: '/api/v0/payouts',
  schema: {
    tags,
    summary: "The caller's payouts as a host, newest first, and where it is paid",
    querystring: {
      type: 'object',
      properties: { status: { type: 'string', enum: ['pending', 'paid', 'failed'] } },
    },
    response: {
      200: {
        type: 'object',
        properties: {
          payouts: { type: 'array', items: payoutSchema },
          destination: destinationSchema,
        },
      },
      ...authErrors,
    },
  },
} as const;

export const setMyPayoutDestination = {
  method: 'PUT',
  url: '/api/v0/payouts/destination',
  schema: {
    tags,
    summary:
      'Where the caller is paid: a PayPal or Wise e-mail, or a free-text internal account (a cost centre); method none forgets it',
    body: {
      type: 'object',
      required: ['method'],
      additionalProperties: false,
      properties: {
        method: { type: 'string', enum: ['paypal_manual', 'wise_manual', 'internal', 'none'] },
        destination: {
          type: 'string',
          maxLength: 200,
          pattern: PLAIN_TEXT_PATTERN,
          description: 'the e-mail address, or the account (1 to 200 characters of plain text)',
        },
      },
      // A destination for every method but none: an e-mail address for PayPal and Wise.
      anyOf: [
        { properties: { method: { enum: ['none'] } } },
        {
          required: ['destination'],
          properties: { method: { enum: ['internal'] }, destination: { pattern: '\\S' } },
        },
        {
          required: ['destination'],
          properties: {
            method: { enum: ['paypal_manual', 'wise_manual'] },
            destination: { pattern: '^\\s*[^\\s@]+@[^\\s@]+\\.[^\\s@]+\\s*$' },
          },
        },
      ],
      description:
        'method none, or a destination: the account (internal), an e-mail address (paypal_manual, wise_manual)',
    },
    response: {
      200: { type: 'object', properties: { success: { type: 'boolean' }, destination: destinationSchema } },
      ...authErrors,
    },
  },
} as const;
