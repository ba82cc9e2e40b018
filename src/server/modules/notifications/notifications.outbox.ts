// Enqueueing into the transactional e-mail outbox. Call it with the same
// transaction that makes the change the e-mail is about: both commit or neither does. The relay
// (jobs/outbox-relay) delivers what is due. The idempotency key is unique: enqueueing the same
// e-mail twice (a retried request) stores it once.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import { insertOutboxRows } from './notifications.repo.js';
import { chunks } from '../../db/chunks.js';

export interface EmailMessage {
  /** Unique per logical e-mail, e.g. `maint:42:client:7`. */
  key: string;
  to: string;
  subject: string;
  text: string;
  html?: string | null;
  category: string;
}

export async function enqueueEmails(db: Kysely<DB>, now: number, messages: EmailMessage[]): Promise<number> {
  if (messages.length === 0) return 0;
  let inserted = 0;
  // 200 messages of nine columns to a statement keep it under SQLite's parameter limit.
  for (const part of chunks(messages, 200)) {
    const rows = part.map((m) => ({
      idempotency_key: m.key,
      to_addr: m.to,
      subject: m.subject,
      text_body: m.text,
      html_body: m.html ?? null,
      category: m.category,
      created_at: now,
      available_at: now,
      attempts: 0,
    }));
    inserted += await insertOutboxRows(db, rows);
  }
  return inserted;
}

export function enqueueEmail(db: Kysely<DB>, now: number, m: EmailMessage): Promise<number> {
  return enqueueEmails(db, now, [m]);
}
