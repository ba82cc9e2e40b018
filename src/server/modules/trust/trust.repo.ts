// The statements of the trust module: uptime samples, the record a machine's reliability is
// computed from, the computed number on the machine row, and renter reports.
import { sql, type Kysely, type Selectable } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { MachineReliabilityTable, MachineReportsTable } from '../../db/tables/trust.js';

export type ReportRow = Selectable<MachineReportsTable>;
export type ReliabilityRow = Selectable<MachineReliabilityTable>;

const SAMPLER_ID = 1;

/**
 * Moves the sampler's clock from the time last read to `now`; the previous time when this caller
 * won (a conditional UPDATE: of several processes sampling at once one wins), null otherwise.
 * The first call ever writes the row and counts nothing.
 */
export async function claimSample(db: Kysely<DB>, now: number): Promise<number | null> {
  const row = await db
    .selectFrom('uptime_sampler')
    .select('sampled_at')
    .where('id', '=', SAMPLER_ID)
    .executeTakeFirst();
  if (!row) {
    await db
      .insertInto('uptime_sampler')
      .values({ id: SAMPLER_ID, sampled_at: now })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    return null;
  }
  const prev = Number(row.sampled_at);
  if (now <= prev) return null;
  const r = await db
    .updateTable('uptime_sampler')
    .set({ sampled_at: now })
    .where('id', '=', SAMPLER_ID)
    .where('sampled_at', '=', prev)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1 ? prev : null;
}

/**
 * Adds `ms` to UTC day `day` of every machine expected online at `now`: not deleted, listed or
 * rented, with an agent that has heartbeated (machines no agent runs are not judged), and not in
 * a maintenance window its host announced; to its online time as well when its heartbeats say
 * online. One statement.
 */
export async function addUptime(db: Kysely<DB>, p: { now: number; day: number; ms: number }): Promise<void> {
  await sql`
    INSERT INTO machine_uptime (machine_id, day, listed_ms, online_ms)
    SELECT m.id, CAST(${p.day} AS bigint), CAST(${p.ms} AS bigint),
      CASE WHEN m.online_state = 'online' THEN CAST(${p.ms} AS bigint) ELSE 0 END
    FROM machines m
    WHERE m.deleted_at IS NULL AND m.last_heartbeat_at IS NOT NULL AND (m.listed = 1 OR m.rented = 1)
      AND NOT EXISTS (SELECT 1 FROM maintenance_windows w WHERE w.machine_id = m.id
        AND w.canceled_at IS NULL AND w.start_time <= CAST(${p.now} AS bigint) AND w.end_time > CAST(${p.now} AS bigint))
    ON CONFLICT (machine_id, day) DO UPDATE SET
      listed_ms = machine_uptime.listed_ms + excluded.listed_ms,
      online_ms = machine_uptime.online_ms + excluded.online_ms`.execute(db);
}

/** The machines whose reliability is computed: live ones an agent has heartbeated for. */
export async function judgedMachineIds(db: Kysely<DB>, machineId?: number): Promise<number[]> {
  let qb = db
    .selectFrom('machines')
    .select('id')
    .where('deleted_at', 'is', null)
    .where('last_heartbeat_at', 'is not', null);
  if (machineId !== undefined) qb = qb.where('id', '=', machineId);
  return (await qb.orderBy('id').execute()).map((r) => Number(r.id));
}

export interface MachineRecord {
  machine_id: number;
  listed_ms: number;
  online_ms: number;
  starts: number;
  start_failures: number;
  ended: number;
  interrupted: number;
  reporters: number;
}

/**
 * The record of machines `ids` since `from` (ms): uptime of the days from `from`'s day on,
 * instance starts (created since, that ran or failed before running) and failed ones, ends
 * (destroyed since, having run) and interrupted ones (destroyed while the sweep had them offline
 * or unknown), and the distinct renters who reported a problem since.
 */
