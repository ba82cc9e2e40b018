// Outbox queries of the relay. Work is claimed with a lease (locked_by, locked_until) by one
// conditional UPDATE, so several `serve` processes never deliver one row twice: the database
// decides who holds a row, never a read followed by a write.
import type { ExpressionBuilder, Insertable, Kysely, Selectable } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { EmailOutboxTable } from '../../db/tables/foundation.js';

export type OutboxRow = Selectable<EmailOutboxTable>;

/** Due: not sent, not given up, available, and not leased (or the lease ran out: a crashed relay). */
function due(eb: ExpressionBuilder<DB, 'email_outbox'>, now: number) {
  return eb.and([
    eb('sent_at', 'is', null),
    eb('failed_at', 'is', null),
    eb('available_at', '<=', now),
    eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]),
  ]);
}

/**
 * Leases up to `limit` due rows to `worker` and counts the attempt. The `due` condition is
 * repeated on the outer UPDATE: on PostgreSQL a concurrent claimer's committed lease makes the
 * re-checked row fail it (read committed re-evaluates the WHERE on the updated row), so the
 * loser skips it; on SQLite writers are serialised. The attempt is counted at claim time, so an
 * e-mail that crashes its sender still runs out of attempts.
 */
export async function claimDue(
  db: Kysely<DB>,
  p: { worker: string; now: number; leaseMs: number; limit: number },
): Promise<OutboxRow[]> {
  const rows = await db
    .updateTable('email_outbox')
    .set((eb) => ({ locked_by: p.worker, locked_until: p.now + p.leaseMs, attempts: eb('attempts', '+', 1) }))
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('email_outbox')
        .select('id')
        .where((e) => due(e, p.now))
        .orderBy('available_at')
        .orderBy('id')
        .limit(p.limit),
    )
    .where((eb) => due(eb, p.now))
    .returningAll()
    .execute();
  return rows.sort((a, b) => a.available_at - b.available_at || a.id - b.id);
}

/**
 * Marks leased rows sent, in one statement per relay batch (one commit, not one per e-mail); only
 * the lease holder may (a row whose lease ran out and was taken over is not touched).
 */
export async function markSent(
  db: Kysely<DB>,
  p: { ids: number[]; worker: string; now: number },
): Promise<number> {
  if (p.ids.length === 0) return 0;
  const r = await db
    .updateTable('email_outbox')
    .set({ sent_at: p.now, locked_by: null, locked_until: null, last_error: null })
    .where('id', 'in', p.ids)
    .where('locked_by', '=', p.worker)
    .where('sent_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** Releases a leased row for another try at `availableAt`, or gives it up (`failed_at`). */
export async function markFailedAttempt(
  db: Kysely<DB>,
  p: { id: number; worker: string; now: number; error: string; giveUp: boolean; availableAt: number },
): Promise<boolean> {
  const r = await db
    .updateTable('email_outbox')
    .set({
      locked_by: null,
      locked_until: null,
      last_error: p.error.slice(0, 1000),
      ...(p.giveUp ? { failed_at: p.now } : { available_at: p.availableAt }),
    })
    .where('id', '=', p.id)
    .where('locked_by', '=', p.worker)
    .where('sent_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Gives a lease back untouched (the relay is stopping, or the lease is too short to send). */
export async function releaseLease(db: Kysely<DB>, p: { id: number; worker: string }): Promise<void> {
  await db
    .updateTable('email_outbox')
    .set((eb) => ({ locked_by: null, locked_until: null, attempts: eb('attempts', '-', 1) }))
    .where('id', '=', p.id)
    .where('locked_by', '=', p.worker)
    .where('sent_at', 'is', null)
    .execute();
}

/** How many rows are due now (tests, metrics). */
export async function countDue(db: Kysely<DB>, now: number): Promise<number> {
  const r = await db
    .selectFrom('email_outbox')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where((eb) => due(eb, now))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Deletes e-mails sent (or given up) before `before`; the outbox keeps recent history only. */
export async function pruneOld(db: Kysely<DB>, before: number): Promise<number> {
  const r = await db
    .deleteFrom('email_outbox')
    .where((eb) => eb.or([eb('sent_at', '<', before), eb('failed_at', '<', before)]))
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Enqueues e-mails; a row whose idempotency key is already queued is skipped. Returns how many were new. */
export async function insertOutboxRows(
  db: Kysely<DB>,
  rows: Insertable<EmailOutboxTable>[],
): Promise<number> {
  if (rows.length === 0) return 0;
  const res = await db
    .insertInto('email_outbox')
    .values(rows)
    .onConflict((oc) => oc.column('idempotency_key').doNothing())
    .returning('id')
    .execute();
  return res.length;
}
