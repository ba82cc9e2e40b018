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

const VOLUMES = 'openrig rents whole instances with their own disk; it has no separate volumes';
const NETWORK_VOLUMES = 'openrig has no network volumes or network disks';
const SERVERLESS = 'openrig has no serverless endpoints or worker groups';
const TEAMS = 'openrig has no team API (teams are created by the operator: openrig admin create-user --team)';
const CLUSTERS = 'openrig has no clusters or overlay networks';
const TEMPLATES = 'openrig has no templates; pass --image and the other settings to create instance';
const COPY = 'openrig has no copy service; use scp or rsync over SSH (openrig scp-url)';
const SCHEDULED = 'openrig has no scheduled jobs';
const DEPLOYMENTS = 'openrig has no deployments';
const SECRETS = 'openrig has no account environment variables; pass --env to create instance';
const BILLING =
  'openrig bills by the hour against a balance, shown by GET /api/v0/billing/ and GET /api/v0/billing/charges/';
const BIDS = 'openrig has no bidding on running instances; the price is fixed when the instance is created';

export const UNSUPPORTED_REQUESTS: UnsupportedRequest[] = [
  // Instances
  { method: 'PUT', path: '/api/v0/instances/bid_price/:id', commands: ['change bid'], why: BIDS },
  {
    method: 'PUT',
    path: '/api/v0/instances/prepay/:id',
    commands: ['prepay instance'],
    why: 'openrig has no reserved-instance prepayment',
  },
  {
    method: 'GET',
    path: '/api/v0/instances/balance/:id',
    commands: ['show deposit'],
    why: 'openrig has no reserved-instance deposits',
  },
  {
    method: 'PUT',
    path: '/api/v0/instances/update_template/:id',
    commands: ['update instance'],
    why: TEMPLATES,
  },
  {
    method: 'POST',
    path: '/api/v0/instances/take_snapshot/:id',
    commands: ['take snapshot'],
    why: 'openrig has no container snapshots',
  },
  {
    method: 'GET',
    path: '/api/v0/instances/filters',
    commands: ['show instances-v1'],
    why: 'openrig has no saved instance filters; show instances lists every instance',
  },
  {
    method: 'PUT',
    path: '/api/v0/launch_instance',
    commands: ['launch instance'],
    why: 'openrig rents a chosen offer: search offers, then create instance OFFER_ID',
  },
  {
    method: 'PUT',
    path: '/api/v0/search/asks',
    commands: ['search offers --new'],
    why: 'openrig searches with POST /api/v0/bundles/ (search offers without --new)',
  },
  // Copies, snapshots and scheduled jobs
  { method: 'PUT', path: '/api/v0/commands/rsync', commands: ['copy'], why: COPY },
  { method: 'PUT', path: '/api/v0/commands/copy_direct', commands: ['copy', 'vm copy'], why: COPY },
  { method: 'DELETE', path: '/api/v0/commands/copy_direct', commands: ['cancel copy'], why: COPY },
  { method: 'POST', path: '/api/v0/commands/rclone', commands: ['cloud copy'], why: COPY },
  { method: 'DELETE', path: '/api/v0/commands/rclone', commands: ['cancel sync'], why: COPY },
  {
    method: 'GET',
    path: '/api/v0/commands/schedule_job',
    commands: ['show scheduled-jobs'],
    why: SCHEDULED,
  },
  {
    method: 'POST',
    path: '/api/v0/commands/schedule_job',
    commands: ['reboot instance --schedule', 'execute --schedule', 'change bid --schedule', 'take snapshot'],
    why: SCHEDULED,
  },
  {
    method: 'PUT',
    path: '/api/v0/commands/schedule_job/:id',
    commands: ['reboot instance --schedule', 'execute --schedule', 'change bid --schedule', 'take snapshot'],
    why: SCHEDULED,
  },
  {
    method: 'DELETE',
    path: '/api/v0/commands/schedule_job/:id',
    commands: ['delete scheduled-job'],
    why: SCHEDULED,
  },
  // Account
  {
    method: 'PUT',
    path: '/api/v0/commands/reset_apikey',
    commands: ['reset api-key'],
    why: 'create a new key (create api-key) and delete the old one (delete api-key)',
  },
  {
    method: 'PUT',
    path: '/api/v0/commands/transfer_credit',
    commands: ['transfer credit'],
    why: 'openrig has no credit transfers between accounts',
  },
  {
    method: 'PUT',
    path: '/api/v0/users',
    commands: ['set user'],
    why: 'account settings are changed by the operator (openrig admin)',
  },
  {
    method: 'POST',
    path: '/api/v0/users',
    commands: ['create subaccount'],
    why: 'openrig has no subaccounts; the operator creates accounts (openrig admin create-user)',
  },
  {
    method: 'GET',
    path: '/api/v0/subaccounts',
    commands: ['show subaccounts'],
    why: 'openrig has no subaccounts',
  },
  {
    method: 'GET',
    path: '/api/v0/users/me/ipaddrs',
    commands: ['show ipaddrs'],
    why: 'openrig keeps no history of login addresses',
  },
  {
    method: 'GET',
    path: '/api/v0/audit_logs',
    commands: ['show audit-logs'],
    why: 'openrig keeps no per-account audit log of API calls',
  },
  {
    method: 'GET',
    path: '/api/v0/users/cloud_integrations',
    commands: ['show connections'],
    why: 'openrig has no cloud storage integrations',
  },
  // Billing
  { method: 'GET', path: '/api/v0/users/me/invoices', commands: ['show invoices'], why: BILLING },
  { method: 'POST', path: '/api/v0/contracts/fetch', commands: ['show invoices'], why: BILLING },
  { method: 'GET', path: '/api/v1/invoices', commands: ['show invoices-v1'], why: BILLING },
  { method: 'GET', path: '/api/v0/charges', commands: ['show invoices-v1 --charges'], why: BILLING },
  { method: 'GET', path: '/api/v0/invoices', commands: ['search invoices'], why: BILLING },
  {
    method: 'GET',
    path: '/api/v0/users/me/machine-earnings',
    commands: ['show earnings'],
    why: 'openrig records what renters pay (GET /api/v0/billing/charges/), not host earnings',
  },
  // Templates, benchmarks, secrets
  { method: 'GET', path: '/api/v0/template', commands: ['search templates'], why: TEMPLATES },
  { method: 'POST', path: '/api/v0/template', commands: ['create template'], why: TEMPLATES },
  { method: 'PUT', path: '/api/v0/template', commands: ['update template'], why: TEMPLATES },
  { method: 'DELETE', path: '/api/v0/template', commands: ['delete template'], why: TEMPLATES },
  {
    method: 'GET',
    path: '/api/v0/benchmarks',
    commands: ['search benchmarks'],
    why: 'openrig runs no benchmarks; offers carry the host-declared hardware only',
  },
  { method: 'GET', path: '/api/v0/secrets', commands: ['show env-vars'], why: SECRETS },
  { method: 'POST', path: '/api/v0/secrets', commands: ['create env-var'], why: SECRETS },
  { method: 'PUT', path: '/api/v0/secrets', commands: ['update env-var'], why: SECRETS },
  { method: 'DELETE', path: '/api/v0/secrets', commands: ['delete env-var'], why: SECRETS },
  // Volumes and network disks
  { method: 'GET', path: '/api/v0/volumes', commands: ['show volumes'], why: VOLUMES },
  { method: 'PUT', path: '/api/v0/volumes', commands: ['create volume'], why: VOLUMES },
  { method: 'POST', path: '/api/v0/volumes', commands: ['list volume', 'list volumes'], why: VOLUMES },
  { method: 'DELETE', path: '/api/v0/volumes', commands: ['delete volume'], why: VOLUMES },
  { method: 'POST', path: '/api/v0/volumes/search', commands: ['search volumes'], why: VOLUMES },
  { method: 'POST', path: '/api/v0/volumes/copy', commands: ['clone volume'], why: VOLUMES },
  { method: 'POST', path: '/api/v0/volumes/unlist', commands: ['unlist volume'], why: VOLUMES },
  {
    method: 'PUT',
    path: '/api/v0/network_volumes',
    commands: ['create network-volume'],
    why: NETWORK_VOLUMES,
  },
  {
    method: 'POST',
    path: '/api/v0/network_volumes',
    commands: ['list network-volume'],
    why: NETWORK_VOLUMES,
  },
  {
    method: 'POST',
    path: '/api/v0/network_volumes/search',
    commands: ['search network-volumes'],
    why: NETWORK_VOLUMES,
  },
  {
    method: 'POST',
    path: '/api/v0/network_volumes/unlist',
    commands: ['unlist network-volume'],
    why: NETWORK_VOLUMES,
  },
  { method: 'GET', path: '/api/v0/network_disk', commands: ['show network-disks'], why: NETWORK_VOLUMES },
  { method: 'POST', path: '/api/v0/network_disk', commands: ['add network-disk'], why: NETWORK_VOLUMES },
  // Serverless
  { method: 'GET', path: '/api/v0/endptjobs', commands: ['show endpoints'], why: SERVERLESS },
  { method: 'POST', path: '/api/v0/endptjobs', commands: ['create endpoint'], why: SERVERLESS },
  { method: 'PUT', path: '/api/v0/endptjobs/:id', commands: ['update endpoint'], why: SERVERLESS },
  { method: 'DELETE', path: '/api/v0/endptjobs/:id', commands: ['delete endpoint'], why: SERVERLESS },
  { method: 'GET', path: '/api/v0/autojobs', commands: ['show workergroups'], why: SERVERLESS },
  { method: 'POST', path: '/api/v0/autojobs', commands: ['create workergroup'], why: SERVERLESS },
  { method: 'PUT', path: '/api/v0/autojobs/:id', commands: ['update workergroup'], why: SERVERLESS },
  { method: 'DELETE', path: '/api/v0/autojobs/:id', commands: ['delete workergroup'], why: SERVERLESS },
  { method: 'POST', path: '/get_endpoint_logs', commands: ['get endpt-logs'], why: SERVERLESS },
  { method: 'POST', path: '/get_autogroup_logs', commands: ['get wrkgrp-logs'], why: SERVERLESS },
  { method: 'POST', path: '/update_workers', commands: ['update workers'], why: SERVERLESS },
  { method: 'GET', path: '/api/v0/deployments', commands: ['show deployments'], why: DEPLOYMENTS },
  { method: 'DELETE', path: '/api/v0/deployments', commands: ['delete deployment'], why: DEPLOYMENTS },
  { method: 'GET', path: '/api/v0/deployment/:id', commands: ['show deployment'], why: DEPLOYMENTS },
  { method: 'DELETE', path: '/api/v0/deployment/:id', commands: ['delete deployment'], why: DEPLOYMENTS },
  {
    method: 'GET',
    path: '/api/v0/deployment/:id/versions',
    commands: ['show deployment-versions'],
    why: DEPLOYMENTS,
  },
  // Teams
  { method: 'POST', path: '/api/v0/team', commands: ['create team'], why: TEAMS },
  { method: 'DELETE', path: '/api/v0/team', commands: ['destroy team'], why: TEAMS },
  { method: 'POST', path: '/api/v0/team/invite', commands: ['invite member'], why: TEAMS },
  { method: 'GET', path: '/api/v0/team/members', commands: ['show members'], why: TEAMS },
  { method: 'DELETE', path: '/api/v0/team/members/:id', commands: ['remove member'], why: TEAMS },
  { method: 'POST', path: '/api/v0/team/roles', commands: ['create team-role'], why: TEAMS },
  { method: 'GET', path: '/api/v0/team/roles-full', commands: ['show team-roles'], why: TEAMS },
  { method: 'GET', path: '/api/v0/team/roles/:id', commands: ['show team-role'], why: TEAMS },
  { method: 'PUT', path: '/api/v0/team/roles/:id', commands: ['update team-role'], why: TEAMS },
  { method: 'DELETE', path: '/api/v0/team/roles/:id', commands: ['remove team-role'], why: TEAMS },
  // Clusters and overlays
  { method: 'GET', path: '/api/v0/clusters', commands: ['show clusters'], why: CLUSTERS },
  { method: 'POST', path: '/api/v0/cluster', commands: ['create cluster'], why: CLUSTERS },
  { method: 'PUT', path: '/api/v0/cluster', commands: ['join cluster'], why: CLUSTERS },
  { method: 'DELETE', path: '/api/v0/cluster', commands: ['delete cluster'], why: CLUSTERS },
  {
    method: 'DELETE',
    path: '/api/v0/cluster/remove_machine',
    commands: ['remove-machine-from-cluster'],
    why: CLUSTERS,
  },
  { method: 'GET', path: '/api/v0/overlay', commands: ['show overlays'], why: CLUSTERS },
  { method: 'POST', path: '/api/v0/overlay', commands: ['create overlay'], why: CLUSTERS },
  { method: 'PUT', path: '/api/v0/overlay', commands: ['join overlay'], why: CLUSTERS },
  { method: 'DELETE', path: '/api/v0/overlay', commands: ['delete overlay'], why: CLUSTERS },
  // Hosts
  {
    method: 'GET',
    path: '/api/v0/machines/:id/reports',
    commands: ['reports'],
    why: 'openrig has no renter reports about machines',
  },
  {
    method: 'PUT',
    path: '/api/v0/machines/:id/cleanup',
    commands: ['cleanup machine'],
    why: 'the openrig agent removes a destroyed instance and its disk itself',
  },
  {
    method: 'PUT',
    path: '/api/v0/machines/defrag_offers',
    commands: ['defrag machines'],
    why: 'openrig offers a machine whole, so there are no fragmented offers',
  },
  {
    method: 'POST',
    path: '/api/v0/machines/:id/force_delete',
    commands: ['delete machine'],
    why: 'unlist the machine (unlist machine) and stop its agent',
  },
  {
    method: 'PUT',
    path: '/api/v0/machines/:id/minbid',
    commands: ['set min-bid'],
    why: 'the minimum bid is set when listing: list machine ID --price_min_bid PRICE',
  },
  {
    method: 'PUT',
    path: '/api/v0/machines/create_bids',
    commands: ['set defjob'],
    why: 'openrig has no default (background) jobs',
  },
  {
    method: 'DELETE',
    path: '/api/v0/machines/:id/defjob',
    commands: ['remove defjob'],
    why: 'openrig has no default (background) jobs',
  },
];

/** The reply text for one unsupported request. */
export function notSupportedMsg(u: UnsupportedRequest): string {
  const names = u.commands.map((c) => `"${c}"`).join(', ');
  return `${names} ${u.commands.length > 1 ? 'are' : 'is'} not supported by openrig: ${u.why}. See docs/compatibility.md.`;
}
