// Recording events. Every code path that changes something an event reports calls recordEvents
// with its own transaction, after the change: the event and the deliveries it fans out to commit
// with the change or not at all, so nothing is sent for a change that rolled back and nothing is
// lost when the process dies after the commit (the dispatcher finds the deliveries in the table).
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import * as repo from './webhooks.repo.js';
import { enqueueEmails } from '../notifications/notifications.outbox.js';
import { balanceLowMail } from './webhooks.mail.js';
import { WEBHOOK_EVENT_TYPES } from '../../../contract/schemas/webhooks.js';

/** The event types: the contract's list, which the webhook and event feed schemas take. */
export const EVENT_TYPES = WEBHOOK_EVENT_TYPES;
export type EventType = (typeof EVENT_TYPES)[number];

/** The type of the test event `POST /webhooks/{id}/test/` sends (never in the feed). */
export const TEST_EVENT_TYPE = 'webhook.test';

export interface NewEvent {
  userId: number;
  type: EventType;
  /** What deliveries order by: events of one subject reach an endpoint in the order recorded. */
  subject: string;
  data: Record<string, unknown>;
}

export function newEventId(): string {
  return `evt_${randomBytes(15).toString('base64url')}`;
}

/** The JSON body of an event, in the feed and in every delivery (Standard Webhooks payload shape). */
export function eventBody(e: { id: string; type: string; created_at: number; data: unknown }): string {
  return JSON.stringify({
    id: e.id,
    type: e.type,
    timestamp: new Date(e.created_at).toISOString(),
    created_at: e.created_at / 1000,
    data: e.data,
  });
}

/**
 * True when a webhook's filter takes `type`: an exact type, a prefix ending in `.*` or `.`
 * (`instance.*`), or `*` for everything.
 */
export function filterMatches(filter: readonly string[], type: string): boolean {
  for (const f of filter) {
    if (f === '*' || f === type) return true;
    if (f.endsWith('.*') && type.startsWith(f.slice(0, -1))) return true;
    if (f.endsWith('.') && type.startsWith(f)) return true;
  }
  return false;
}

/**
 * Writes `events` in the caller's transaction: numbered per user in commit order, and one pending
 * delivery for each enabled webhook of the user whose filter takes the type. Call it with the
 * transaction that made the change, after the change.
 */
export async function recordEvents(trx: Kysely<DB>, now: number, events: NewEvent[]): Promise<string[]> {
  if (events.length === 0) return [];
  const byUser = new Map<number, NewEvent[]>();
  for (const e of events) {
    const list = byUser.get(e.userId) ?? [];
    list.push(e);
    byUser.set(e.userId, list);
  }
  // Users in ascending order: two transactions numbering the same users lock their counters in
  // the same order (no deadlock between them on PostgreSQL). A fixed number of statements
  // whatever the number of users: one maintenance batch numbers events for a thousand clients.
  const users = [...byUser.keys()].sort((a, b) => a - b);
  const last = await repo.bumpEventCounters(
    trx,
    users.map((userId) => ({ userId, n: byUser.get(userId)!.length })),
  );
  const rows = users.flatMap((userId) => {
    const list = byUser.get(userId)!;
    const top = last.get(userId)!;
    return list.map((e, i) => ({
      row: {
        public_id: newEventId(),
        user_id: userId,
        seq: top - list.length + 1 + i,
        type: e.type,
        subject: e.subject,
        created_at: now,
        data: JSON.stringify(e.data),
      },
      data: e.data,
    }));
  });
  await repo.insertEvents(
    trx,
    rows.map((r) => r.row),
  );
  const hooks = await repo.enabledWebhooksOf(trx, users);
  if (hooks.length > 0) {
    const hooksOf = new Map<number, { id: number; filter: string[] }[]>();
    for (const h of hooks) {
      const list = hooksOf.get(h.user_id) ?? [];
      list.push({ id: h.id, filter: JSON.parse(h.events) as string[] });
      hooksOf.set(h.user_id, list);
    }
    const deliveries = [];
    for (const { row: r, data } of rows) {
      for (const h of hooksOf.get(r.user_id) ?? []) {
        if (!filterMatches(h.filter, r.type)) continue;
        deliveries.push({
          webhook_id: h.id,
          user_id: r.user_id,
          msg_id: r.public_id,
          event_type: r.type,
          subject: r.subject,
          body: eventBody({ id: r.public_id, type: r.type, created_at: now, data }),
          created_at: now,
          state: 'pending',
          next_at: now,
          attempts: 0,
        });
      }
    }
    await repo.insertDeliveries(trx, deliveries);
  }
  return rows.map((r) => r.row.public_id);
}

