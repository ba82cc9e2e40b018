// Every SQL statement of events and webhooks. Races are decided by the database: the per-user
// event counter is one upsert (its row lock orders a user's events by commit), a delivery lane is
// leased by a conditional UPDATE of its webhook row, and a lane writes results only while the
// lease is still its own.
import { sql, type Insertable, type Kysely, type Selectable } from 'kysely';
import type { DB } from '../../db/schema.js';
import type {
  EventsTable,
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
  WebhooksTable,
} from '../../db/tables/webhooks.js';
import { chunks } from '../../db/chunks.js';

export type EventRow = Selectable<EventsTable>;
export type WebhookRow = Selectable<WebhooksTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;
export type AttemptRow = Selectable<WebhookAttemptsTable>;

// Rows per INSERT: keeps each statement well under SQLite's bound-parameter limit (32,766).
const CHUNK = 500;

/**
 * Adds each `n` to its user's event counter and returns the new values (the last number each user
 * took), in one upsert per chunk. Rows are written in the order given: callers pass users in
 * ascending order, so two transactions lock the same counters in the same order.
 */
export async function bumpEventCounters(
  trx: Kysely<DB>,
  bumps: { userId: number; n: number }[],
): Promise<Map<number, number>> {
  const last = new Map<number, number>();
  for (const part of chunks(bumps, CHUNK)) {
    const rows = await trx
      .insertInto('event_counters')
      .values(part.map((b) => ({ user_id: b.userId, seq: b.n })))
      .onConflict((oc) =>
        oc
          .column('user_id')
          .doUpdateSet((eb) => ({ seq: eb('event_counters.seq', '+', eb.ref('excluded.seq')) })),
      )
      .returning(['user_id', 'seq'])
      .execute();
    for (const r of rows) last.set(Number(r.user_id), Number(r.seq));
  }
  return last;
}

export async function insertEvents(trx: Kysely<DB>, rows: Insertable<EventsTable>[]): Promise<void> {
  for (const part of chunks(rows, CHUNK)) await trx.insertInto('events').values(part).execute();
}

/** The enabled webhooks of the users among `userIds`, in id order. */
export async function enabledWebhooksOf(
  trx: Kysely<DB>,
  userIds: number[],
): Promise<{ id: number; user_id: number; events: string }[]> {
  const out: { id: number; user_id: number; events: string }[] = [];
  for (const part of chunks(userIds, CHUNK * 10))
    out.push(
      ...(await trx
        .selectFrom('webhooks')
        .select(['id', 'user_id', 'events'])
        .where('user_id', 'in', part)
        .where('enabled', '=', 1)
        .execute()),
    );
  return out.sort((a, b) => a.id - b.id);
}

export async function insertDeliveries(
  trx: Kysely<DB>,
  rows: Insertable<WebhookDeliveriesTable>[],
): Promise<number[]> {
  const ids: number[] = [];
  for (const part of chunks(rows, CHUNK)) {
    const r = await trx
      .insertInto('webhook_deliveries')
      .values(part)
      .onConflict((oc) => oc.columns(['webhook_id', 'msg_id']).doNothing())
      .returning('id')
      .execute();
    ids.push(...r.map((x) => Number(x.id)));
  }
  return ids;
}

// ---- balance.low ----

/**
 * Among `userIds`, disarms the alerts whose balance is at or below the threshold and returns them
 * (each fires once), and re-arms those whose balance is back above it. Conditional updates: two
 * settlements racing fire an alert once.
 */
