import type { Insertable, Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { SessionsTable } from '../../db/tables/foundation.js';
import type { User } from '../../http/auth.js';

export function findUserByEmail(db: Kysely<DB>, email: string): Promise<User | undefined> {
  return db
    .selectFrom('users')
    .selectAll()
    .where('email', '=', email.trim().toLowerCase())
    .executeTakeFirst();
}

export function findUserById(db: Kysely<DB>, id: number): Promise<User | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findOrCreateTeam(db: Kysely<DB>, name: string, now: number): Promise<number> {
  await db
    .insertInto('teams')
    .values({ name, created_at: now })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('teams').select('id').where('name', '=', name).executeTakeFirstOrThrow();
  return row.id;
}

export async function insertSession(db: Kysely<DB>, row: Insertable<SessionsTable>): Promise<number> {
  const r = await db.insertInto('sessions').values(row).returning('id').executeTakeFirstOrThrow();
  return r.id;
}

/** Ends one session of the user; false when it was already over. */
export async function revokeSession(
  db: Kysely<DB>,
  userId: number,
  sessionId: number,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('sessions')
    .set({ revoked_at: now })
    .where('id', '=', sessionId)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Ends every live session of the user (both kinds); returns how many. */
export async function revokeUserSessions(db: Kysely<DB>, userId: number, now: number): Promise<number> {
  const r = await db
    .updateTable('sessions')
    .set({ revoked_at: now })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** Ends every session made through an API key (called in the key's revoking transaction). */
export async function revokeKeySessions(db: Kysely<DB>, apiKeyId: number, now: number): Promise<number> {
  const r = await db
    .updateTable('sessions')
    .set({ revoked_at: now })
    .where('api_key_id', '=', apiKeyId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}
