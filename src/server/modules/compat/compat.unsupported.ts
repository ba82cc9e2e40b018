// Requests of the marketplace's official CLI that openrig does not serve. Each answers
// 400 `{"error": "not_supported", "msg"}` naming the CLI command and why, instead of a bare
// "no route": a user of that CLI learns at once that the command has no openrig equivalent.
// docs/compatibility.md lists every command of that CLI, these included.

export interface UnsupportedRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Fastify route path (parameters as `:name`); a trailing slash is optional when called. */
  path: string;
  /** The CLI commands that send this request. */
  commands: string[];
  /** Why openrig has no such thing, in a phrase. */
  why: string;
}

const NETWORK_VOLUMES = 'openrig has no network volumes or network disks';
const SERVERLESS = 'openrig has no serverless endpoints or worker groups';
const CLUSTERS = 'openrig has no clusters or overlay networks';
const COPY =
  'openrig has no cloud storage integrations: copy between instances (copy A:/p B:/p) or with your own machine (copy local:p ID:/p)';
const DEPLOYMENTS = 'openrig has no deployments';
const JOBS = 'openrig has no default (background) jobs';

type Method = UnsupportedRequest['method'];
/** By path, the CLI command (or commands) that send each method of it. */
type Requests = Record<string, Partial<Record<Method, string | string[]>>>;

/** The rows of the requests refused for one reason, in the order given. */
function refused(why: string, requests: Requests): UnsupportedRequest[] {
  return Object.entries(requests).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, commands]) => ({
      method: method as Method,
      path,
      commands: [commands ?? []].flat(),
      why,
    })),
  );
}

export const UNSUPPORTED_REQUESTS: UnsupportedRequest[] = [
  // Instances
  ...refused('openrig has no container snapshots', {
    '/api/v0/instances/take_snapshot/:id': { POST: 'take snapshot' },
  }),
  ...refused('openrig rents a chosen offer: search offers, then create instance OFFER_ID', {
    '/api/v0/launch_instance': { PUT: 'launch instance' },
  }),
  ...refused('openrig searches with POST /api/v0/bundles/ (search offers without --new)', {
    '/api/v0/search/asks': { PUT: 'search offers --new' },
  }),
  // Copies and snapshots
  ...refused(COPY, {
    '/api/v0/commands/rclone': { POST: 'cloud copy', DELETE: 'cancel sync' },
  }),
  // Account
  ...refused('create a new key (create api-key) and delete the old one (delete api-key)', {
    '/api/v0/commands/reset_apikey': { PUT: 'reset api-key' },
  }),
  ...refused('openrig has no cloud storage integrations', {
    '/api/v0/users/cloud_integrations': { GET: 'show connections' },
  }),
  // Network disks
  ...refused(NETWORK_VOLUMES, {
    '/api/v0/network_volumes': { PUT: 'create network-volume', POST: 'list network-volume' },
    '/api/v0/network_volumes/search': { POST: 'search network-volumes' },
    '/api/v0/network_volumes/unlist': { POST: 'unlist network-volume' },
    '/api/v0/network_disk': { GET: 'show network-disks', POST: 'add network-disk' },
  }),
  // Serverless
  ...refused(SERVERLESS, {
    '/api/v0/endptjobs': { GET: 'show endpoints', POST: 'create endpoint' },
    '/api/v0/endptjobs/:id': { PUT: 'update endpoint', DELETE: 'delete endpoint' },
    '/api/v0/autojobs': { GET: 'show workergroups', POST: 'create workergroup' },
    '/api/v0/autojobs/:id': { PUT: 'update workergroup', DELETE: 'delete workergroup' },
    '/get_endpoint_logs': { POST: 'get endpt-logs' },
    '/get_autogroup_logs': { POST: 'get wrkgrp-logs' },
    '/update_workers': { POST: 'update workers' },
  }),
  ...refused(DEPLOYMENTS, {
    '/api/v0/deployments': { GET: 'show deployments', DELETE: 'delete deployment' },
    '/api/v0/deployment/:id': { GET: 'show deployment', DELETE: 'delete deployment' },
    '/api/v0/deployment/:id/versions': { GET: 'show deployment-versions' },
  }),
  // Clusters and overlays
  ...refused(CLUSTERS, {
    '/api/v0/clusters': { GET: 'show clusters' },
    '/api/v0/cluster': { POST: 'create cluster', PUT: 'join cluster', DELETE: 'delete cluster' },
    '/api/v0/cluster/remove_machine': { DELETE: 'remove-machine-from-cluster' },
    '/api/v0/overlay': {
      GET: 'show overlays',
      POST: 'create overlay',
      PUT: 'join overlay',
      DELETE: 'delete overlay',
    },
  }),
  // Hosts
  ...refused('the openrig agent removes a destroyed instance and its disk itself', {
    '/api/v0/machines/:id/cleanup': { PUT: 'cleanup machine' },
  }),
  ...refused('openrig offers a machine whole, so there are no fragmented offers', {
    '/api/v0/machines/defrag_offers': { PUT: 'defrag machines' },
  }),
  ...refused(JOBS, {
    '/api/v0/machines/create_bids': { PUT: 'set defjob' },
    '/api/v0/machines/:id/defjob': { DELETE: 'remove defjob' },
  }),
];

/** The reply text for one unsupported request. */
export function notSupportedMsg(u: UnsupportedRequest): string {
  const names = u.commands.map((c) => `"${c}"`).join(', ');
  return `${names} ${u.commands.length > 1 ? 'are' : 'is'} not supported by openrig: ${u.why}. See docs/compatibility.md.`;
}
