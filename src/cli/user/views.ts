// The tables of the user CLI, one per record kind. Units: prices $/hour, RAM and VRAM in GB (the
// API sends MB), disk in GB, network in Mbps, times relative to now (and UTC for maintenance).
import { PERMISSION_FAMILIES } from '../../contract/permissions.js';
import type {
  ApiKey,
  Instance,
  Machine,
  Maintenance,
  Offer,
  SshKey,
  TfaMethod,
} from '../../contract/api-types.js';
import {
  DASH,
  fmtDuration,
  fmtGb,
  fmtMbAsGb,
  fmtNum,
  fmtPercent,
  fmtUsd,
  keyValues,
  relativeTime,
  str,
  table,
  utcTime,
  type Column,
} from '../output.js';

function gpus(r: { [k: string]: unknown }): string {
  if (r.gpu_name === undefined && r.num_gpus === undefined) return DASH;
  return `${str(r.num_gpus)}x ${str(r.gpu_name)}`;
}

function days(seconds: unknown): string {
  return typeof seconds === 'number' && Number.isFinite(seconds)
    ? `${(seconds / 86_400).toFixed(1)} d`
    : DASH;
}

/** Reliability arrives as a fraction (0.98) in the compat rows. */
function reliability(v: unknown): string {
  return typeof v === 'number' && v <= 1 ? fmtPercent(v, 1) : str(v);
}

/**
 * VRAM as the console shows it: the API's MB are MiB, as nvidia-smi reports them (24564 for a
 * 24 GB card), so whole GiB give the card's own figure ("24 GB", not "24.6 GB").
 */
export function fmtVram(mb: unknown): string {
  const n = typeof mb === 'number' ? mb : mb === null || mb === undefined || mb === '' ? NaN : Number(mb);
  return Number.isFinite(n) ? `${Math.round(n / 1024)} GB` : DASH;
}

export function offersTable(offers: Offer[], maxWidth?: number): string {
  const cols: Column<Offer>[] = [
    { header: 'ID', get: (o) => str(o.id), align: 'right' },
    { header: 'GPUs', get: (o) => gpus(o) },
    { header: 'VRAM', get: (o) => fmtVram(o.gpu_ram), align: 'right' },
    { header: 'CUDA', get: (o) => fmtNum(o.cuda_max_good, 1), align: 'right', drop: 6 },
    { header: 'vCPUs', get: (o) => fmtNum(o.cpu_cores_effective, 1), align: 'right', drop: 9 },
    { header: 'RAM', get: (o) => fmtMbAsGb(o.cpu_ram), align: 'right', drop: 11 },
    { header: 'Disk', get: (o) => fmtGb(o.disk_space), align: 'right', drop: 13 },
    { header: '$/hr', get: (o) => fmtUsd(o.dph_total, 4), align: 'right' },
    { header: 'DLPerf', get: (o) => fmtNum(o.dlperf, 1), align: 'right', drop: 7 },
    { header: 'DLP/$', get: (o) => fmtNum(o.dlperf_per_dphtotal, 1), align: 'right', drop: 2 },
    { header: 'Score', get: (o) => fmtNum(o.score, 1), align: 'right', drop: 3 },
    { header: 'Reliab', get: (o) => reliability(o.reliability ?? o.reliability2), align: 'right' },
    {
      header: 'Net up/down',
      get: (o) => `${fmtNum(o.inet_up)}/${fmtNum(o.inet_down)} Mbps`,
      align: 'right',
      drop: 10,
    },
    { header: 'Ports', get: (o) => fmtNum(o.direct_port_count), align: 'right', drop: 4 },
    { header: 'Max dur', get: (o) => days(o.duration), align: 'right', drop: 8 },
    { header: 'Machine', get: (o) => str(o.machine_id), align: 'right', drop: 1 },
    { header: 'Verified', get: (o) => str(o.verification ?? o.verified), drop: 5 },
    { header: 'Location', get: (o) => str(o.geolocation), drop: 12 },
  ];
  return table(offers, cols, maxWidth);
}

function status(i: Instance): string {
  const actual = i.actual_status ?? 'provisioning';
  // An interruptible instance waiting for its bid to win the machine (preempted or outbid).
  if (i.bid_waiting === true) return `${actual} (waiting: bid)`;
  // Show a pending change: a stop not yet done, or a start of a stopped instance.
  if (i.intended_status === 'stopped' && actual !== 'stopped') return `${actual} (→ stopped)`;
  if (i.intended_status === 'running' && actual === 'stopped') return 'stopped (→ running)';
  return actual;
}

