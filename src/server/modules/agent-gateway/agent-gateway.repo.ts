// Database side of the agent protocol. Every state change is a conditional UPDATE on the state it
// was decided in, so duplicated or stale reports, several `serve` processes and
// the heartbeat sweeps can interleave without one undoing another.
import { roundPrice } from '../../../contract/money.js';
import {
  sql,
  type CompiledQuery,
  type Insertable,
  type Kysely,
  type RawBuilder,
  type WhereInterface,
} from 'kysely';
import { caseById } from '../../db/case-by-id.js';
import type { ApiKeysTable } from '../../db/tables/foundation.js';
import type { DB } from '../../db/schema.js';
import type { SqlDialect, Store } from '../../db/connection.js';
import type { AgentMachineHardware } from '../../../contract/agent-protocol.js';

export interface PriceInput {
  priceGpu?: number;
  priceDisk?: number;
  publicHost?: string;
  runtime?: 'process' | 'docker';
  volumeMethod?: 'ext4-loop' | 'directory';
  /** A new machine starts verified (OPENRIG_AUTO_VERIFY=on); an existing one keeps its flag. */
  verified?: boolean;
  /** Its agent recreates containers by configuration generation (said at each registration). */
  configGenerations?: boolean;
  /** Where the machine is (`--location`), its geolocation; absent: unchanged. */
  location?: string;
}

/**
 * One machine per (agent_uid, slot): an upsert decided by the unique index, so a restarted agent
 * gets its machines back and two racing registrations make one row. The DO UPDATE only applies
 * when the row belongs to the same host and is not deleted; otherwise nothing is returned
 * (another host's agent_uid, or a machine its host deleted: deletedSlotMachine tells which).
 */
export async function upsertMachine(
  db: Kysely<DB>,
  hostId: number,
  agentUid: string,
  m: AgentMachineHardware,
  p: PriceInput,
  now: number,
) {
  const hw = {
    hostname: m.hostname,
    gpu_name: m.gpu_name,
    num_gpus: m.num_gpus,
    gpu_ram: m.gpu_ram,
    cpu_name: m.cpu_name,
    cpu_cores: m.cpu_cores,
    cpu_ghz: m.cpu_ghz,
    cpu_ram: m.cpu_ram,
    disk_space: m.disk_space,
    driver_version: m.driver_version,
    cuda_max_good: m.cuda_max_good,
    dlperf: m.dlperf,
  };
  // --price-gpu is per GPU, like the column; the minimum bid (whole machine) defaults to half of it.
  const price =
    p.priceGpu !== undefined
      ? {
          listed: 1,
          price_gpu_dph: roundPrice(p.priceGpu),
          min_bid_dph: roundPrice(p.priceGpu * m.num_gpus * 0.5),
        }
      : {};
  const disk = p.priceDisk !== undefined ? { price_disk_gb_month: roundPrice(p.priceDisk) } : {};
  const reach = p.publicHost !== undefined ? { public_host: p.publicHost } : {};
  const where = p.location !== undefined ? { geolocation: p.location } : {};
  // The process runtime exposes one port per instance (its SSH server); a container publishes
  // its `-p` requests as well.
  const ports = { direct_port_count: p.runtime === 'docker' ? 64 : 1 };
  // Written at every registration: an agent replaced by an older one loses the capability.
  const capable = { agent_config_generations: p.configGenerations ? 1 : 0 };
  // How it runs instances, for renters to see (null when the agent does not say).
  const runtime = { agent_runtime: p.runtime ?? null, volume_method: p.volumeMethod ?? null };
  return db
    .insertInto('machines')
    .values({
      host_id: hostId,
      agent_uid: agentUid,
      agent_slot: m.slot,
      ...hw,
      // Defaults for what an agent does not measure; the host or an operator may adjust them.
      disk_bw: 1000,
      inet_up: 1000,
      inet_down: 1000,
      pcie_bw: 16,
      reliability: 0.95,
      verified: p.verified ? 1 : 0,
      geolocation: '',
      listed: 0,
      price_gpu_dph: 0,
      price_disk_gb_month: 0,
      min_bid_dph: 0,
      rented: 0,
      ...price,
      ...disk,
      ...reach,
      ...where,
      ...ports,
      ...capable,
      ...runtime,
      online_state: 'online',
      last_heartbeat_at: now,
      created_at: now,
    })
    .onConflict((oc) =>
      oc
        .columns(['agent_uid', 'agent_slot'])
        .doUpdateSet({
          ...hw,
          ...price,
          ...disk,
          ...reach,
          ...where,
          ...ports,
          ...capable,
          ...runtime,
          online_state: 'online',
          last_heartbeat_at: now,
        })
        .where('machines.host_id', '=', hostId)
        .where('machines.deleted_at', 'is', null),
    )
    .returning(['id', 'verified'])
    .executeTakeFirst();
}

