// Every SQL statement of the usage-history module. A minute's sample is inserted with ON CONFLICT
// DO NOTHING on the primary key: of two processes writing the same minute of an instance, the
// first wins and the second changes nothing. The roll-up moves one hour's minute rows into its
// hourly row and deletes them in one transaction (the caller's), so a reader sees one or the other.
import { sql, type Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { UsageSamplesTable } from '../../db/tables/usage-history.js';

export type SampleRow = UsageSamplesTable;

export async function insertSamples(db: Kysely<DB>, rows: SampleRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db
    .insertInto('usage_samples')
    .values(rows)
    .onConflict((oc) => oc.columns(['instance_id', 'span_s', 't']).doNothing())
    .execute();
}

/** The instance's id when `userId` rented it (live or destroyed); undefined otherwise. */
export async function ownInstance(db: Kysely<DB>, userId: number, id: number): Promise<number | undefined> {
  const r = await db
    .selectFrom('instances')
    .select('id')
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return r?.id;
}

/** Every sample of one instance, oldest first (an hour's row before the minutes that follow it). */
export function samplesOf(db: Kysely<DB>, instanceId: number): Promise<SampleRow[]> {
  return db
    .selectFrom('usage_samples')
    .selectAll()
    .where('instance_id', '=', instanceId)
    .orderBy('t')
    .orderBy('span_s', 'desc')
    .execute();
}

/** The start of the oldest sample of `spanS` that begins before `before`; null when none does. */
export async function oldestBefore(db: Kysely<DB>, spanS: number, before: number): Promise<number | null> {
  const r = await db
    .selectFrom('usage_samples')
    .select('t')
    .where('span_s', '=', spanS)
    .where('t', '<', before)
    .orderBy('t')
    .limit(1)
    .executeTakeFirst();
  return r ? Number(r.t) : null;
}

/**
 * Rolls the minute rows of [from, to) into rows of `hourS` (every minute of that span falls in one
 * hour: `from` is an hour's start and `to` the next): the mean GPU utilisation of the minutes that
 * measured it, the highest GPU memory and disk. Then deletes those minute rows. Returns how many.
 */
export async function rollUpHour(
  db: Kysely<DB>,
  minuteS: number,
  hourS: number,
  from: number,
  to: number,
): Promise<number> {
  await db
    .insertInto('usage_samples')
    .columns(['instance_id', 'span_s', 't', 'gpu_util', 'gpu_mem_bytes', 'disk_usage_bytes'])
    .expression((eb) =>
      eb
        .selectFrom('usage_samples')
        .select((s) => [
          'instance_id',
          sql.lit(hourS).as('span_s'),
          sql.lit(from).as('t'),
          s.fn.avg<number>('gpu_util').as('gpu_util'),
          s.fn.max('gpu_mem_bytes').as('gpu_mem_bytes'),
          s.fn.max('disk_usage_bytes').as('disk_usage_bytes'),
        ])
        .where('span_s', '=', minuteS)
        .where('t', '>=', from)
        .where('t', '<', to)
        .groupBy('instance_id'),
    )
    // An hour rolled up before (a minute written late, after its hour was done) keeps its row.
    .onConflict((oc) => oc.columns(['instance_id', 'span_s', 't']).doNothing())
    .execute();
  const r = await db
    .deleteFrom('usage_samples')
    .where('span_s', '=', minuteS)
    .where('t', '>=', from)
    .where('t', '<', to)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Deletes the rows of `spanS` that began before `before`; returns how many. */
export async function pruneBefore(db: Kysely<DB>, spanS: number, before: number): Promise<number> {
  const r = await db
    .deleteFrom('usage_samples')
    .where('span_s', '=', spanS)
    .where('t', '<', before)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
