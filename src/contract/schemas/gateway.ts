// The HTTPS gateway to instance ports (docs/gateway.md): the `portal` of a create body and of the
// instance row, a signed link for the owner, and the agent's claim of the tunnels asked of it.
// The gateway's own traffic (`/i/ID/PORT/…`, `ID-PORT.DOMAIN`, the agent's tunnel upgrade) is no
// JSON route: it is served before the API's routing and is described in docs/gateway.md.
import { AGENT_API_PREFIX } from '../agent-protocol.js';
import { authErrors, errorSchema, idParams } from './common.js';

/** The agent's tunnel dial (docs/gateway.md, "The tunnel"): an HTTP upgrade, then HTTP/2. */
export const TUNNEL = {
  path: `${AGENT_API_PREFIX}/tunnel`,
  protocol: 'openrig-tunnel',
  /** Header: the serving process that asked for the tunnel. */
  nodeHeader: 'x-openrig-tunnel-node',
  /** Header: the dialling agent's agent_uid. */
  agentHeader: 'x-openrig-agent-uid',
  /** Header of a refused stream: why. */
  reasonHeader: 'x-openrig-reason',
  /** Per-stream HTTP/2 flow-control window, bytes. */
  streamWindow: 4 * 1024 * 1024,
  /** The whole connection's window, bytes. */
  sessionWindow: 32 * 1024 * 1024,
} as const;

/** One `portal` entry of a create body. */
export const portalEntryBody = {
  type: 'object',
  required: ['port'],
  properties: {
    name: { type: 'string', description: 'what it is ("jupyter"); default: the port number' },
    port: { type: 'integer', minimum: 1, maximum: 65535, description: "the container's port" },
    public: { type: 'boolean', description: "served to anyone, without the owner's token (default false)" },
    keep_prefix: {
      type: 'boolean',
      description: 'the path reaches the app whole (/i/ID/PORT/…), for an app set up with that base URL',
    },
  },
} as const;

export const portalBody = {
  type: ['array', 'null'],
  maxItems: 16,
  items: portalEntryBody,
  description: 'Ports served through the gateway at SERVER/i/ID/PORT/ (docs/gateway.md)',
} as const;

/** A served port on the instance row. */
export const portalViewSchema = {
  type: 'array',
  description:
    "Ports served through the gateway: the create body's portal, then its env's -p TCP ports (owner only); URL = the server's address + path",
  items: {
    type: 'object',
    properties: {
      name: { type: 'string' },
      port: { type: 'integer' },
      public: { type: 'boolean' },
      keep_prefix: { type: 'boolean' },
      path: { type: 'string', description: '/i/ID/PORT/' },
    },
  },
} as const;

export const gatewayLinkBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: {
    port: {
      type: 'integer',
      minimum: 1,
      maximum: 65535,
      description: 'the port to link to (default: the first served)',
    },
  },
} as const;

export const gatewayLinkReply = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    url: { type: 'string', description: 'the link, with its signed openrig_token' },
    expires_at: { type: 'number', description: 'epoch seconds' },
  },
} as const;

/** POST /api/v0/instances/:id/gateway-link/: a signed, expiring link to one of its ports. */
export const gatewayLink = {
  method: 'POST',
  url: '/api/v0/instances/:id/gateway-link/',
  schema: {
    tags: ['instances'],
    summary: "A signed, expiring link to one of the instance's gateway ports (its owner only)",
    params: idParams,
    body: gatewayLinkBody,
    response: { 200: gatewayLinkReply, ...authErrors, 409: errorSchema },
  },
} as const;

export const tunnelClaimBody = {
  type: 'object',
  additionalProperties: false,
  required: ['agent_uid', 'machine_ids'],
  properties: {
    agent_uid: { type: 'string', minLength: 1, maxLength: 200 },
    machine_ids: { type: 'array', maxItems: 1000, items: { type: 'integer', minimum: 1 } },
  },
} as const;

export const tunnelClaimReply = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    tunnels: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          node: { type: 'string', description: 'the serving process that asked' },
          url: { type: ['string', 'null'], description: "where to dial it; null: the agent's server URL" },
        },
      },
    },
  },
} as const;

/** POST /api/agent/v1/tunnels: the agent claims the tunnels serving processes asked of it. */
export const tunnelClaim = {
  method: 'POST',
  url: `${AGENT_API_PREFIX}/tunnels`,
  schema: {
    tags: ['agent'],
    summary: 'Claim the gateway tunnels asked of these machines; the agent then dials each node named',
    body: tunnelClaimBody,
    response: { 200: tunnelClaimReply, 400: errorSchema, 401: errorSchema, 403: errorSchema },
  },
} as const;