export async function balanceAlertsCrossed(
  trx: Kysely<DB>,
  userIds: number[],
): Promise<{ user_id: number; threshold_micros: number; balance_micros: number; email: string }[]> {
  if (userIds.length === 0) return [];
  // One statement: flips `armed` where the balance crossed the threshold either way; the rows
  // that come back disarmed are the alerts that fire now.
  const balance = sql<number>`(select u.balance_micros from users u where u.id = balance_alerts.user_id)`;
  const rows = await trx
    .updateTable('balance_alerts')
    .set({ armed: sql<number>`case when ${balance} <= threshold_micros then 0 else 1 end` })
    .where('user_id', 'in', userIds)
    .where((eb) =>
      eb.or([
        eb.and([eb('armed', '=', 1), eb(balance, '<=', sql<number>`threshold_micros`)]),
        eb.and([eb('armed', '=', 0), eb(balance, '>', sql<number>`threshold_micros`)]),
      ]),
    )
    .returning([
      'user_id',
      'threshold_micros',
      'armed',
      balance.as('balance_micros'),
      sql<string>`(select u.email from users u where u.id = balance_alerts.user_id)`.as('email'),
    ])
    .execute();
  return rows
    .filter((r) => Number(r.armed) === 0)
    .map((r) => ({
      user_id: Number(r.user_id),
      threshold_micros: Number(r.threshold_micros),
      balance_micros: Number(r.balance_micros),
      email: String(r.email),
    }));
}

export async function setBalanceAlert(
  db: Kysely<DB>,
  userId: number,
  thresholdMicros: number | null,
): Promise<void> {
  if (thresholdMicros === null) {
    await db.deleteFrom('balance_alerts').where('user_id', '=', userId).execute();
    return;
  }
  await db
    .insertInto('balance_alerts')
    .values({ user_id: userId, threshold_micros: thresholdMicros, armed: 1 })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ threshold_micros: thresholdMicros, armed: 1 }))
    .execute();
}

export function balanceAlertOf(db: Kysely<DB>, userId: number) {
  return db.selectFrom('balance_alerts').selectAll().where('user_id', '=', userId).executeTakeFirst();
}

// ---- the feed ----

export function eventSeqOf(db: Kysely<DB>, userId: number, publicId: string) {
  return db
    .selectFrom('events')
    .select('seq')
    .where('user_id', '=', userId)
    .where('public_id', '=', publicId)
    .executeTakeFirst();
}

/** A user's events after `afterSeq` and since `since`, filtered by exact types and prefixes. */
export function listEvents(
  db: Kysely<DB>,
  p: { userId: number; afterSeq: number; since: number; exact: string[]; prefixes: string[]; limit: number },
): Promise<EventRow[]> {
  let q = db
    .selectFrom('events')
    .selectAll()
    .where('user_id', '=', p.userId)
    .where('seq', '>', p.afterSeq)
    .where('created_at', '>=', p.since);
  if (p.exact.length > 0 || p.prefixes.length > 0) {
    q = q.where((eb) =>
      eb.or([
        ...(p.exact.length > 0 ? [eb('type', 'in', p.exact)] : []),
        ...p.prefixes.map((pre) => eb(sql`substr(type, 1, ${pre.length})`, '=', pre)),
      ]),
    );
  }
  return q.orderBy('seq').limit(p.limit).execute();
}

// ---- webhooks ----

export async function insertWebhook(db: Kysely<DB>, row: Insertable<WebhooksTable>): Promise<number> {
  const r = await db.insertInto('webhooks').values(row).returning('id').executeTakeFirstOrThrow();
  return Number(r.id);
}

export function webhooksOf(db: Kysely<DB>, userId: number): Promise<WebhookRow[]> {
  return db.selectFrom('webhooks').selectAll().where('user_id', '=', userId).orderBy('id').execute();
}

