// The instance row as clients read it (the fields the CLI reads, docs/api.md). Times in epoch
// seconds; `extra_env` as [key, value] pairs; `ports` as {"22/tcp": [{HostIp, HostPort}]};
// `allowed_actions` from the state machine; `accrued_cost` in dollars so far (compute + disk).
import type { Selectable } from 'kysely';
import type { InstancesTable, MachinesTable } from '../../db/tables/market.js';
import { allowedActions, type ClientAction } from '../../../contract/instance-states.js';
import { statusOf } from '../billing/billing.service.js';
import { MICROS_PER_USD, HOURS_PER_MONTH } from '../billing/billing.meter.js';
import type { WindowView } from '../maintenance/maintenance.service.js';
import { verificationOf } from '../offers/offers.fields.js';
import { minWinningBid, tierOf } from './instances.market-rules.js';
import { portalOf } from '../gateway/gateway.portal.js';

type M = Selectable<MachinesTable>;

/** Disk sizes are decimal GB, as the machines' disk_space. */
const BYTES_PER_GB = 1e9;
/**
 * Instance columns selected for the view (aliased `i`): what instanceView reads, and nothing of
 * the rest (the encrypted container key and registry login, the agent's own state, billing
 * bookkeeping), which the poll, asked every few seconds by every client, would read for nothing.
 */
export const INSTANCE_VIEW_COLS = [
  'i.id',
  'i.machine_id',
  'i.image',
  'i.disk',
  'i.onstart',
  'i.env',
  'i.label',
  'i.runtype',
  'i.args',
  'i.is_bid',
  'i.dph_compute',
  'i.dph_disk',
  'i.intended_status',
  'i.actual_status',
  'i.status_msg',
  'i.ssh_host',
  'i.ssh_port',
  'i.ports',
  'i.start_date',
  'i.created_at',
  'i.accrued_micros',
  'i.billed_until',
  'i.running_since',
  'i.disk_usage_bytes',
  'i.gpu_util',
  'i.template_id',
  'i.template_name',
  'i.template_hash_id',
  'i.user_id',
  'i.bid_waiting',
  'i.preempted_by',
  'i.portal',
] as const;

type ViewColumn<C> = C extends `i.${infer K}` ? K : never;

export type JoinedRow = Pick<Selectable<InstancesTable>, ViewColumn<(typeof INSTANCE_VIEW_COLS)[number]>> &
  Pick<
    M,
    | 'rented'
    | 'host_id'
    | 'gpu_name'
    | 'num_gpus'
    | 'gpu_ram'
    | 'cpu_name'
    | 'cpu_cores'
    | 'cpu_ram'
    | 'inet_up'
    | 'inet_down'
    | 'reliability'
    | 'geolocation'
    | 'driver_version'
    | 'cuda_max_good'
    | 'direct_port_count'
    | 'price_disk_gb_month'
    | 'verified'
    | 'last_heartbeat_at'
    | 'agent_runtime'
    | 'min_bid_dph'
    | 'bid_to_win_dph'
  >;

/** Machine columns selected with an instance (aliased `m`). */
export const MACHINE_COLS = [
  'm.rented',
  'm.host_id',
  'm.gpu_name',
  'm.num_gpus',
  'm.gpu_ram',
  'm.cpu_name',
  'm.cpu_cores',
  'm.cpu_ram',
  'm.inet_up',
  'm.inet_down',
  'm.reliability',
  'm.geolocation',
  'm.driver_version',
  'm.cuda_max_good',
  'm.direct_port_count',
  'm.price_disk_gb_month',
  'm.verified',
  'm.last_heartbeat_at',
  'm.agent_runtime',
  'm.min_bid_dph',
  'm.bid_to_win_dph',
] as const;

/**
 * `maintenances`: the machine's current and upcoming maintenance windows (epoch seconds); `now`
 * (epoch ms) dates `duration`, the instance's age.
 */
