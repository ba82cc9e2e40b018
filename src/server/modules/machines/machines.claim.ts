// The `machines.rented` flag: 1 exactly while the machine holds an ACTIVE instance (not destroyed,
// intended_status not 'stopped'). Kept in step by conditional updates in the transaction that
// makes an instance active (create, start) or inactive (stop, destroy of the active one, balance
// exhausted); the partial unique index instances_one_live_per_machine backs it (migration 002).
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';

/**
 * Claims machine `id` for an instance becoming active (rented 0 → 1). The conditional UPDATE
 * decides a race (never read-then-write): of concurrent claims exactly one changes the row; the
 * others (on PostgreSQL after waiting for the winner's commit) see rented = 1 and get false.
 */
export async function claimMachine(trx: Kysely<DB>, id: number): Promise<boolean> {
  const res = await trx
    .updateTable('machines')
    .set({ rented: 1 })
    .where('id', '=', id)
    .where('rented', '=', 0)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/**
 * Frees machine `id`. Call it only in the transaction whose conditional UPDATE just made the
 * machine's active instance inactive: that instance held the flag, so no one else's is cleared.
 */
export async function releaseMachine(trx: Kysely<DB>, id: number): Promise<void> {
  await trx.updateTable('machines').set({ rented: 0 }).where('id', '=', id).where('rented', '=', 1).execute();
}