export function webhookOf(db: Kysely<DB>, userId: number, id: number): Promise<WebhookRow | undefined> {
  return db
    .selectFrom('webhooks')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

export function webhookById(db: Kysely<DB>, id: number): Promise<WebhookRow | undefined> {
  return db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Takes the user's row lock for the rest of the transaction (a no-op update): two creates of one
 * user are serialised, so the per-user cap is decided by the database, not by a racing count.
 */
export async function lockUser(trx: Kysely<DB>, userId: number): Promise<void> {
  await trx
    .updateTable('users')
    .set((eb) => ({ id: eb.ref('id') }))
    .where('id', '=', userId)
    .execute();
}

export function countWebhooks(db: Kysely<DB>, userId: number) {
  return db
    .selectFrom('webhooks')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
}

export async function updateWebhook(
  db: Kysely<DB>,
  userId: number,
  id: number,
  set: Partial<
    Pick<
      WebhooksTable,
      | 'url'
      | 'description'
      | 'events'
      | 'enabled'
      | 'failing_since'
      | 'disabled_reason'
      | 'secret_enc'
      | 'old_secret_enc'
      | 'old_secret_until'
      | 'updated_at'
    >
  >,
): Promise<boolean> {
  const r = await db
    .updateTable('webhooks')
    .set(set)
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function deleteWebhook(db: Kysely<DB>, userId: number, id: number): Promise<boolean> {
  const r = await db
    .deleteFrom('webhooks')
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(r.numDeletedRows) === 1;
}

// ---- deliveries (the API) ----

export function deliveriesOf(
  db: Kysely<DB>,
  webhookId: number,
  p: { beforeId: number | null; limit: number },
): Promise<DeliveryRow[]> {
  let q = db.selectFrom('webhook_deliveries').selectAll().where('webhook_id', '=', webhookId);
  if (p.beforeId !== null) q = q.where('id', '<', p.beforeId);
  return q.orderBy('id', 'desc').limit(p.limit).execute();
}

export function attemptsOf(db: Kysely<DB>, deliveryIds: number[]): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('delivery_id', 'in', deliveryIds)
    .orderBy('delivery_id')
    .orderBy('id')
    .execute();
}

/** Puts a delivery back in the queue, due now (a manual retry). */
export async function requeueDelivery(
  db: Kysely<DB>,
  webhookId: number,
  deliveryId: number,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('webhook_deliveries')
    .set({ state: 'pending', next_at: now })
    .where('id', '=', deliveryId)
    .where('webhook_id', '=', webhookId)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export function deliveryOf(db: Kysely<DB>, webhookId: number, deliveryId: number) {
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('id', '=', deliveryId)
    .where('webhook_id', '=', webhookId)
    .executeTakeFirst();
}

// ---- the dispatcher ----

/**
 * Enabled webhooks with no live lease and a delivery that may go now: due, and the oldest pending
 * one of its subject (a cheap read before any write).
 */
export async function dueWebhookIds(db: Kysely<DB>, now: number, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('webhooks as w')
    .select('w.id')
    .where('w.enabled', '=', 1)
    .where((eb) => eb.or([eb('w.locked_until', 'is', null), eb('w.locked_until', '<', now)]))
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('webhook_deliveries as d')
          .select('d.id')
          .whereRef('d.webhook_id', '=', 'w.id')
          .where('d.state', '=', 'pending')
          .where('d.next_at', '<=', now)
          .where(({ not, exists: ex, selectFrom: from }) =>
            not(
              ex(
                from('webhook_deliveries as e')
                  .select('e.id')
                  .whereRef('e.webhook_id', '=', 'd.webhook_id')
                  .where('e.state', '=', 'pending')
                  .whereRef('e.subject', '=', 'd.subject')
                  .whereRef('e.id', '<', 'd.id'),
              ),
            ),
          ),
      ),
    )
    .orderBy('w.id')
    .limit(limit)
    .execute();
  return rows.map((r) => Number(r.id));
}

/** Leases a webhook's lane to `worker`: true when this call won it. */
export async function claimLane(
  db: Kysely<DB>,
  p: { id: number; worker: string; now: number; leaseMs: number },
): Promise<boolean> {
  const r = await db
    .updateTable('webhooks')
    .set({ locked_by: p.worker, locked_until: p.now + p.leaseMs })
    .where('id', '=', p.id)
    .where('enabled', '=', 1)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', p.now)]))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Extends the lease; false when it is no longer `worker`'s (it ran out and was taken over). */
export async function renewLane(
  db: Kysely<DB>,
  p: { id: number; worker: string; now: number; leaseMs: number },
): Promise<boolean> {
  const r = await db
    .updateTable('webhooks')
    .set({ locked_until: p.now + p.leaseMs })
    .where('id', '=', p.id)
    .where('locked_by', '=', p.worker)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function releaseLane(db: Kysely<DB>, p: { id: number; worker: string }): Promise<void> {
  await db
    .updateTable('webhooks')
    .set({ locked_by: null, locked_until: null })
    .where('id', '=', p.id)
    .where('locked_by', '=', p.worker)
    .execute();
}

/** The oldest pending deliveries of an endpoint, in id order (the lane picks the due heads). */
export function pendingWindow(db: Kysely<DB>, webhookId: number, limit: number): Promise<DeliveryRow[]> {
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('webhook_id', '=', webhookId)
    .where('state', '=', 'pending')
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** Due deliveries that are the oldest pending one of their subject (when the window was blocked). */
export function dueHeads(
  db: Kysely<DB>,
  webhookId: number,
  now: number,
  limit: number,
): Promise<DeliveryRow[]> {
  return db
    .selectFrom('webhook_deliveries as d')
    .selectAll('d')
    .where('d.webhook_id', '=', webhookId)
    .where('d.state', '=', 'pending')
    .where('d.next_at', '<=', now)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('webhook_deliveries as e')
            .select('e.id')
            .whereRef('e.webhook_id', '=', 'd.webhook_id')
            .where('e.state', '=', 'pending')
            .whereRef('e.subject', '=', 'd.subject')
            .whereRef('e.id', '<', 'd.id'),
        ),
      ),
    )
    .orderBy('d.id')
    .limit(limit)
    .execute();
}

export interface AttemptResult {
  deliveryId: number;
  at: number;
  status: number | null;
  latencyMs: number;
  success: boolean;
  error: string | null;
  /** For a failure: the next try, or null to give up. */
  nextAt: number | null;
}

/** Writes a lane's attempt results (inside the caller's transaction). */
export async function writeAttempts(
  trx: Kysely<DB>,
  webhookId: number,
  results: AttemptResult[],
): Promise<void> {
  if (results.length === 0) return;
  for (const r of results) {
    await trx
      .updateTable('webhook_deliveries')
      .set((eb) => ({
        attempts: eb('attempts', '+', 1),
        last_status: r.status,
        last_error: r.error,
        last_latency_ms: r.latencyMs,
        last_attempt_at: r.at,
        ...(r.success
          ? { state: 'delivered', delivered_at: r.at }
          : r.nextAt === null
            ? { state: 'failed' }
            : { next_at: r.nextAt }),
      }))
      .where('id', '=', r.deliveryId)
      .where('state', '=', 'pending')
      .execute();
  }
  const rows = results.map((r) => ({
    delivery_id: r.deliveryId,
    webhook_id: webhookId,
    at: r.at,
    status_code: r.status,
    latency_ms: r.latencyMs,
    success: r.success ? 1 : 0,
    error: r.error,
  }));
  for (const part of chunks(rows, CHUNK)) await trx.insertInto('webhook_attempts').values(part).execute();
}

/** Records the endpoint's health after a batch: a success clears `failing_since`, a failure starts it. */
export async function setFailing(trx: Kysely<DB>, webhookId: number, since: number | null): Promise<void> {
  let q = trx.updateTable('webhooks').set({ failing_since: since }).where('id', '=', webhookId);
  q = since === null ? q.where('failing_since', 'is not', null) : q.where('failing_since', 'is', null);
  await q.execute();
}

/** Disables an endpoint that kept failing; true when this call did (only once). */
export async function disableFailing(
  trx: Kysely<DB>,
  p: { id: number; now: number; before: number; reason: string },
): Promise<boolean> {
  const r = await trx
    .updateTable('webhooks')
    .set({ enabled: 0, disabled_reason: p.reason, updated_at: p.now })
    .where('id', '=', p.id)
    .where('enabled', '=', 1)
    .where('failing_since', '<=', p.before)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export function userEmail(db: Kysely<DB>, userId: number) {
  return db.selectFrom('users').select('email').where('id', '=', userId).executeTakeFirst();
}

/** Deletes events, and finished deliveries, older than `before`. */
export async function pruneOld(db: Kysely<DB>, before: number): Promise<void> {
  await db.deleteFrom('events').where('created_at', '<', before).execute();
  await db
    .deleteFrom('webhook_deliveries')
    .where('created_at', '<', before)
    .where('state', '<>', 'pending')
    .execute();
}

/** Counts pending deliveries (tests, the bench). */
export async function countPending(db: Kysely<DB>): Promise<number> {
  const r = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('state', '=', 'pending')
    .executeTakeFirstOrThrow();
  return Number(r.n);
}
