// Queries of the 2FA module. Every racy write is decided by the database: conditional UPDATEs
// (… WHERE used_at IS NULL, … WHERE fail_count < max) and unique indexes, never read-then-write.
import type { Kysely, Selectable } from 'kysely';
import type { DB } from '../../db/schema.js';
import type {
  ChallengePurpose,
  TfaChallengesTable,
  TfaMethodsTable,
  AuthEventsTable,
} from '../../db/tables/two-factor.js';

export type TfaMethod = Selectable<TfaMethodsTable>;
export type Challenge = Selectable<TfaChallengesTable>;

export function activeMethods(db: Kysely<DB>, userId: number): Promise<TfaMethod[]> {
  return db
    .selectFrom('tfa_methods')
    .selectAll()
    .where('user_id', '=', userId)
    .where('deleted_at', 'is', null)
    .orderBy('id')
    .execute();
}

export async function countAllMethodRows(db: Kysely<DB>, userId: number): Promise<number> {
  const r = await db
    .selectFrom('tfa_methods')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export function findActiveMethod(db: Kysely<DB>, userId: number, id: number): Promise<TfaMethod | undefined> {
  return db
    .selectFrom('tfa_methods')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/**
 * Takes the user's row lock for the rest of the transaction (a no-op update: PostgreSQL locks the
 * row, SQLite's BEGIN IMMEDIATE already serialises writers). Used where a decision depends on a
 * count of the user's rows (the last method, the first method, SMS rate limits).
 */
export async function lockUser(db: Kysely<DB>, userId: number): Promise<void> {
  await db
    .updateTable('users')
    .set((eb) => ({ tfa_status: eb.ref('tfa_status') }))
    .where('id', '=', userId)
    .execute();
}

export function findChallenge(db: Kysely<DB>, secretHash: string): Promise<Challenge | undefined> {
  return db.selectFrom('tfa_challenges').selectAll().where('secret_hash', '=', secretHash).executeTakeFirst();
}

export async function insertChallenge(
  db: Kysely<DB>,
  c: {
    userId: number;
    secretHash: string;
    purpose: ChallengePurpose;
    method: Challenge['method'];
    tfaMethodId: number | null;
    phone: string | null;
    now: number;
    ttlMs: number;
  },
): Promise<Challenge> {
  return db
    .insertInto('tfa_challenges')
    .values({
      user_id: c.userId,
      secret_hash: c.secretHash,
      purpose: c.purpose,
      method: c.method,
      tfa_method_id: c.tfaMethodId,
      phone_number: c.phone,
      code_hmac: null,
      provider_ref: null,
      tries: 0,
      created_at: c.now,
      sent_at: null,
      expires_at: c.now + c.ttlMs,
      consumed_at: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Consumes a challenge exactly once; false when another request got there first. */
export async function consumeChallenge(db: Kysely<DB>, id: number, now: number): Promise<boolean> {
  const r = await db
    .updateTable('tfa_challenges')
    .set({ consumed_at: now })
    .where('id', '=', id)
    .where('consumed_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function countUnusedBackupCodes(db: Kysely<DB>, userId: number): Promise<number> {
  const r = await db
    .selectFrom('tfa_backup_codes')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Whether an unused, live backup code with this HMAC exists (a read; consumeBackupCode spends it). */
/** True when the code is one of the user's backup codes that was already used (a replay, not a guess). */
export async function isUsedBackupCode(db: Kysely<DB>, userId: number, codeHmac: string): Promise<boolean> {
  const r = await db
    .selectFrom('tfa_backup_codes')
    .select('id')
    .where('user_id', '=', userId)
    .where('code_hmac', '=', codeHmac)
    .where('used_at', 'is not', null)
    .executeTakeFirst();
  return r !== undefined;
}

export async function findUnusedBackupCode(
  db: Kysely<DB>,
  userId: number,
  codeHmac: string,
): Promise<boolean> {
  const r = await db
    .selectFrom('tfa_backup_codes')
    .select('id')
    .where('user_id', '=', userId)
    .where('code_hmac', '=', codeHmac)
    .where('used_at', 'is', null)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return r !== undefined;
}

/** Marks one backup code used, atomically: of 20 concurrent uses of one code, one wins. */
export async function consumeBackupCode(
  db: Kysely<DB>,
  userId: number,
  codeHmac: string,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('tfa_backup_codes')
    .set({ used_at: now })
    .where('user_id', '=', userId)
    .where('code_hmac', '=', codeHmac)
    .where('used_at', 'is', null)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) >= 1;
}

/** Soft-deletes every live code of the user (regeneration, or 2FA disabled). */
export async function softDeleteBackupCodes(db: Kysely<DB>, userId: number, now: number): Promise<void> {
  await db
    .updateTable('tfa_backup_codes')
    .set({ deleted_at: now })
    .where('user_id', '=', userId)
    .where('deleted_at', 'is', null)
    .execute();
}

export async function insertBackupCodes(
  db: Kysely<DB>,
  userId: number,
  hmacs: string[],
  now: number,
): Promise<void> {
  await db
    .insertInto('tfa_backup_codes')
    .values(
      hmacs.map((h) => ({ user_id: userId, code_hmac: h, created_at: now, used_at: null, deleted_at: null })),
    )
    .execute();
}

export async function authorizedUntil(db: Kysely<DB>, userId: number): Promise<number | null> {
  const r = await db
    .selectFrom('tfa_authorizations')
    .select('authorized_until')
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return r?.authorized_until ?? null;
}

export async function grantAuthorization(
  db: Kysely<DB>,
  userId: number,
  until: number,
  now: number,
): Promise<void> {
  await db
    .insertInto('tfa_authorizations')
    .values({ user_id: userId, authorized_until: until, created_at: now })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ authorized_until: until, created_at: now }))
    .execute();
}

export async function clearAuthorization(db: Kysely<DB>, userId: number): Promise<void> {
  await db.deleteFrom('tfa_authorizations').where('user_id', '=', userId).execute();
}

export interface AuthEvent {
  userId: number;
  kind: AuthEventsTable['kind'];
  action: string;
  method?: string | null;
  tfaMethodId?: number | null;
  ip?: string | null;
}

/** Records an auth event: the method type, never a code or a secret. */
export async function recordEvent(db: Kysely<DB>, now: number, e: AuthEvent): Promise<void> {
  await db
    .insertInto('auth_events')
    .values({
      user_id: e.userId,
      kind: e.kind,
      action: e.action,
      method: e.method ?? null,
      tfa_method_id: e.tfaMethodId ?? null,
      ip: e.ip ?? null,
      created_at: now,
    })
    .execute();
}

/**
 * Deletes what no rule reads any more: challenges a day past their expiry, and SMS send records
 * older than every abuse window. Cheap (indexed range deletes); run on each password login.
 */
export async function pruneExpired(db: Kysely<DB>, now: number, keepSmsMs: number): Promise<void> {
  await db
    .deleteFrom('tfa_challenges')
    .where('expires_at', '<', now - 86_400_000)
    .execute();
  await db
    .deleteFrom('sms_sends')
    .where('created_at', '<', now - keepSmsMs)
    .execute();
}