/** The machine of (agent_uid, slot) when it is this host's and deleted; undefined otherwise. */
export function deletedSlotMachine(db: Kysely<DB>, hostId: number, agentUid: string, slot: number) {
  return db
    .selectFrom('machines')
    .select('id')
    .where('agent_uid', '=', agentUid)
    .where('agent_slot', '=', slot)
    .where('host_id', '=', hostId)
    .where('deleted_at', 'is not', null)
    .executeTakeFirst();
}

/** Narrows a statement on machines to those among `ids` that belong to the host's agent `agentUid`. */
function ofAgent<Q extends WhereInterface<DB, 'machines'>>(
  q: Q,
  hostId: number,
  agentUid: string,
  ids: number[],
): Q {
  return q.where('id', 'in', ids).where('host_id', '=', hostId).where('agent_uid', '=', agentUid) as Q;
}

/** Which of `ids` are this agent's machines that its host deleted. */
export async function deletedAgentMachines(
  db: Kysely<DB>,
  hostId: number,
  agentUid: string,
  ids: number[],
): Promise<number[]> {
  if (ids.length === 0) return [];
  const rows = await ofAgent(db.selectFrom('machines').select('id'), hostId, agentUid, ids)
    .where('deleted_at', 'is not', null)
    .orderBy('id')
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Which of `ids` are this agent's live machines, with their online state and the address their
 * instances are reached at (a committed read).
 */
export async function ownMachines(
  store: Store,
  hostId: number,
  agentUid: string,
  ids: number[],
): Promise<{ id: number; online_state: string; public_host: string | null }[]> {
  const d = store.dialect;
  const text = `SELECT id, online_state, public_host FROM machines WHERE ${d.inIds('id', 1)} AND host_id = ${d.param(2)} AND agent_uid = ${d.param(3)} AND deleted_at IS NULL`;
  return store.read(text, [d.idsParam(ids), hostId, agentUid]);
}

/**
 * The heartbeat: marks the agent's live machines among `ids` alive and online; returns the ids
 * written, which are really its own. With `onlyOffline`, only those that were not online (a
 * heartbeat after a silence: the ones whose state moved), conditional on the state, so two
 * heartbeats racing move a machine (and report it) once.
 */
export async function touchMachines(
  db: Kysely<DB>,
  hostId: number,
  agentUid: string,
  ids: number[],
  now: number,
  { onlyOffline = false }: { onlyOffline?: boolean } = {},
): Promise<number[]> {
  if (ids.length === 0) return [];
  let q = ofAgent(
    db.updateTable('machines').set({ last_heartbeat_at: now, online_state: 'online' }),
    hostId,
    agentUid,
    ids,
  ).where('deleted_at', 'is', null);
  if (onlyOffline) q = q.where('online_state', '<>', 'online');
  const rows = await q.returning('id').execute();
  return rows.map((r) => r.id);
}

/**
 * Takes the agent's machines among `ids` offline; returns the ids written. With `onlyOnline`, only
 * those that were online (the ones whose state moved).
 */
export async function setMachinesOffline(
  db: Kysely<DB>,
  hostId: number,
  agentUid: string,
  ids: number[],
  { onlyOnline = false }: { onlyOnline?: boolean } = {},
): Promise<number[]> {
  if (ids.length === 0) return [];
  let q = ofAgent(db.updateTable('machines').set({ online_state: 'offline' }), hostId, agentUid, ids);
  if (onlyOnline) q = q.where('online_state', '=', 'online');
  const rows = await q.returning('id').execute();
  return rows.map((r) => r.id);
}

/** Instances the agent should hold: live ones on its machines, plus destroyed ones it still reports. */
export async function instancesForAgent(db: Kysely<DB>, machineIds: number[], reportedIds: number[]) {
  if (machineIds.length === 0) return [];
  // One table, found through its machine index: every agent's sync runs it, and joined with
  // machines PostgreSQL took a bitmap of the live-billing index, which the meter's updates bloat.
  // The instance's copy of its account's environment (instance_account_env) comes by its
  // primary key in the same statement; the instance reads elsewhere never touch it.
  return db
    .selectFrom('instances')
    .leftJoin('instance_account_env as ae', 'ae.instance_id', 'instances.id')
    .select([
      'id',
      'machine_id',
      'user_id',
      'image',
      'disk',
      'onstart',
      'runtype',
      'args',
      'config_generation',
      'env',
      'label',
      'intended_status',
      'actual_status',
      'status_msg',
      'ssh_host',
      'ssh_port',
      'agent_state',
      'destroyed_at',
      'container_key_enc',
      'image_login_enc',
      'disk_usage_bytes',
      'gpu_util',
      'preempt_until',
      'ae.env_enc as account_env_enc',
    ])
    .where('machine_id', 'in', machineIds)
    .where((eb) =>
      reportedIds.length > 0
        ? eb.or([eb('destroyed_at', 'is', null), eb('id', 'in', reportedIds)])
        : eb('destroyed_at', 'is', null),
    )
    .orderBy('id')
    .execute();
}

/** The agent's own view of each instance (agent_state; agent_reported_at = when it last changed). */
export async function recordAgentState(
  db: Kysely<DB>,
  machineIds: number[],
  reports: { id: number; state: string }[],
  now: number,
): Promise<void> {
  if (machineIds.length === 0) return; // `IN ()` is not SQL
  for (const r of reports) {
    // Written when it changes, not at every heartbeat.
    await db
      .updateTable('instances')
      .set({ agent_state: r.state, agent_reported_at: now })
      .where('id', '=', r.id)
      .where('machine_id', 'in', machineIds)
      .where((eb) => eb.or([eb('agent_state', 'is', null), eb('agent_state', '<>', r.state)]))
      .execute();
  }
}

/** What an agent measured of one instance: only the fields to write (absent: left as they are). */
export interface UsageWrite {
  id: number;
  disk_usage_bytes?: number | null;
  gpu_util?: number | null;
}

/**
 * Writes the measurements of many instances of the agent's machines in one statement, each row its
 * own values (caseById; a row without a field keeps its value). Destroyed instances are left alone.
 */
export async function writeUsage(db: Kysely<DB>, machineIds: number[], rows: UsageWrite[]): Promise<void> {
  if (machineIds.length === 0 || rows.length === 0) return;
  const column = (name: 'disk_usage_bytes' | 'gpu_util') => {
    const given = rows.filter((r) => r[name] !== undefined);
    return given.length === 0
      ? {}
      : {
          [name]: caseById(
            given.map((r) => [r.id, sql`${r[name]}`] as [number, RawBuilder<unknown>]),
            name,
          ),
        };
  };
  await db
    .updateTable('instances')
    .set({ ...column('disk_usage_bytes'), ...column('gpu_util') })
    .where(
      'id',
      'in',
      rows.map((r) => r.id),
    )
    .where('machine_id', 'in', machineIds)
    .where('destroyed_at', 'is', null)
    .execute();
}

/**
 * Seals the container key once: the first writer wins (`WHERE container_key_enc IS NULL`), so two
 * `serve` processes racing to seal never leave two different keys behind.
 */
export async function sealContainerKeyOnce(
  db: Kysely<DB>,
  instanceId: number,
  sealed: string,
): Promise<boolean> {
  const res = await db
    .updateTable('instances')
    .set({ container_key_enc: sealed })
    .where('id', '=', instanceId)
    .where('container_key_enc', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export async function readContainerKey(db: Kysely<DB>, instanceId: number): Promise<string | null> {
  const r = await db
    .selectFrom('instances')
    .select('container_key_enc')
    .where('id', '=', instanceId)
    .executeTakeFirst();
  return r?.container_key_enc ?? null;
}

/**
 * Machines whose last heartbeat is older than `before` and that still hold a live instance not
 * yet in `to`: the candidates of a sweep (the moves themselves are conditional, per instance).
 */
export async function quietMachinesWithInstances(
  db: Kysely<DB>,
  before: number,
  to: 'unknown' | 'offline',
): Promise<number[]> {
  const rows = await db
    .selectFrom('machines as m')
    .select('m.id')
    .where('m.last_heartbeat_at', 'is not', null)
    .where('m.last_heartbeat_at', '<', before)
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('instances as i')
          .select('i.id')
          .whereRef('i.machine_id', '=', 'm.id')
          .where('i.destroyed_at', 'is', null)
          .where((eb) =>
            to === 'unknown'
              ? eb.or([
                  eb('i.actual_status', 'is', null),
                  eb('i.actual_status', 'in', ['loading', 'running']),
                ])
              : eb.or([eb('i.actual_status', 'is', null), eb('i.actual_status', '<>', 'offline')]),
          ),
      ),
    )
    .execute();
  return rows.map((r) => r.id);
}

/** Takes machines quiet since before `heartbeatBefore` offline; returns those that moved. */
export async function sweepMachinesOffline(
  db: Kysely<DB>,
  heartbeatBefore: number,
): Promise<{ id: number; host_id: number }[]> {
  return db
    .updateTable('machines')
    .set({ online_state: 'offline' })
    .where('online_state', '=', 'online')
    .where('last_heartbeat_at', 'is not', null)
    .where('last_heartbeat_at', '<', heartbeatBefore)
    .returning(['id', 'host_id'])
    .execute();
}

/**
 * The statement writing a batch of heartbeat times: forward only, online live machines only. The
 * online test is written `(…) IS TRUE`, which no index serves, so the heartbeat index (whose
 * entries every write moves) is never the way in: 5.8 s per 500 machines on a PostgreSQL table
 * never analysed, 11 ms this way.
 */
export function writeTimes(dialect: SqlDialect, part: [number, number][]): CompiledQuery {
  return dialect.updateByIds(
    'machines',
    'last_heartbeat_at',
    part,
    "(machines.online_state = 'online') IS TRUE AND machines.deleted_at IS NULL AND (machines.last_heartbeat_at IS NULL OR machines.last_heartbeat_at < v.t)",
  );
}

/** Client requests not yet answered nor expired, of these (live) instances. */
export async function pendingRequests(db: Kysely<DB>, instanceIds: number[], now: number) {
  // No live instance, no request to carry out: most syncs of an idle fleet skip the query.
  if (instanceIds.length === 0) return [];
  return db
    .selectFrom('instance_requests')
    .select(['id', 'instance_id', 'kind', 'args'])
    .where('instance_id', 'in', instanceIds)
    .where('done_at', 'is', null)
    .where('expires_at', '>', now)
    .orderBy('id')
    .limit(100)
    .execute();
}

/**
 * Records the agent's answer to a request of one of its instances, once: the first answer wins
 * (`done_at IS NULL`), and a request of another host's instance is not touched.
 */
export async function completeRequest(
  db: Kysely<DB>,
  machineIds: number[],
  r: { id: number; result: string },
  now: number,
): Promise<boolean> {
  if (machineIds.length === 0) return false;
  const res = await db
    .updateTable('instance_requests')
    .set({ done_at: now, result: r.result })
    .where('id', '=', r.id)
    .where('done_at', 'is', null)
    .where('instance_id', 'in', (eb) =>
      eb.selectFrom('instances').select('id').where('machine_id', 'in', machineIds),
    )
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export async function insertApiKey(db: Kysely<DB>, values: Insertable<ApiKeysTable>): Promise<number> {
  const r = await db.insertInto('api_keys').values(values).returning('id').executeTakeFirstOrThrow();
  return r.id;
}

export async function deleteApiKey(db: Kysely<DB>, id: number): Promise<void> {
  await db.deleteFrom('api_keys').where('id', '=', id).execute();
}

/** The instance, when it is live on a live machine of this host (else undefined). */
export async function hostLiveInstance(db: Kysely<DB>, hostId: number, instanceId: number) {
  return db
    .selectFrom('instances as i')
    .innerJoin('machines as m', 'm.id', 'i.machine_id')
    .select(['i.id', 'i.user_id'])
    .where('i.id', '=', instanceId)
    .where('m.host_id', '=', hostId)
    .where('m.deleted_at', 'is', null)
    .where('i.destroyed_at', 'is', null)
    .executeTakeFirst();
}

/**
 * Whether a request newer than `afterId` waits for a live instance of these machines: one the
 * agent has not been handed yet (its wait answers at once).
 */
export async function newRequestAfter(
  db: Kysely<DB>,
  machineIds: number[],
  afterId: number,
  now: number,
): Promise<boolean> {
  if (machineIds.length === 0) return false;
  const row = await db
    .selectFrom('instance_requests as r')
    .innerJoin('instances as i', 'i.id', 'r.instance_id')
    .select('r.id')
    .where('i.machine_id', 'in', machineIds)
    .where('i.destroyed_at', 'is', null)
    .where('r.done_at', 'is', null)
    .where('r.expires_at', '>', now)
    .where('r.id', '>', afterId)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
