// Queries of the platform module: the scrape-time reads behind the database-wide metrics.
import { sql, type Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';

/** A round trip to the database; throws when it does not answer. */
export async function pingDb(db: Kysely<DB>): Promise<void> {
  await sql`select 1`.execute(db);
}

/** Live (not destroyed) instances counted by actual_status (null: provisioning). */
export function instanceCountsByStatus(db: Kysely<DB>) {
  return db
    .selectFrom('instances')
    .select(['actual_status', (eb) => eb.fn.countAll<number>().as('n')])
    .where('destroyed_at', 'is', null)
    .groupBy('actual_status')
    .execute();
}

/** The outbox backlog: pending and failed e-mails, and when the oldest pending one was queued. */
export function outboxBacklog(db: Kysely<DB>) {
  return db
    .selectFrom('email_outbox')
    .select([
      sql<number>`sum(case when sent_at is null and failed_at is null then 1 else 0 end)`.as('pending'),
      sql<number>`sum(case when failed_at is not null then 1 else 0 end)`.as('failed'),
      sql<number | null>`min(case when sent_at is null and failed_at is null then created_at end)`.as(
        'oldest',
      ),
    ])
    .executeTakeFirst();
}

/**
 * Heartbeats of online machines: the oldest and mean last heartbeat, and how many are older than
 * `overdueBefore`.
 */
export function heartbeatLag(db: Kysely<DB>, overdueBefore: number) {
  return db
    .selectFrom('machines')
    .select([
      sql<number | null>`min(last_heartbeat_at)`.as('oldest'),
      sql<number | null>`avg(last_heartbeat_at)`.as('mean'),
      sql<number>`sum(case when last_heartbeat_at < ${overdueBefore} then 1 else 0 end)`.as('overdue'),
    ])
    .where('deleted_at', 'is', null)
    .where('online_state', '=', 'online')
    .where('last_heartbeat_at', 'is not', null)
    .executeTakeFirst();
}

/** Machines (not deleted) counted by online_state. */
export function machineCountsByState(db: Kysely<DB>) {
  return db
    .selectFrom('machines')
    .select(['online_state', (eb) => eb.fn.countAll<number>().as('n')])
    .where('deleted_at', 'is', null)
    .groupBy('online_state')
    .execute();
}
