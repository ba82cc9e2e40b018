// Every SQL statement of the SSH keys module. The account's keys are the rows without an
// instance_id; a row with one is a key attached to that instance only.
import type { Insertable, Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { SshKeysTable } from '../../db/tables/foundation.js';

/** A live account key of the user with this fingerprint. */
export function findAccountKey(db: Kysely<DB>, userId: number, fingerprint: string) {
  return db
    .selectFrom('ssh_keys')
    .selectAll()
    .where('user_id', '=', userId)
    .where('fingerprint', '=', fingerprint)
    .where('instance_id', 'is', null)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/** A live key attached to this instance only, with this fingerprint. */
export function findInstanceOnlyKey(db: Kysely<DB>, instanceId: number, fingerprint: string) {
  return db
    .selectFrom('ssh_keys')
    .selectAll()
    .where('instance_id', '=', instanceId)
    .where('fingerprint', '=', fingerprint)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

export function insertSshKey(db: Kysely<DB>, row: Insertable<SshKeysTable>) {
  return db.insertInto('ssh_keys').values(row).returningAll().executeTakeFirstOrThrow();
}

export function listAccountKeys(db: Kysely<DB>, userId: number) {
  return db
    .selectFrom('ssh_keys')
    .selectAll()
    .where('user_id', '=', userId)
    .where('instance_id', 'is', null)
    .where('deleted_at', 'is', null)
    .orderBy('id')
    .execute();
}

export function replaceAccountKey(
  db: Kysely<DB>,
  userId: number,
  id: number,
  key: { public_key: string; key_type: string; fingerprint: string; comment: string },
) {
  return db
    .updateTable('ssh_keys')
    .set(key)
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('instance_id', 'is', null)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** Soft-deletes an account key (it stops opening every instance it was given to). */
export async function deleteAccountKey(db: Kysely<DB>, userId: number, id: number, now: number) {
  const res = await db
    .updateTable('ssh_keys')
    .set({ deleted_at: now })
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('instance_id', 'is', null)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Soft-deletes a key that belonged to one instance only (after its detach). */
export async function deleteInstanceOnlyKey(db: Kysely<DB>, instanceId: number, id: number, now: number) {
  await db
    .updateTable('ssh_keys')
    .set({ deleted_at: now })
    .where('id', '=', id)
    .where('instance_id', '=', instanceId)
    .where('deleted_at', 'is', null)
    .execute();
}
