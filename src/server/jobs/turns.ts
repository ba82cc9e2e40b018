// A periodic job that must run once across every `serve` process sharing the database (all
// workers of all nodes), not once per process: each process asks for the job's turn, and the
// database gives it to one. The claim is a single upsert, conditional on the turn being due
// (`next_at <= now`), that moves next_at a period ahead: of processes claiming at once exactly
// one row is written, and only its writer gets a row back. A process that dies with the turn
// leaves the job undone until the next period.
import { sql, type Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

/** True when this process has the job's turn (and next_at moved to now + periodMs). */
export async function claimTurn(
  db: Kysely<DB>,
  name: string,
  now: number,
  periodMs: number,
): Promise<boolean> {
  const won = await db
    .insertInto('job_turns')
    .values({ name, next_at: now + periodMs })
    .onConflict((oc) =>
      oc
        .column('name')
        .doUpdateSet({ next_at: now + periodMs })
        .where(sql.ref('job_turns.next_at'), '<=', now),
    )
    .returning('name')
    .executeTakeFirst();
  return won !== undefined;
}
