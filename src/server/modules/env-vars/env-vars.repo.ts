// Every SQL statement of the env-vars module. (user_id, name) is unique (a database index): of
// two creates of one name exactly one inserts. Updates and deletes name the owner and the name in
// the statement itself, so a missing variable is a row count of 0, never a read-then-write.
import type { Insertable, Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { SqlDialect } from '../../db/dialect.js';
import type { EnvVarsTable } from '../../db/tables/env-vars.js';

/** Advisory-lock namespace of an account's variables ('envv' as a 32-bit integer). */
const LOCK_NS = 0x656e7676;

/**
 * Serialises the rest of the transaction against every other create of the same account's
 * variables, so the count that follows can't be raced past the per-account limit.
 */
export function lockAccount(db: Kysely<DB>, dialect: SqlDialect, userId: number): Promise<void> {
  return dialect.lockKeys(db, LOCK_NS, [userId]);
}

export async function countOf(db: Kysely<DB>, userId: number): Promise<number> {
  const r = await db
    .selectFrom('env_vars')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export async function exists(db: Kysely<DB>, userId: number, name: string): Promise<boolean> {
  const r = await db
    .selectFrom('env_vars')
    .select('id')
    .where('user_id', '=', userId)
    .where('name', '=', name)
    .executeTakeFirst();
  return r !== undefined;
}

export async function insertEnvVar(db: Kysely<DB>, values: Insertable<EnvVarsTable>): Promise<void> {
  await db.insertInto('env_vars').values(values).execute();
}

/** The account's variables, encrypted, by name. */
export function envVarsOf(db: Kysely<DB>, userId: number): Promise<{ name: string; value_enc: string }[]> {
  return db
    .selectFrom('env_vars')
    .select(['name', 'value_enc'])
    .where('user_id', '=', userId)
    .orderBy('name')
    .execute();
}

/** Replaces the value of the account's variable; false when it has none of that name. */
export async function updateEnvVar(
  db: Kysely<DB>,
  userId: number,
  name: string,
  valueEnc: string,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('env_vars')
    .set({ value_enc: valueEnc, updated_at: now })
    .where('user_id', '=', userId)
    .where('name', '=', name)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Deletes the account's variable; false when it has none of that name. */
export async function deleteEnvVar(db: Kysely<DB>, userId: number, name: string): Promise<boolean> {
  const r = await db
    .deleteFrom('env_vars')
    .where('user_id', '=', userId)
    .where('name', '=', name)
    .executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export async function insertInstanceEnv(db: Kysely<DB>, instanceId: number, envEnc: string): Promise<void> {
  await db.insertInto('instance_account_env').values({ instance_id: instanceId, env_enc: envEnc }).execute();
}

export async function deleteInstanceEnv(db: Kysely<DB>, instanceId: number): Promise<void> {
  await db.deleteFrom('instance_account_env').where('instance_id', '=', instanceId).execute();
}