export function recordEvent(trx: Kysely<DB>, now: number, e: NewEvent): Promise<string[]> {
  return recordEvents(trx, now, [e]);
}

/**
 * balance.low for the users among `userIds` whose balance just fell to their threshold or below
 * (once per crossing), as an event and an e-mail to the account. Call it in the transaction that
 * changed their balances: the e-mail is queued in it, so it goes exactly when the event is kept.
 */
export async function recordBalanceLow(trx: Kysely<DB>, now: number, userIds: number[]): Promise<void> {
  const crossed = await repo.balanceAlertsCrossed(trx, userIds);
  await enqueueEmails(
    trx,
    now,
    crossed.map((c) => ({
      key: `balance.low:${c.user_id}:${now}`,
      to: c.email,
      ...balanceLowMail(c.balance_micros / 1e6, c.threshold_micros / 1e6),
      category: 'balance.low',
    })),
  );
  await recordEvents(
    trx,
    now,
    crossed.map((c) => ({
      userId: c.user_id,
      type: 'balance.low' as const,
      subject: `balance:${c.user_id}`,
      data: { balance: c.balance_micros / 1e6, threshold: c.threshold_micros / 1e6 },
    })),
  );
}

/** tfa.* events, to the account's owner (the method's kind and id, never a secret or code). */
export function tfaEvent(
  userId: number,
  type: 'tfa.enabled' | 'tfa.disabled' | 'tfa.method_added' | 'tfa.locked',
  data: Record<string, unknown> = {},
): NewEvent {
  return { userId, type, subject: `tfa:${userId}`, data };
}

/** api_key.created / api_key.revoked, to the key's owner (never the key itself). */
export function apiKeyEvent(
  userId: number,
  keyId: number,
  type: 'api_key.created' | 'api_key.revoked',
  name?: string,
): NewEvent {
  return {
    userId,
    type,
    subject: `api_key:${keyId}`,
    data: { api_key_id: keyId, ...(name !== undefined ? { name } : {}) },
  };
}

/** machine.online / machine.offline, to the machine's host. */
export function machineEvent(hostId: number, machineId: number, to: 'online' | 'offline'): NewEvent {
  return {
    userId: hostId,
    type: to === 'online' ? 'machine.online' : 'machine.offline',
    subject: `machine:${machineId}`,
    data: { machine_id: machineId, old_state: to === 'online' ? 'offline' : 'online', new_state: to },
  };
}

/** The instance event of a move from `from` to `to` (`null` is provisioning). */
export function instanceEvent(
  row: { id: number; user_id: number; machine_id: number },
  from: string | null,
  to: string | null,
  extra: { intended_status?: string; status_msg?: string } = {},
): NewEvent {
  const type = `instance.${to ?? 'provisioning'}` as EventType;
  return {
    userId: row.user_id,
    type,
    subject: `instance:${row.id}`,
    data: {
      instance_id: row.id,
      machine_id: row.machine_id,
      old_state: from,
      new_state: to,
      ...(extra.intended_status !== undefined ? { intended_status: extra.intended_status } : {}),
      status_msg: extra.status_msg ?? '',
    },
  };
}