/** `3.2/20 GB` once the host has measured the disk, `20 GB` before. */
function disk(i: Instance): string {
  if (typeof i.disk_usage !== 'number') return fmtGb(i.disk_space);
  const total = fmtNum(i.disk_space);
  return `${fmtNum(i.disk_usage, 1)}/${total === DASH ? '?' : total} GB`;
}

/** The disk's size with what it holds, for the detail view: `20 GB (3.2 GB used, 16%)`. */
function diskDetail(i: Instance): string {
  if (typeof i.disk_usage !== 'number') return fmtGb(i.disk_space);
  const util = typeof i.disk_util === 'number' ? `, ${fmtPercent(i.disk_util, 0)}` : '';
  return `${fmtGb(i.disk_space)} (${fmtGb(i.disk_usage, 1)} used${util})`;
}

function gpuUtil(i: Instance): string {
  return typeof i.gpu_util === 'number' ? `${fmtNum(i.gpu_util, 0)}%` : DASH;
}

/** The SSH address only while the instance runs: a stopped one cannot be reached there. */
function ssh(i: Instance): string {
  return i.actual_status === 'running' && i.ssh_host && i.ssh_port ? `${i.ssh_host}:${i.ssh_port}` : DASH;
}

export function instancesTable(rows: Instance[], nowMs: number, maxWidth?: number): string {
  const cols: Column<Instance>[] = [
    { header: 'ID', get: (i) => str(i.id), align: 'right' },
    { header: 'Machine', get: (i) => str(i.machine_id), align: 'right', drop: 1 },
    { header: 'Status', get: status },
    { header: 'GPUs', get: (i) => gpus(i), drop: 9 },
    { header: 'Util', get: gpuUtil, align: 'right', drop: 4 },
    { header: 'vCPUs', get: (i) => fmtNum(i.cpu_cores_effective, 1), align: 'right', drop: 2 },
    { header: 'RAM', get: (i) => fmtMbAsGb(i.cpu_ram), align: 'right', drop: 3 },
    { header: 'Disk', get: disk, align: 'right', drop: 5 },
    { header: '$/hr', get: (i) => fmtUsd(i.dph_total, 4), align: 'right', drop: 8 },
    { header: 'Image', get: (i) => str(i.image_uuid ?? i.image), shrink: true },
    { header: 'SSH', get: ssh },
    { header: 'Started', get: (i) => relativeTime(i.start_date, nowMs), drop: 6 },
    { header: 'Label', get: (i) => str(i.label), shrink: true, drop: 7 },
  ];
  return table(rows, cols, maxWidth);
}

/**
 * The market's lines of an instance: its tier, its bid and what wins the machine now, and why it
 * waits (none for an on-demand instance of a server that does not say).
 */
export function marketLines(i: Instance): [string, string][] {
  if (i.market_tier === undefined && i.is_bid !== true) return [];
  const out: [string, string][] = [['Tier', str(i.market_tier ?? (i.is_bid === true ? 'bid' : 'on-demand'))]];
  if (i.is_bid === true) {
    out.push(['Bid', `${fmtUsd(i.dph_base, 4)}/hr (wins the machine now at ${fmtUsd(i.min_bid, 6)}/hr)`]);
    if (i.bid_waiting === true) out.push(['Waiting', str(i.waiting_reason ?? i.status_msg)]);
    if (i.preempted_by) out.push(['Preempted by', str(i.preempted_by)]);
  }
  return out;
}

/**
 * Each container port published besides SSH's, with the address it is reached at while the
 * instance runs: `8080/tcp → 40973 (10.0.0.5:40973)`, one per line after the first.
 */
export function portLines(i: Instance): string {
  const ports = (i.ports ?? {}) as Record<string, { HostIp?: string; HostPort?: string }[] | undefined>;
  const host = i.actual_status === 'running' ? (i.ssh_host ?? i.public_ipaddr ?? null) : null;
  const out: string[] = [];
  for (const [port, binds] of Object.entries(ports).sort((a, b) => parseInt(a[0]) - parseInt(b[0]))) {
    if (port === '22/tcp' || !Array.isArray(binds)) continue;
    for (const b of binds)
      if (b.HostPort) out.push(`${port} → ${b.HostPort}${host ? ` (${host}:${b.HostPort})` : ''}`);
  }
  return out.length > 0 ? out.join('; ') : DASH;
}

