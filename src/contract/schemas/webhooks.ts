// Webhook endpoints (register, list, show, change, delete, rotate the secret, test, deliveries,
// retry), the event settings and the event feed.
import { authErrors, errorSchema, idParams, rowId } from './common.js';

const tags = ['webhooks'] as const;
const base = '/api/v0/webhooks';

/** Every event type a webhook or the event feed names. */
export const WEBHOOK_EVENT_TYPES = [
  'instance.created',
  'instance.provisioning',
  'instance.loading',
  'instance.running',
  'instance.stopped',
  'instance.exited',
  'instance.unknown',
  'instance.offline',
  'instance.destroyed',
  'instance.preempted',
  'instance.resumed',
  'maintenance.scheduled',
  'maintenance.cancelled',
  'machine.online',
  'machine.offline',
  'balance.low',
  'budget.warning',
  'budget.exhausted',
  'payout.created',
  'payout.paid',
  'copy.started',
  'copy.completed',
  'copy.failed',
  'copy.canceled',
  'tfa.enabled',
  'tfa.disabled',
  'tfa.method_added',
  'tfa.locked',
  'api_key.created',
  'api_key.revoked',
  'webhook.disabled',
] as const;

const escape = (t: string) => t.replace(/[.*]/g, (c) => `\\${c}`);
const FAMILIES = [...new Set(WEBHOOK_EVENT_TYPES.map((t) => t.slice(0, t.indexOf('.'))))];
/** One entry of a filter: an event type, a family's prefix (`instance.*` or `instance.`), or `*`. */
const FILTER_ENTRY = `(?:\\*|(?:${FAMILIES.join('|')})\\.\\*?|${WEBHOOK_EVENT_TYPES.map(escape).join('|')})`;

const deliveryParams = {
  type: 'object',
  required: ['id', 'delivery_id'],
  properties: { id: rowId, delivery_id: rowId },
} as const;
const eventsList = {
  type: 'array',
  items: {
    type: 'string',
    minLength: 1,
    maxLength: 100,
    // Blanks around an entry are dropped.
    pattern: `^\\s*${FILTER_ENTRY}\\s*$`,
    description: `an event type (${WEBHOOK_EVENT_TYPES.join(', ')}), a prefix such as instance.*, or *`,
    example: 'instance.running',
  },
  minItems: 1,
  maxItems: 50,
  description: 'Event types or prefixes: instance.running, instance.*, * (default *)',
} as const;
const webhookFields = {
  url: {
    type: 'string',
    minLength: 1,
    maxLength: 2000,
    // A scheme, then a host with no user name or password.
    pattern: '^[hH][tT][tT][pP][sS]?://[^/?#@\\s\\\\]+(?:[/?#]|$)',
    description:
      'an absolute https:// URL (http:// only where the operator allows it), of a host webhooks may reach, e.g. https://hooks.example.com/openrig',
  },
  events: eventsList,
  description: { type: 'string', maxLength: 500 },
  enabled: { type: 'boolean' },
} as const;
const createBody = {
  type: 'object',
  required: ['url'],
  properties: webhookFields,
  additionalProperties: false,
} as const;
const updateBody = { type: 'object', properties: webhookFields, additionalProperties: false } as const;
const eventsQuery = {
  type: 'object',
  properties: {
    after: { type: 'string', maxLength: 100, description: 'The id of the last event already seen' },
    types: {
      type: 'string',
      maxLength: 2000,
      // Blank entries are skipped.
      pattern: `^(?:\\s*(?:${FILTER_ENTRY}\\s*)?)(?:,\\s*(?:${FILTER_ENTRY}\\s*)?)*$`,
      description:
        'Comma-separated event types or prefixes (instance.*, *), e.g. instance.running,maintenance.*',
    },
    limit: { type: 'integer', minimum: 1, maximum: 1000 },
  },
} as const;
const deliveriesQuery = {
  type: 'object',
  properties: { before: rowId, limit: { type: 'integer', minimum: 1, maximum: 500 } },
} as const;
const settingsBody = {
  type: 'object',
  required: ['balance_low_threshold'],
  properties: {
    balance_low_threshold: { anyOf: [{ type: 'number', minimum: 0, maximum: 1e9 }, { type: 'null' }] },
  },
  additionalProperties: false,
} as const;
/** A POST that takes no fields: any object, or no body at all. */
const emptyBody = {
  anyOf: [{ type: 'object', properties: {}, additionalProperties: true }, { type: 'null' }],
} as const;

const integer = { type: 'integer' } as const;
const number = { type: 'number' } as const;
const string = { type: 'string' } as const;
const boolean = { type: 'boolean' } as const;
const orNull = <const T extends object>(s: T) => ({ anyOf: [s, { type: 'null' }] }) as const;

