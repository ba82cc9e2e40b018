// The account's audit log (GET /api/v0/audit_logs/: a bare array, as the official CLI's `show
// audit-logs` reads it) and the addresses that used the account (GET /api/v0/users/me/ipaddrs:
// `{results}`, as `show ipaddrs` reads it).
import { authErrors, ownerParam } from './common.js';

/** The most rows the audit log answers at once (and by default). */
export const AUDIT_LIST_MAX = 1000;

const str = { type: 'string' } as const;
const nstr = { type: ['string', 'null'] } as const;

export const auditRowSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    created_at: { type: 'number', description: 'epoch seconds' },
    ip_address: {
      ...nstr,
      description: 'the client address (X-Forwarded-For only from OPENRIG_TRUST_PROXY)',
    },
    api_key_id: {
      type: ['integer', 'null'],
      description: 'the API key (or instance key) presented; null for sessions and sign-ins',
    },
    member_id: {
      type: ['integer', 'null'],
      description: "in a team's log: the member (user id) who acted for the team; null otherwise",
    },
    credential: {
      type: 'string',
      enum: ['api_key', 'instance_key', 'session_key', 'browser_session', 'password', 'login_secret'],
      description: 'how the request was authenticated, or the sign-in step',
    },
    api_route: { ...str, description: 'method and route pattern: "PUT /api/v0/instances/{id}/"' },
    status: { type: 'integer', description: 'the HTTP status of the reply' },
    args: {
      type: 'object',
      additionalProperties: true,
      description:
        'path: the path parameters; query: the query (credentials redacted); body: the NAMES of the body fields, never their values',
    },
  },
} as const;

export const ipaddrSchema = {
  type: 'object',
  properties: {
    ip: str,
    first_seen: { type: 'number', description: 'epoch seconds' },
    last_seen: { type: 'number', description: 'epoch seconds' },
    first_location: { type: 'null', description: 'always null: openrig has no geo-IP database' },
  },
} as const;

export const auditLogs = {
  method: 'GET',
  url: '/api/v0/audit_logs',
  schema: {
    tags: ['users'],
    summary: "The account's history of important actions: writes and sign-ins, newest first",
    querystring: {
      type: 'object',
      properties: {
        limit: {
          type: 'integer',
          minimum: 1,
          maximum: AUDIT_LIST_MAX,
          description: `the latest N rows, 1 to ${AUDIT_LIST_MAX} (default ${AUDIT_LIST_MAX})`,
        },
      },
    },
    response: { 200: { type: 'array', items: auditRowSchema }, ...authErrors },
  },
} as const;

export const ipAddrsReply = {
  type: 'object',
  properties: { success: { type: 'boolean' }, results: { type: 'array', items: ipaddrSchema } },
} as const;

export const ipAddrs = {
  method: 'GET',
  url: '/api/v0/users/me/ipaddrs',
  schema: {
    tags: ['users'],
    summary: 'The addresses that used the account (sign-ins, writes, API keys), most recently seen first',
    querystring: {
      type: 'object',
      properties: { owner: ownerParam },
    },
    response: { 200: ipAddrsReply, ...authErrors },
  },
} as const;