/**
 * The ports served through the gateway (docs/gateway.md) as URLs on `serverUrl`, one per line
 * after the first; the path alone without it.
 */
function gatewayLines(i: Instance, serverUrl?: string): string {
  const p = Array.isArray(i.portal) ? i.portal : [];
  if (p.length === 0) return DASH;
  const base = (serverUrl ?? '').replace(/\/+$/, '');
  return p
    .map((e) => `${str(e.name)}: ${base}${str(e.path)}${e.public ? ' (public)' : ' (owner only)'}`)
    .join('; ');
}

/**
 * `identity`: the private key file to name with -i, when openrig knows it and ssh would not try it;
 * `serverUrl`: the server's address, before the gateway's paths.
 */
export function instanceDetail(i: Instance, nowMs: number, identity?: string, serverUrl?: string): string {
  const pairs: [string, string][] = [
    ['ID', str(i.id)],
    ['Status', status(i)],
    ['Message', str(i.status_msg)],
    ['Machine', str(i.machine_id)],
    ['GPUs', gpus(i)],
    ['GPU util', gpuUtil(i)],
    ['vCPUs', fmtNum(i.cpu_cores_effective, 1)],
    ['RAM', fmtMbAsGb(i.cpu_ram)],
    ['Disk', diskDetail(i)],
    ['Price', i.dph_total === undefined ? DASH : `${fmtUsd(i.dph_total, 4)}/hr`],
    ...marketLines(i),
    ['Image', str(i.image_uuid ?? i.image)],
    ['Label', str(i.label)],
    ['Started', i.start_date ? `${relativeTime(i.start_date, nowMs)} (${utcTime(i.start_date)})` : DASH],
    [
      'SSH',
      ssh(i) === DASH ? DASH : `ssh ${identity ? `-i ${identity} ` : ''}-p ${i.ssh_port} root@${i.ssh_host}`,
    ],
    ['Ports', portLines(i)],
    ['Gateway', gatewayLines(i, serverUrl)],
    ['Maintenance', maintLines(i.maintenances, nowMs)],
  ];
  return keyValues(pairs);
}

export function machinesTable(rows: Machine[], nowMs: number, maxWidth?: number): string {
  const cols: Column<Machine>[] = [
    { header: 'ID', get: (m) => str(m.id), align: 'right' },
    { header: 'GPUs', get: (m) => gpus(m) },
    { header: 'Listed', get: (m) => str(typeof m.listed === 'number' ? m.listed === 1 : m.listed) },
    {
      header: 'State',
      get: (m) =>
        str(
          m.online_state ?? (typeof m.online === 'boolean' ? (m.online ? 'online' : 'offline') : undefined),
        ),
    },
    {
      header: '$/GPU/hr',
      get: (m) => (m.listed === false ? DASH : fmtUsd(m.listed_gpu_cost, 4)),
      align: 'right',
    },
    {
      header: 'Rented',
      get: (m) =>
        typeof m.current_rentals_running === 'number' ? String(m.current_rentals_running) : str(m.rented),
      align: 'right',
    },
    { header: 'Verified', get: (m) => str(m.verification) },
    { header: 'Heartbeat', get: (m) => relativeTime(m.last_heartbeat_at, nowMs), drop: 2 },
    { header: 'Maintenance', get: (m) => maintSummary(m.maintenances, nowMs), shrink: true },
    { header: 'Hostname', get: (m) => str(m.hostname), drop: 1, shrink: true },
  ];
  return table(rows, cols, maxWidth);
}

/** Scheduled maintenance windows of an instance's machine, one per line after the first. */
function maintLines(v: unknown, nowMs: number): string {
  if (!Array.isArray(v) || v.length === 0) return 'none scheduled';
  return (v as Partial<Maintenance>[])
    .map(
      (m) =>
        `${str(m.maintenance_category)} ${utcTime(m.start_time)} (${relativeTime(m.start_time, nowMs)}), ${
          typeof m.duration_hours === 'number' ? fmtDuration(m.duration_hours * 3600) : DASH
        }`,
    )
    .join('; ');
}

