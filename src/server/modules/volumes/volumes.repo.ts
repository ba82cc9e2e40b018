// Every SQL statement of the volumes module. The races are decided here, by conditional UPDATEs:
// - a listing's space: a volume takes GB from its listing with
//   UPDATE volume_asks SET used_gb = used_gb + n WHERE id = ? AND listed = 1 AND used_gb + n <= size_gb,
//   and an unlist needs used_gb = 0 on the same row, so of a create and an unlist racing on one
//   listing the database lets exactly one through (both take the row's lock);
// - a machine's disk: a listing holds its GB in machines.disk_held_mb (what instance creates and
//   offer search read as taken), grown only while it fits: disk_held_mb + n <= disk_space × 1000;
// - a volume's mount: UPDATE volumes SET instance_id = ? WHERE … AND (instance_id IS NULL OR that
//   instance is destroyed), and a delete needs the same condition, so one live instance at most
//   mounts a volume, and a volume in use is never deleted.
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type { SqlDialect } from '../../db/dialect.js';
import type { DB } from '../../db/schema.js';
import type { VolumeAsksTable, VolumesTable } from '../../db/tables/volumes.js';

export type VolumeAskRow = Selectable<VolumeAsksTable>;
export type VolumeRow = Selectable<VolumesTable>;

/** The machine fields a listing and a volume show (offers' and volumes' rows). */
const MACHINE_FIELDS = [
  'm.host_id as m_host_id',
  'm.disk_space as m_disk_space',
  'm.disk_held_mb as m_disk_held_mb',
  'm.disk_bw',
  'm.inet_up',
  'm.inet_down',
  'm.reliability',
  'm.verified',
  'm.geolocation',
  'm.driver_version',
  'm.cuda_max_good',
  'm.cpu_ghz',
] as const;

export interface MachineFacts {
  m_host_id: number;
  m_disk_space: number;
  m_disk_held_mb: number;
  disk_bw: number;
  inet_up: number;
  inet_down: number;
  reliability: number;
  verified: number;
  geolocation: string;
  driver_version: string;
  cuda_max_good: number;
  cpu_ghz: number;
}

