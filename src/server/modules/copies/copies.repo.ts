// Every SQL statement of the copies module. Active copies are those with ended_at null; every
// move of a copy is a conditional update on that, so a report, a cancel and a second report of
// the same end race harmlessly: the first wins, the others change nothing.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';

export interface InstanceEnd {
  id: number;
  user_id: number;
  machine_id: number;
  actual_status: string | null;
  intended_status: string;
  ssh_host: string | null;
  ssh_port: number | null;
  online_state: string;
}

/** A live instance with what a copy needs of it and of its machine; undefined when none. */
export function instanceEnd(db: Kysely<DB>, id: number): Promise<InstanceEnd | undefined> {
  return db
    .selectFrom('instances as i')
    .innerJoin('machines as m', 'm.id', 'i.machine_id')
    .select([
      'i.id',
      'i.user_id',
      'i.machine_id',
      'i.actual_status',
      'i.intended_status',
      'i.ssh_host',
      'i.ssh_port',
      'm.online_state',
    ])
    .where('i.id', '=', id)
    .where('i.destroyed_at', 'is', null)
    .executeTakeFirst();
}

/** A live volume with its machine's state; undefined when none. */
export function volumeEnd(db: Kysely<DB>, id: number) {
  return db
    .selectFrom('volumes as v')
    .innerJoin('machines as m', 'm.id', 'v.machine_id')
    .select(['v.id', 'v.user_id', 'v.machine_id', 'v.status', 'm.online_state'])
    .where('v.id', '=', id)
    .where('v.deleted_at', 'is', null)
    .executeTakeFirst();
}

export interface NewCopy {
  user_id: number;
  src_kind: 'instance' | 'volume';
  src_id: number;
  src_machine_id: number;
  src_path: string;
  dst_kind: 'instance' | 'volume';
  /** 1: rsync compresses the data on the way (a volume clone's default). */
  compress?: number;
  dst_id: number;
  dst_machine_id: number;
  dst_path: string;
  excludes: string;
  key_enc: string;
  key_fp: string;
  created_at: number;
}

/** Inserts an active copy; the unique index refuses a second active one into the same destination. */
export async function insertCopy(db: Kysely<DB>, c: NewCopy): Promise<number> {
  const r = await db.insertInto('copies').values(c).returning('id').executeTakeFirstOrThrow();
  return Number(r.id);
}

/** Ends the user's active copies into an instance or a volume as canceled; their rows as they were. */
export async function cancelCopies(
  db: Kysely<DB>,
  userId: number,
  dstKind: 'instance' | 'volume',
  dstId: number,
  now: number,
) {
  return db
    .updateTable('copies')
    .set({ status: 'canceled', ended_at: now, msg: 'canceled by its owner' })
    .where('user_id', '=', userId)
    .where('dst_kind', '=', dstKind)
    .where('dst_id', '=', dstId)
    .where('ended_at', 'is', null)
    .returning(['id', 'src_machine_id', 'src_kind', 'src_id', 'dst_kind', 'dst_id'])
    .execute();
}

/**
 * The active copies whose source is on these machines (what their agent is to carry out), with
 * the destination instance's SSH address or the destination volume's size.
 */