function maintSummary(v: unknown, nowMs: number): string {
  if (!Array.isArray(v) || v.length === 0) return DASH;
  const first = v[0] as Partial<Maintenance>;
  const more = v.length > 1 ? ` (+${v.length - 1})` : '';
  return `${str(first.maintenance_category)} ${relativeTime(first.start_time, nowMs)}${more}`;
}

export function maintsTable(rows: Maintenance[], nowMs: number, maxWidth?: number): string {
  const cols: Column<Maintenance>[] = [
    { header: 'Window', get: (m) => str(m.id), align: 'right' },
    { header: 'Machine', get: (m) => str(m.machine_id), align: 'right' },
    { header: 'Category', get: (m) => str(m.maintenance_category), drop: 2 },
    { header: 'Start', get: (m) => utcTime(m.start_time) },
    { header: 'When', get: (m) => relativeTime(m.start_time, nowMs) },
    { header: 'End', get: (m) => utcTime(m.end_time), drop: 1 },
    {
      header: 'Duration',
      get: (m) => (typeof m.duration_hours === 'number' ? fmtDuration(m.duration_hours * 3600) : DASH),
      align: 'right',
    },
  ];
  return table(rows, cols, maxWidth);
}

export function apiKeysTable(rows: ApiKey[], nowMs: number, maxWidth?: number): string {
  return table(
    rows,
    [
      { header: 'ID', get: (k) => str(k.id), align: 'right' },
      { header: 'Name', get: (k) => str(k.name), shrink: true },
      { header: 'Key', get: (k) => (k.key_prefix ? `${k.key_prefix}…` : DASH), drop: 2 },
      { header: 'Permissions', get: (k) => permissionsText(k.permissions), shrink: true },
      { header: 'Created', get: (k) => relativeTime(k.created_at, nowMs), drop: 1 },
      {
        header: 'Last used',
        get: (k) => (k.last_used_at ? relativeTime(k.last_used_at, nowMs) : 'never'),
      },
    ],
    maxWidth,
  );
}

/** `full`, `read_only`, or `instances:write,offers:read`. */
export function permissionsText(p: unknown): string {
  if (p === null || p === undefined) return 'full';
  if (typeof p === 'string') return p;
  if (typeof p !== 'object' || Array.isArray(p)) return str(p);
  const entries = Object.entries(p as Record<string, unknown>);
  if (entries.length >= PERMISSION_FAMILIES.length && entries.every(([, v]) => v === 'read'))
    return 'read_only';
  return entries.map(([k, v]) => `${k}:${str(v)}`).join(',');
}

export function sshKeysTable(rows: SshKey[], nowMs: number, maxWidth?: number): string {
  return table(
    rows,
    [
      { header: 'ID', get: (k) => str(k.id), align: 'right' },
      { header: 'Type', get: (k) => str(k.key_type), drop: 2 },
      { header: 'Fingerprint', get: (k) => str(k.fingerprint), shrink: true },
      { header: 'Comment', get: (k) => str(k.comment), shrink: true },
      { header: 'Added', get: (k) => relativeTime(k.created_at, nowMs), drop: 1 },
    ],
    maxWidth,
  );
}

export function tfaMethodsTable(rows: TfaMethod[], nowMs: number, maxWidth?: number): string {
  return table(
    rows,
    [
      { header: 'ID', get: (m) => str(m.id), align: 'right' },
      { header: 'Method', get: (m) => str(m.method) },
      { header: 'Label', get: (m) => str(m.label), shrink: true },
      { header: 'Phone', get: (m) => str(m.phone_number), drop: 3 },
      { header: 'Primary', get: (m) => str(m.is_primary) },
      { header: 'Failures', get: (m) => str(m.fail_count), align: 'right', drop: 4 },
      {
        header: 'Locked',
        get: (m) =>
          m.locked_until && m.locked_until * 1000 > nowMs
            ? `until ${relativeTime(m.locked_until, nowMs).replace(/^in /, '+')}`
            : 'no',
      },
      {
        header: 'Last used',
        get: (m) => (m.last_used ? relativeTime(m.last_used, nowMs) : 'never'),
        drop: 2,
      },
      { header: 'Added', get: (m) => relativeTime(m.created_at, nowMs), drop: 1 },
    ],
    maxWidth,
  );
}
