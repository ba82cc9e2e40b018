// Every SQL statement of the api-keys module. A key is one row; only its SHA-256 is stored.
import type { Kysely, Selectable } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { ApiKeysTable } from '../../db/tables/foundation.js';

export type ApiKeyRow = Selectable<ApiKeysTable>;

/** The caller's live account keys (not instance keys), oldest first. */
export function listLiveKeys(db: Kysely<DB>, userId: number): Promise<ApiKeyRow[]> {
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('user_id', '=', userId)
    .where('kind', '=', 'user')
    .where('revoked_at', 'is', null)
    .orderBy('id')
    .execute();
}

/** One live account key of the caller, or undefined. */
export function findLiveKey(db: Kysely<DB>, userId: number, id: number): Promise<ApiKeyRow | undefined> {
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('kind', '=', 'user')
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
}

/** A key by id, whatever its state (the row just inserted). */
export function findKeyById(db: Kysely<DB>, id: number): Promise<ApiKeyRow> {
  return db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** Revokes one live key of the caller; the conditional update decides a race. Rows changed. */
export async function revokeLiveKey(
  db: Kysely<DB>,
  userId: number,
  id: number,
  now: number,
): Promise<number> {
  const res = await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('kind', '=', 'user')
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}