export function activeCopiesFrom(db: Kysely<DB>, machineIds: readonly number[]) {
  if (machineIds.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('copies as c')
    .leftJoin('instances as d', (j) => j.onRef('d.id', '=', 'c.dst_id').on('c.dst_kind', '=', 'instance'))
    .leftJoin('volumes as v', (j) => j.onRef('v.id', '=', 'c.dst_id').on('c.dst_kind', '=', 'volume'))
    .leftJoin('machines as dm', 'dm.id', 'c.dst_machine_id')
    .select([
      'c.id',
      'c.user_id',
      'c.status',
      'c.src_kind',
      'c.src_id',
      'c.src_path',
      'c.dst_kind',
      'c.dst_id',
      'c.dst_path',
      'c.excludes',
      'c.key_enc',
      'd.ssh_host',
      'd.ssh_port',
      'v.size_gb as dst_size_gb',
      // A volume clone into another agent's machine: where that agent's SSH server for it listens.
      'c.dst_machine_id',
      'c.dst_port',
      'c.compress',
      'dm.public_host as dst_public_host',
    ])
    .where('c.src_machine_id', 'in', machineIds)
    .where('c.ended_at', 'is', null)
    .orderBy('c.id')
    .execute();
}

/**
 * The active volume clones into volumes of these machines from other agents' (their agent opens an
 * SSH server for each): a clone whose source machine is among them too is copied on the host.
 */
export function activeClonesInto(db: Kysely<DB>, machineIds: readonly number[]) {
  if (machineIds.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('copies as c')
    .innerJoin('volumes as v', 'v.id', 'c.dst_id')
    .select(['c.id', 'c.dst_id', 'v.size_gb'])
    .where('c.dst_kind', '=', 'volume')
    .where('c.dst_machine_id', 'in', machineIds)
    .where('c.src_machine_id', 'not in', machineIds)
    .where('c.ended_at', 'is', null)
    .orderBy('c.id')
    .execute();
}

/**
 * Records the port a destination's agent opened for an active clone into one of its machines; the
 * source's machine when it changed (its agent is woken), else null.
 */
export async function setClonePort(
  db: Kysely<DB>,
  machineIds: readonly number[],
  id: number,
  port: number,
): Promise<number | null> {
  if (machineIds.length === 0) return null;
  const r = await db
    .updateTable('copies')
    .set({ dst_port: port })
    .where('id', '=', id)
    .where('dst_kind', '=', 'volume')
    .where('dst_machine_id', 'in', machineIds)
    .where('ended_at', 'is', null)
    .where((eb) => eb.or([eb('dst_port', 'is', null), eb('dst_port', '!=', port)]))
    .returning('src_machine_id')
    .executeTakeFirst();
  return r ? Number(r.src_machine_id) : null;
}

/** Ends the active copies into a volume (it was deleted) as canceled; their source machines. */
export function cancelCopiesInto(db: Kysely<DB>, volumeId: number, now: number) {
  return db
    .updateTable('copies')
    .set({ status: 'canceled', ended_at: now, msg: 'the volume was deleted' })
    .where('dst_kind', '=', 'volume')
    .where('dst_id', '=', volumeId)
    .where('ended_at', 'is', null)
    .returning(['id', 'src_machine_id'])
    .execute();
}

/** An active copy whose source is this volume, if any. */
export function activeCopyFrom(db: Kysely<DB>, volumeId: number) {
  return db
    .selectFrom('copies')
    .select(['id', 'dst_kind', 'dst_id'])
    .where('src_kind', '=', 'volume')
    .where('src_id', '=', volumeId)
    .where('ended_at', 'is', null)
    .executeTakeFirst();
}

/** Copies of these machines by id, active or not (to apply an agent's reports). */
export function copiesByIds(db: Kysely<DB>, machineIds: readonly number[], ids: readonly number[]) {
  if (machineIds.length === 0 || ids.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('copies')
    .select([
      'id',
      'user_id',
      'status',
      'src_kind',
      'src_id',
      'src_path',
      'dst_kind',
      'dst_id',
      'dst_path',
      'progress',
      'ended_at',
    ])
    .where('src_machine_id', 'in', machineIds)
    .where('id', 'in', ids)
    .execute();
}

/** queued → running (once); true for the winner. */
export async function markRunning(
  db: Kysely<DB>,
  id: number,
  now: number,
  progress: string,
): Promise<boolean> {
  const r = await db
    .updateTable('copies')
    .set({ status: 'running', started_at: now, progress })
    .where('id', '=', id)
    .where('status', '=', 'queued')
    .where('ended_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function setProgress(
  db: Kysely<DB>,
  id: number,
  progress: string,
  bytes: number | null,
): Promise<boolean> {
  const r = await db
    .updateTable('copies')
    .set({ progress, ...(bytes !== null ? { bytes } : {}) })
    .where('id', '=', id)
    .where('ended_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Ends an active copy (done or failed); true for the winner. */
export async function endCopy(
  db: Kysely<DB>,
  id: number,
  status: 'done' | 'failed',
  msg: string,
  bytes: number | null,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('copies')
    .set({ status, msg, ended_at: now, ...(bytes !== null ? { bytes } : {}) })
    .where('id', '=', id)
    .where('ended_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** The active copy into an instance of this host whose one-time key has this fingerprint. */
export function copyForKey(
  db: Kysely<DB>,
  hostId: number,
  dst: { kind: 'instance' | 'volume'; id: number },
  fp: string,
) {
  return db
    .selectFrom('copies as c')
    .innerJoin('machines as m', 'm.id', 'c.dst_machine_id')
    .select(['c.id', 'c.key_used_at'])
    .where('c.dst_kind', '=', dst.kind)
    .where('c.dst_id', '=', dst.id)
    .where('c.key_fp', '=', fp)
    .where('c.ended_at', 'is', null)
    .where('m.host_id', '=', hostId)
    .executeTakeFirst();
}

/** Takes a copy's one-time key; true for the one login that takes it. */
export async function takeKey(db: Kysely<DB>, id: number, now: number): Promise<boolean> {
  const r = await db
    .updateTable('copies')
    .set({ key_used_at: now })
    .where('id', '=', id)
    .where('key_used_at', 'is', null)
    .where('ended_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export function copiesOf(db: Kysely<DB>, userId: number) {
  return db
    .selectFrom('copies')
    .select([
      'id',
      'src_kind',
      'src_id',
      'src_path',
      'dst_kind',
      'dst_id',
      'dst_path',
      'status',
      'progress',
      'bytes',
      'msg',
      'created_at',
      'ended_at',
    ])
    .where('user_id', '=', userId)
    .orderBy('id', 'desc')
    .limit(50)
    .execute();
}

/** Of `ids`, the live machines of this host registered by this agent. */
export async function agentMachines(
  db: Kysely<DB>,
  hostId: number,
  agentUid: string,
  ids: readonly number[],
): Promise<number[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('machines')
    .select('id')
    .where('host_id', '=', hostId)
    .where('agent_uid', '=', agentUid)
    .where('deleted_at', 'is', null)
    .where('id', 'in', ids)
    .execute();
  return rows.map((r) => Number(r.id));
}