export const webhookSchema = {
  type: 'object',
  required: [
    'id',
    'url',
    'description',
    'events',
    'enabled',
    'disabled_reason',
    'failing_since',
    'previous_secret_valid_until',
    'created_at',
    'updated_at',
  ],
  properties: {
    id: integer,
    url: string,
    description: string,
    events: { type: 'array', items: string },
    enabled: boolean,
    disabled_reason: orNull(string),
    failing_since: orNull(number),
    previous_secret_valid_until: orNull(number),
    created_at: number,
    updated_at: number,
  },
} as const;
export const webhookWithSecret = {
  type: 'object',
  required: ['success', 'webhook', 'secret'],
  properties: {
    success: boolean,
    webhook: webhookSchema,
    secret: { type: 'string', description: 'The signing secret (whsec_…): shown in this reply only' },
  },
} as const;
export const eventSchema = {
  type: 'object',
  required: ['id', 'type', 'timestamp', 'created_at', 'data'],
  properties: {
    id: string,
    type: string,
    timestamp: string,
    created_at: number,
    data: { type: 'object', properties: {}, additionalProperties: true },
  },
} as const;
const attemptSchema = {
  type: 'object',
  required: ['at', 'status_code', 'latency_ms', 'success', 'error'],
  properties: {
    at: number,
    status_code: orNull(integer),
    latency_ms: integer,
    success: boolean,
    error: orNull(string),
  },
} as const;
export const deliverySchema = {
  type: 'object',
  required: [
    'id',
    'webhook_id',
    'event_id',
    'event_type',
    'state',
    'attempts',
    'next_attempt_at',
    'last_status',
    'last_error',
    'last_latency_ms',
    'delivered_at',
    'created_at',
    'attempt_log',
  ],
  properties: {
    id: integer,
    webhook_id: integer,
    event_id: string,
    event_type: string,
    state: { type: 'string', description: 'pending, delivered or failed' },
    attempts: integer,
    next_attempt_at: orNull(number),
    last_status: orNull(integer),
    last_error: orNull(string),
    last_latency_ms: orNull(integer),
    delivered_at: orNull(number),
    created_at: number,
    attempt_log: { type: 'array', items: attemptSchema },
  },
} as const;
const ok = { type: 'object', required: ['success'], properties: { success: boolean, msg: string } } as const;
const oneWebhook = {
  type: 'object',
  required: ['success', 'webhook'],
  properties: { success: boolean, webhook: webhookSchema },
} as const;

export const eventsPage = {
  type: 'object',
  required: ['success', 'events', 'has_more', 'next_after'],
  properties: {
    success: boolean,
    events: { type: 'array', items: eventSchema },
    has_more: boolean,
    next_after: orNull(string),
  },
} as const;

export const createWebhook = {
  method: 'POST',
  url: `${base}/`,
  schema: {
    tags,
    summary: 'Register a webhook; the signing secret is in this reply only',
    body: createBody,
    response: { 200: webhookWithSecret, ...authErrors },
  },
} as const;

export const listWebhooks = {
  method: 'GET',
  url: `${base}/`,
  schema: {
    tags,
    summary: "The caller's webhooks",
    response: {
      200: {
        type: 'object',
        required: ['success', 'webhooks'],
        properties: { success: boolean, webhooks: { type: 'array', items: webhookSchema } },
      },
      ...authErrors,
    },
  },
} as const;

export const showWebhook = {
  method: 'GET',
  url: `${base}/:id/`,
  schema: { tags, params: idParams, response: { 200: oneWebhook, ...authErrors } },
} as const;

export const updateWebhook = {
  method: 'PUT',
  url: `${base}/:id/`,
  schema: {
    tags,
    summary: 'Change url, events, description or enabled (enabling forgets past failures)',
    params: idParams,
    body: updateBody,
    response: { 200: oneWebhook, ...authErrors },
  },
} as const;

export const deleteWebhook = {
  method: 'DELETE',
  url: `${base}/:id/`,
  schema: { tags, params: idParams, response: { 200: ok, ...authErrors } },
} as const;

export const rotateSecret = {
  method: 'POST',
  url: `${base}/:id/rotate-secret/`,
  schema: {
    tags,
    summary: 'A new signing secret (in this reply only); the previous one keeps signing for 24 h',
    params: idParams,
    body: emptyBody,
    response: { 200: webhookWithSecret, ...authErrors },
  },
} as const;

export const testWebhook = {
  method: 'POST',
  url: `${base}/:id/test/`,
  schema: {
    tags,
    summary: 'Queue a webhook.test delivery to this endpoint',
    params: idParams,
    body: emptyBody,
    response: {
      200: {
        type: 'object',
        required: ['success', 'delivery_id', 'event_id'],
        properties: { success: boolean, delivery_id: integer, event_id: string },
      },
      ...authErrors,
      409: errorSchema,
    },
  },
} as const;

export const listDeliveries = {
  method: 'GET',
  url: `${base}/:id/deliveries/`,
  schema: {
    tags,
    summary: 'Deliveries to this endpoint, newest first, with every attempt (status code, latency)',
    params: idParams,
    querystring: deliveriesQuery,
    response: {
      200: {
        type: 'object',
        required: ['success', 'deliveries'],
        properties: { success: boolean, deliveries: { type: 'array', items: deliverySchema } },
      },
      ...authErrors,
    },
  },
} as const;

export const retryDelivery = {
  method: 'POST',
  url: `${base}/:id/deliveries/:delivery_id/retry/`,
  schema: {
    tags,
    summary: 'Send a delivery again now, with the same webhook-id',
    params: deliveryParams,
    body: emptyBody,
    response: { 200: ok, ...authErrors },
  },
} as const;

const settingsReply = {
  type: 'object',
  required: ['success', 'balance_low_threshold'],
  properties: { success: boolean, balance_low_threshold: orNull(number) },
} as const;

export const getEventSettings = {
  method: 'GET',
  url: '/api/v0/events/settings/',
  schema: {
    tags,
    summary: 'Event settings: the balance.low threshold',
    response: { 200: settingsReply, ...authErrors },
  },
} as const;

export const putEventSettings = {
  method: 'PUT',
  url: '/api/v0/events/settings/',
  schema: {
    tags,
    summary: 'Set the balance (dollars) at or below which balance.low fires; null turns it off',
    body: settingsBody,
    response: { 200: settingsReply, ...authErrors },
  },
} as const;

export const listEvents = {
  method: 'GET',
  url: '/api/v0/events/',
  schema: {
    tags,
    summary: "The caller's events of the last 30 days, oldest first, after the event `after`",
    querystring: eventsQuery,
    response: { 200: eventsPage, ...authErrors },
  },
} as const;
