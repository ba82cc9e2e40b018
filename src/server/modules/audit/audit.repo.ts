// Every SQL statement of the audit module: audit rows, login addresses, and their retention.
import { sql, type Insertable, type Kysely, type Selectable } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { AuditLogsTable, UserIpaddrsTable } from '../../db/tables/audit.js';

export type AuditRow = Selectable<AuditLogsTable>;
export type AddressRow = Selectable<UserIpaddrsTable>;

export async function insertAuditRows(db: Kysely<DB>, rows: Insertable<AuditLogsTable>[]): Promise<void> {
  await db.insertInto('audit_logs').values(rows).execute();
}

/** A user's rows, newest first (ties: the later insert first). */
export function listAuditRows(db: Kysely<DB>, userId: number, limit: number): Promise<AuditRow[]> {
  return db
    .selectFrom('audit_logs')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

export interface AddressUse {
  userId: number;
  ip: string;
  first: number;
  last: number;
}

/**
 * Writes address uses: one row per (user, address), made or widened by an upsert on the unique
 * (user_id, ip) index, so concurrent writers (other processes, other nodes) never make a second
 * row and never move first_seen later or last_seen earlier. Each pair at most once per call
 * (PostgreSQL refuses an upsert that meets one row twice), in (user_id, ip) order, so two
 * concurrent calls lock shared rows in the same order and cannot deadlock.
 */
export async function upsertAddresses(db: Kysely<DB>, uses: AddressUse[]): Promise<void> {
  if (uses.length === 0) return;
  const rows = [...uses]
    .sort((a, b) => a.userId - b.userId || (a.ip < b.ip ? -1 : a.ip > b.ip ? 1 : 0))
    .map((u) => ({ user_id: u.userId, ip: u.ip, first_seen: u.first, last_seen: u.last }));
  await db
    .insertInto('user_ipaddrs')
    .values(rows)
    .onConflict((oc) =>
      oc.columns(['user_id', 'ip']).doUpdateSet({
        first_seen: sql<number>`case when excluded.first_seen < user_ipaddrs.first_seen then excluded.first_seen else user_ipaddrs.first_seen end`,
        last_seen: sql<number>`case when excluded.last_seen > user_ipaddrs.last_seen then excluded.last_seen else user_ipaddrs.last_seen end`,
      }),
    )
    .execute();
}

/** A user's addresses, the most recently seen first. */
export function listAddresses(db: Kysely<DB>, userId: number, limit: number): Promise<AddressRow[]> {
  return db
    .selectFrom('user_ipaddrs')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('last_seen', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/**
 * Deletes up to `chunk` audit rows older than `before`; returns how many. A bounded statement
 * holds the write lock (SQLite) or row locks (PostgreSQL) briefly, however much is due.
 */
export async function deleteAuditRowsBefore(db: Kysely<DB>, before: number, chunk: number): Promise<number> {
  const r = await db
    .deleteFrom('audit_logs')
    .where('id', 'in', (eb) =>
      eb.selectFrom('audit_logs').select('id').where('created_at', '<', before).limit(chunk),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Deletes up to `chunk` addresses last seen before `before`; returns how many. */
export async function deleteAddressesBefore(db: Kysely<DB>, before: number, chunk: number): Promise<number> {
  const r = await db
    .deleteFrom('user_ipaddrs')
    .where('id', 'in', (eb) =>
      eb.selectFrom('user_ipaddrs').select('id').where('last_seen', '<', before).limit(chunk),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** The user a password login names (by e-mail, as sign-in finds it); undefined when none. */
export async function userIdByEmail(db: Kysely<DB>, email: string): Promise<number | undefined> {
  const r = await db
    .selectFrom('users')
    .select('id')
    .where('email', '=', email.trim().toLowerCase())
    .executeTakeFirst();
  return r?.id;
}

/** The user of a 2FA login challenge, by its secret's hash (spent or not); undefined when none. */
export async function userIdByLoginSecret(db: Kysely<DB>, secretHash: string): Promise<number | undefined> {
  const r = await db
    .selectFrom('tfa_challenges')
    .select('user_id')
    .where('secret_hash', '=', secretHash)
    .where('purpose', '=', 'login')
    .executeTakeFirst();
  return r?.user_id;
}