export function instanceView(r: JoinedRow, maintenances: WindowView[], now: number) {
  const s = statusOf(r);
  // Only the machine's active instance holds `rented`; a stopped one never does. A machine a bid
  // holds is not taken for an on-demand start (it preempts the bid), and a bid's start waits.
  const machineTaken =
    s.intended === 'stopped' && r.rented === 1 && r.bid_to_win_dph === null && r.is_bid !== 1;
  const tier = tierOf(r, r.host_id);
  const waiting = r.bid_waiting === 1;
  const env = JSON.parse(r.env) as Record<string, string>;
  const ports = JSON.parse(r.ports) as Record<string, { HostIp: string; HostPort: string }[]>;
  const range = hostPortRange(ports);
  return {
    id: r.id,
    machine_id: r.machine_id,
    host_id: r.host_id,
    actual_status: s.actual,
    intended_status: s.intended,
    cur_state:
      s.actual === 'running'
        ? 'running'
        : s.actual === 'stopped'
          ? 'stopped'
          : s.actual === null
            ? 'loading'
            : s.actual,
    next_state: s.intended,
    // A stopped instance whose machine another client rents now cannot start (409
    // machine_unavailable): the row says so instead of offering `start`.
    // A waiting bid already wants to run: it may be stopped (it stops waiting), not started.
    allowed_actions: waiting
      ? (['stop', ...allowedActions(s).filter((a) => a !== 'start' && a !== 'stop')] as ClientAction[])
      : machineTaken
        ? allowedActions(s).filter((a) => a !== 'start')
        : allowedActions(s),
    machine_available: !machineTaken,
    status_msg: r.status_msg,
    label: r.label,
    image_uuid: r.image,
    image_runtype: r.runtype,
    image_args: r.args === null ? null : (JSON.parse(r.args) as string[]),
    onstart: r.onstart,
    extra_env: Object.entries(env).filter(([k]) => !k.trim().startsWith('-p')),
    num_gpus: r.num_gpus,
    gpu_name: r.gpu_name,
    gpu_ram: r.gpu_ram,
    gpu_totalram: r.gpu_ram * r.num_gpus,
    // What the host's agent last measured. The disk keeps its data while stopped, so its usage
    // stays; GPUs are busy only while it runs.
    gpu_util: s.actual === 'running' ? r.gpu_util : null,
    cpu_name: r.cpu_name,
    cpu_cores: r.cpu_cores,
    cpu_cores_effective: r.cpu_cores,
    cpu_ram: r.cpu_ram,
    disk_space: r.disk,
    disk_usage: r.disk_usage_bytes === null ? null : r.disk_usage_bytes / BYTES_PER_GB,
    disk_util:
      r.disk_usage_bytes === null || !(r.disk > 0) ? null : r.disk_usage_bytes / BYTES_PER_GB / r.disk,
    inet_up: r.inet_up,
    inet_down: r.inet_down,
    reliability2: r.reliability,
    geolocation: r.geolocation,
    driver_version: r.driver_version,
    cuda_max_good: r.cuda_max_good,
    direct_port_count: r.direct_port_count,
    verification: verificationOf(r.verified),
    direct_port_start: range.start,
    direct_port_end: range.end,
    ssh_host: r.ssh_host,
    ssh_port: r.ssh_port,
    public_ipaddr: r.ssh_host,
    ports,
    is_bid: r.is_bid === 1,
    // The market (docs/market.md, "Interruptible instances"): the tier the instance rents at, the
    // lowest bid that wins its machine now, and why a bid waits (null when it does not).
    market_tier: tier,
    min_bid: minWinningBid(r.min_bid_dph, r.bid_to_win_dph),
    bid_waiting: waiting,
    waiting_reason: waiting ? r.status_msg : null,
    preempted_by: r.preempted_by,
    // The ports the gateway serves at SERVER + path (docs/gateway.md).
    portal: portalOf(r.id, r.portal, env),
    dph_base: r.dph_compute,
    dph_total: r.dph_compute + r.dph_disk,
    disk_dph: r.dph_disk,
    storage_cost:
      r.dph_disk > 0 && r.disk > 0 ? (r.dph_disk * HOURS_PER_MONTH) / r.disk : r.price_disk_gb_month,
    accrued_cost: r.accrued_micros / MICROS_PER_USD,
    billed_until: r.billed_until / 1000,
    start_date: (r.start_date ?? r.created_at) / 1000,
    // Seconds since start_date: the CLI's instance tables show it as the age in hours.
    duration: Math.max(0, now - (r.start_date ?? r.created_at)) / 1000,
    // Minutes since it last became running; null when it is not running (or has no start yet).
    uptime_mins:
      s.actual === 'running' && r.running_since !== null ? Math.max(0, now - r.running_since) / 60_000 : null,
    created_at: r.created_at / 1000,
    // The template it was created from, as it was then (a later rename or update does not follow).
    template_id: r.template_id,
    template_name: r.template_name,
    template_hash_id: r.template_hash_id,
    maintenances,
    // When its host last reported (epoch seconds; null: never): an unknown or offline instance
    // has been out of sight since about then.
    host_last_seen: r.last_heartbeat_at === null ? null : r.last_heartbeat_at / 1000,
    // How its host runs it: 'process' (a plain process of the host's user, no isolation: the
    // demo's runtime), 'docker' (a container); null when its agent has not said.
    machine_runtime: runtimeOf(r.agent_runtime),
  };
}

export type InstanceView = ReturnType<typeof instanceView>;

/** The runtimes the contract names; anything else an agent stored reads as null. */
function runtimeOf(v: string | null): 'process' | 'docker' | null {
  return v === 'process' || v === 'docker' ? v : null;
}

/**
 * The lowest and highest host port published for the instance (SSH's included), -1 for both when
 * none is published yet: clients read a range only when `direct_port_start` is positive.
 */
export function hostPortRange(ports: Record<string, { HostPort: string }[]>): { start: number; end: number } {
  let start = -1;
  let end = -1;
  for (const bindings of Object.values(ports)) {
    for (const b of bindings) {
      const p = Number(b.HostPort);
      if (!Number.isInteger(p) || p <= 0) continue;
      if (start < 0 || p < start) start = p;
      if (p > end) end = p;
    }
  }
  return { start, end };
}

/** The schema of the row instanceView makes, for replies (src/contract/schemas/instances.ts). */
export { instanceSchema } from '../../../contract/schemas/instances.js';