export async function machineRecords(
  db: Kysely<DB>,
  ids: number[],
  from: number,
  fromDay: number,
): Promise<Map<number, MachineRecord>> {
  const out = new Map<number, MachineRecord>();
  if (ids.length === 0) return out;
  for (const id of ids)
    out.set(id, {
      machine_id: id,
      listed_ms: 0,
      online_ms: 0,
      starts: 0,
      start_failures: 0,
      ended: 0,
      interrupted: 0,
      reporters: 0,
    });
  const up = await db
    .selectFrom('machine_uptime')
    .select([
      'machine_id',
      sql<number>`sum(listed_ms)`.as('listed'),
      sql<number>`sum(online_ms)`.as('online'),
    ])
    .where('machine_id', 'in', ids)
    .where('day', '>=', fromDay)
    .groupBy('machine_id')
    .execute();
  for (const r of up) {
    const m = out.get(Number(r.machine_id))!;
    m.listed_ms = Number(r.listed);
    m.online_ms = Number(r.online);
  }
  const failed = sql<number>`case when i.running_since is null and i.actual_status = 'exited' then 1 else 0 end`;
  const starts = await db
    .selectFrom('instances as i')
    .select([
      'i.machine_id',
      sql<number>`sum(case when i.running_since is not null then 1 else ${failed} end)`.as('starts'),
      sql<number>`sum(${failed})`.as('failures'),
    ])
    .where('i.machine_id', 'in', ids)
    .where('i.created_at', '>=', from)
    .groupBy('i.machine_id')
    .execute();
  for (const r of starts) {
    const m = out.get(Number(r.machine_id))!;
    m.starts = Number(r.starts ?? 0);
    m.start_failures = Number(r.failures ?? 0);
  }
  const ends = await db
    .selectFrom('instances as i')
    .select([
      'i.machine_id',
      sql<number>`count(*)`.as('ended'),
      sql<number>`sum(case when i.actual_status in ('offline', 'unknown') then 1 else 0 end)`.as(
        'interrupted',
      ),
    ])
    .where('i.machine_id', 'in', ids)
    .where('i.destroyed_at', '>=', from)
    .where('i.running_since', 'is not', null)
    .groupBy('i.machine_id')
    .execute();
  for (const r of ends) {
    const m = out.get(Number(r.machine_id))!;
    m.ended = Number(r.ended);
    m.interrupted = Number(r.interrupted ?? 0);
  }
  const reps = await db
    .selectFrom('machine_reports')
    .select(['machine_id', sql<number>`count(distinct reporter_id)`.as('n')])
    .where('machine_id', 'in', ids)
    .where('created_at', '>=', from)
    .groupBy('machine_id')
    .execute();
  for (const r of reps) out.get(Number(r.machine_id))!.reporters = Number(r.n);
  return out;
}

/** Writes a machine's parts and, when it changed, its number on the machine row (which search reads). */
export async function saveReliability(
  db: Kysely<DB>,
  r: MachineRecord & { score: number; computed_at: number },
): Promise<void> {
  await db
    .insertInto('machine_reliability')
    .values(r)
    .onConflict((oc) =>
      oc.column('machine_id').doUpdateSet({
        listed_ms: r.listed_ms,
        online_ms: r.online_ms,
        starts: r.starts,
        start_failures: r.start_failures,
        ended: r.ended,
        interrupted: r.interrupted,
        reporters: r.reporters,
        score: r.score,
        computed_at: r.computed_at,
      }),
    )
    .execute();
  // Only a change moves the row (and its offer-index version).
  await db
    .updateTable('machines')
    .set({ reliability: r.score })
    .where('id', '=', r.machine_id)
    .where('reliability', '<>', r.score)
    .execute();
}

export function reliabilityOf(db: Kysely<DB>, machineId: number) {
  return db
    .selectFrom('machine_reliability')
    .selectAll()
    .where('machine_id', '=', machineId)
    .executeTakeFirst();
}

export function machineById(db: Kysely<DB>, id: number) {
  return db
    .selectFrom('machines')
    .select(['id', 'host_id', 'reliability', 'deleted_at', 'last_heartbeat_at'])
    .where('id', '=', id)
    .executeTakeFirst();
}

/** True when `userId` has an instance on the machine, live or destroyed since `since` (ms). */
export async function rentedSince(
  db: Kysely<DB>,
  userId: number,
  machineId: number,
  since: number,
): Promise<boolean> {
  const r = await db
    .selectFrom('instances')
    .select('id')
    .where('machine_id', '=', machineId)
    .where('user_id', '=', userId)
    .where((eb) => eb.or([eb('destroyed_at', 'is', null), eb('destroyed_at', '>=', since)]))
    .limit(1)
    .executeTakeFirst();
  return r !== undefined;
}

export function insertReport(db: Kysely<DB>, row: Omit<ReportRow, 'id'>): Promise<ReportRow> {
  return db.insertInto('machine_reports').values(row).returningAll().executeTakeFirstOrThrow();
}

/** A machine's reports, newest first (at most `limit`). */
export function reportsOf(db: Kysely<DB>, machineId: number, limit: number) {
  return db
    .selectFrom('machine_reports')
    .selectAll()
    .where('machine_id', '=', machineId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** The host's machines with their reliability parts (null before the first computation). */
export function hostMachinesTrust(db: Kysely<DB>, hostId: number) {
  return db
    .selectFrom('machines as m')
    .leftJoin('machine_reliability as r', 'r.machine_id', 'm.id')
    .select([
      'm.id',
      'm.hostname',
      'm.gpu_name',
      'm.num_gpus',
      'm.reliability',
      'm.online_state',
      'm.last_heartbeat_at',
      'r.listed_ms',
      'r.online_ms',
      'r.starts',
      'r.start_failures',
      'r.ended',
      'r.interrupted',
      'r.reporters',
      'r.computed_at',
      sql<number>`(select count(*) from machine_reports p where p.machine_id = m.id)`.as('reports'),
    ])
    .where('m.host_id', '=', hostId)
    .where('m.deleted_at', 'is', null)
    .orderBy('m.id')
    .execute();
}
