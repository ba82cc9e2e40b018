import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
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
