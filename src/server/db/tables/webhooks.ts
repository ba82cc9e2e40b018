// Table types of events and webhooks: the per-user event log, its sequence counters, the
// registered endpoints, and the delivery outbox with its attempt history.
import type { Generated } from 'kysely';

/**
 * One event, written in the transaction of the change it reports. `seq` numbers a user's events
 * in commit order (event_counters is bumped in the same transaction, so a later commit always
 * gets a larger number): the feed's `after` cursor never skips an event that committed late.
 */
export interface EventsTable {
  id: Generated<number>;
  /** The public id (`evt_…`), also the `webhook-id` of every delivery of the event. */
  public_id: string;
  user_id: number;
  seq: number;
  type: string;
  /** What the event orders by (`instance:42`): deliveries of one subject go out in order. */
  subject: string;
  created_at: number;
  /** JSON object. */
  data: string;
}

export interface EventCountersTable {
  user_id: number;
  seq: number;
}

/** A user's balance.low threshold; `armed` 1 until it fires, again once the balance is back above. */
export interface BalanceAlertsTable {
  user_id: number;
  threshold_micros: number;
  armed: number;
}

export interface WebhooksTable {
  id: Generated<number>;
  user_id: number;
  url: string;
  description: string;
  /** JSON list of event types and prefixes (`instance.*`, `*`). */
  events: string;
  enabled: number;
  /** The signing secret (`whsec_…`), AES-256-GCM sealed with the server key. */
  secret_enc: string;
  /** After a rotation: the previous secret, also signed with until `old_secret_until`. */
  old_secret_enc: string | null;
  old_secret_until: number | null;
  /** Set at the first failed attempt after a success; cleared by a success. */
  failing_since: number | null;
  disabled_reason: string | null;
  created_at: number;
  updated_at: number;
  /** The delivery lane's lease: one process at a time sends to an endpoint. */
  locked_by: string | null;
  locked_until: number | null;
}

export interface WebhookDeliveriesTable {
  id: Generated<number>;
  webhook_id: number;
  user_id: number;
  /** The event's public id: the same `webhook-id` on every attempt. */
  msg_id: string;
  event_type: string;
  subject: string;
  /** The exact body sent (JSON text). */
  body: string;
  created_at: number;
  /** pending | delivered | failed */
  state: string;
  next_at: number;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  last_latency_ms: number | null;
  last_attempt_at: number | null;
  delivered_at: number | null;
}

export interface WebhookAttemptsTable {
  id: Generated<number>;
  delivery_id: number;
  webhook_id: number;
  at: number;
  status_code: number | null;
  latency_ms: number;
  success: number;
  error: string | null;
}

export interface WebhookTables {
  events: EventsTable;
  event_counters: EventCountersTable;
  balance_alerts: BalanceAlertsTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
}