/** A host's live machine (not deleted), or undefined. */
export function hostMachine(db: Kysely<DB>, hostId: number, machineId: number) {
  return db
    .selectFrom('machines')
    .select(['id', 'host_id', 'disk_space', 'disk_held_mb'])
    .where('id', '=', machineId)
    .where('host_id', '=', hostId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/** The listed listing of a machine, if any. */
export function listedAskOfMachine(db: Kysely<DB>, machineId: number) {
  return db
    .selectFrom('volume_asks')
    .selectAll()
    .where('machine_id', '=', machineId)
    .where('listed', '=', 1)
    .executeTakeFirst();
}

export function askById(db: Kysely<DB>, id: number) {
  return db.selectFrom('volume_asks').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Moves a machine's held disk by `mb` (negative frees), growing it only while it fits the
 * machine's disk. True when it moved.
 */
export async function holdMachineDisk(db: Kysely<DB>, machineId: number, mb: number): Promise<boolean> {
  let q = db
    .updateTable('machines')
    .set((eb) => ({ disk_held_mb: eb('disk_held_mb', '+', mb) }))
    .where('id', '=', machineId);
  if (mb > 0) q = q.where(sql<boolean>`disk_held_mb + ${mb} <= disk_space * 1000`);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function insertAsk(
  db: Kysely<DB>,
  row: {
    machine_id: number;
    host_id: number;
    size_gb: number;
    price_disk: number;
    end_date: number | null;
    now: number;
  },
): Promise<number> {
  const r = await db
    .insertInto('volume_asks')
    .values({
      machine_id: row.machine_id,
      host_id: row.host_id,
      size_gb: row.size_gb,
      price_disk: row.price_disk,
      end_date: row.end_date,
      listed: 1,
      created_at: row.now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(r.id);
}

/** Changes a listing's terms; its size never below what its volumes take. True when it changed. */
export async function updateAsk(
  db: Kysely<DB>,
  id: number,
  v: { size_gb: number; price_disk: number; end_date: number | null },
): Promise<boolean> {
  const r = await db
    .updateTable('volume_asks')
    .set(v)
    .where('id', '=', id)
    .where('listed', '=', 1)
    .where('used_gb', '<=', v.size_gb)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Withdraws a host's listing that no volume uses; the row withdrawn, or undefined. */
export function unlistAsk(db: Kysely<DB>, hostId: number, id: number, now: number) {
  return db
    .updateTable('volume_asks')
    .set({ listed: 0, unlisted_at: now })
    .where('id', '=', id)
    .where('host_id', '=', hostId)
    .where('listed', '=', 1)
    .where('used_gb', '=', 0)
    .returningAll()
    .executeTakeFirst();
}

/** Takes `gb` of a listing that is listed, not ended and has them left; the listing, or undefined. */
export function takeFromAsk(db: Kysely<DB>, id: number, gb: number, now: number) {
  return db
    .updateTable('volume_asks')
    .set((eb) => ({ used_gb: eb('used_gb', '+', gb) }))
    .where('id', '=', id)
    .where('listed', '=', 1)
    .where(sql<boolean>`used_gb + ${gb} <= size_gb`)
    .where((eb) => eb.or([eb('end_date', 'is', null), eb('end_date', '>', now)]))
    .returningAll()
    .executeTakeFirst();
}

/** Gives `gb` back to a listing (a volume was deleted). */
export async function giveBackToAsk(db: Kysely<DB>, id: number, gb: number): Promise<void> {
  await db
    .updateTable('volume_asks')
    .set((eb) => ({ used_gb: eb('used_gb', '-', gb) }))
    .where('id', '=', id)
    .execute();
}

export async function insertVolume(
  db: Kysely<DB>,
  v: {
    user_id: number;
    ask_id: number;
    machine_id: number;
    host_id: number;
    label: string;
    size_gb: number;
    storage_cost: number;
    now: number;
    /** Default 'ready'; a clone's is CLONING until its data is copied. */
    status?: string;
  },
): Promise<number> {
  const r = await db
    .insertInto('volumes')
    .values({
      user_id: v.user_id,
      ask_id: v.ask_id,
      machine_id: v.machine_id,
      host_id: v.host_id,
      label: v.label,
      size_gb: v.size_gb,
      storage_cost: v.storage_cost,
      status: v.status ?? 'ready',
      instance_id: null,
      mount_path: null,
      created_at: v.now,
      deleted_at: null,
      billed_until: v.now,
      accrued_micros: 0,
      unpaid_since: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(r.id);
}

/**
 * Takes an owner's ready live volume's row lock (a write that changes nothing), as a clone's
 * source: a delete of it waits for the clone's transaction, then sees its copy. The row, or
 * undefined when it is no longer that.
 */
export function lockReadyVolume(db: Kysely<DB>, userId: number, id: number) {
  return db
    .updateTable('volumes')
    .set({ status: 'ready' })
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('deleted_at', 'is', null)
    .where('status', '=', 'ready')
    .returning(['size_gb', 'label'])
    .executeTakeFirst();
}

/** The status of a clone's new volume while its data is copied (then `cloning N%`). */
export const CLONING = 'cloning';

/** A clone's progress (rsync's line: `1.2 MB 42% 3.4MB/s`) on its volume's status, while cloning. */
export async function cloneProgress(db: Kysely<DB>, id: number, progress: string): Promise<void> {
  const pct = /(\d{1,3})%/.exec(progress)?.[1];
  await db
    .updateTable('volumes')
    .set({ status: pct === undefined ? CLONING : `${CLONING} ${pct}%` })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .where('status', 'like', `${CLONING}%`)
    .execute();
}

/**
 * The end of a clone on its volume, while cloning: ready when copied (`failed` null), else
 * `clone failed: why` (never ready: its owner deletes it). A copy into a ready volume changes nothing.
 */
export async function cloneEnded(db: Kysely<DB>, id: number, failed: string | null): Promise<void> {
  await db
    .updateTable('volumes')
    .set({ status: failed === null ? 'ready' : `clone failed: ${failed}`.slice(0, 300) })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .where('status', 'like', `${CLONING}%`)
    .execute();
}

export function volumeById(db: Kysely<DB>, id: number) {
  return db.selectFrom('volumes').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The instance `id` if it is live (not destroyed). */
export function liveInstance(db: Kysely<DB>, id: number) {
  return db
    .selectFrom('instances')
    .select(['id', 'machine_id'])
    .where('id', '=', id)
    .where('destroyed_at', 'is', null)
    .executeTakeFirst();
}

/** No live instance mounts it: none ever did, or the one that did is destroyed. */
const unmounted = sql<boolean>`(instance_id IS NULL OR instance_id IN (SELECT i.id FROM instances i WHERE i.destroyed_at IS NOT NULL))`;

/** Mounts an owner's live volume for an instance, if no live instance mounts it. True when it did. */
export async function mountVolume(
  db: Kysely<DB>,
  v: { id: number; userId: number; instanceId: number; mountPath: string },
): Promise<boolean> {
  const r = await db
    .updateTable('volumes')
    .set({ instance_id: v.instanceId, mount_path: v.mountPath })
    .where('id', '=', v.id)
    .where('user_id', '=', v.userId)
    .where('deleted_at', 'is', null)
    .where(unmounted)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Deletes an owner's live volume no live instance mounts; the row deleted, or undefined. */
export function deleteVolume(db: Kysely<DB>, userId: number, id: number, now: number) {
  return db
    .updateTable('volumes')
    .set({ deleted_at: now, status: 'deleted' })
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('deleted_at', 'is', null)
    .where(unmounted)
    .returningAll()
    .executeTakeFirst();
}

/** Listed listings with their machine, for search (deleted machines and ended listings left out). */
export function listedAsks(db: Kysely<DB>, now: number) {
  return db
    .selectFrom('volume_asks as a')
    .innerJoin('machines as m', 'm.id', 'a.machine_id')
    .select([
      'a.id',
      'a.machine_id',
      'a.size_gb',
      'a.used_gb',
      'a.price_disk',
      'a.end_date',
      ...MACHINE_FIELDS,
    ])
    .where('a.listed', '=', 1)
    .where('m.deleted_at', 'is', null)
    .where((eb) => eb.or([eb('a.end_date', 'is', null), eb('a.end_date', '>', now)]))
    .orderBy('a.id')
    .execute();
}

/** A user's live volumes with their machine, and whether their mounting instance is live. */
export function volumesOf(db: Kysely<DB>, userId: number) {
  return db
    .selectFrom('volumes as v')
    .innerJoin('machines as m', 'm.id', 'v.machine_id')
    .leftJoin('instances as i', (j) => j.onRef('i.id', '=', 'v.instance_id').on('i.destroyed_at', 'is', null))
    .select([
      'v.id',
      'v.label',
      'v.size_gb',
      'v.status',
      'v.machine_id',
      'v.host_id',
      'v.ask_id',
      'v.storage_cost',
      'v.accrued_micros',
      'v.created_at',
      'v.mount_path',
      'i.id as live_instance_id',
      ...MACHINE_FIELDS,
    ])
    .where('v.user_id', '=', userId)
    .where('v.deleted_at', 'is', null)
    .orderBy('v.id')
    .execute();
}

/** The live volumes mounted by these instances (an instance row's volume_info). */
/**
 * The live volumes an instance mounts as a JSON array, for a correlated subquery (the instance
 * poll reads its row, its windows and its volumes in one statement).
 */
export function mountsJson(dialect: SqlDialect, instanceId: RawBuilder<unknown>): RawBuilder<unknown> {
  return dialect.jsonRows(
    'v',
    ['id', 'label', 'mount_path', 'size_gb'],
    sql`volumes v WHERE v.instance_id = ${instanceId} AND v.deleted_at IS NULL`,
    'v.id',
  );
}

/** The live volumes of these machines (what their agent keeps on disk), with their last mount. */
export function volumesOfMachines(db: Kysely<DB>, machineIds: readonly number[]) {
  if (machineIds.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('volumes')
    .select(['id', 'machine_id', 'size_gb', 'instance_id', 'mount_path'])
    .where('machine_id', 'in', machineIds)
    .where('deleted_at', 'is', null)
    .orderBy('id')
    .execute();
}

/** Charges a volume from `from` to `until`, only while billed_until is still `from`. True when it did. */
export async function chargeVolume(
  db: Kysely<DB>,
  id: number,
  from: number,
  until: number,
  micros: number,
): Promise<boolean> {
  const r = await db
    .updateTable('volumes')
    .set({ billed_until: until, accrued_micros: sql`accrued_micros + ${micros}` })
    .where('id', '=', id)
    .where('billed_until', '=', from)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Up to `limit` live volumes billed before `before`, by id. */
export async function dueVolumeIds(db: Kysely<DB>, before: number, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('volumes')
    .select('id')
    .where('deleted_at', 'is', null)
    .where('billed_until', '<', before)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => Number(r.id));
}

/** Marks a volume's owner unpaid from `now`, once: true for the one caller that marked it. */
export async function markUnpaid(db: Kysely<DB>, id: number, now: number): Promise<boolean> {
  const r = await db
    .updateTable('volumes')
    .set({ unpaid_since: now })
    .where('id', '=', id)
    .where('unpaid_since', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function clearUnpaid(db: Kysely<DB>, id: number): Promise<void> {
  await db.updateTable('volumes').set({ unpaid_since: null }).where('id', '=', id).execute();
}

export async function ownerEmail(db: Kysely<DB>, userId: number): Promise<string | null> {
  const u = await db.selectFrom('users').select('email').where('id', '=', userId).executeTakeFirst();
  return u?.email ?? null;
}
