// Queries of the 2FA module. Every racy write is decided by the database: conditional UPDATEs
// (… WHERE used_at IS NULL, … WHERE fail_count < max) and unique indexes, never read-then-write.
import type { Insertable, Kysely, Selectable } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { UsersTable } from '../../db/tables/foundation.js';
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

export type NewMethod = Omit<Insertable<TfaMethodsTable>, 'id'>;

export function insertMethod(db: Kysely<DB>, values: NewMethod): Promise<TfaMethod> {
  return db.insertInto('tfa_methods').values(values).returningAll().executeTakeFirstOrThrow();
}

/** Soft-deletes a live method; false when it was already gone (another request removed it). */
export async function softDeleteMethod(db: Kysely<DB>, id: number, now: number): Promise<boolean> {
  const r = await db
    .updateTable('tfa_methods')
    .set({ deleted_at: now, is_primary: 0 })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function setPrimary(db: Kysely<DB>, id: number): Promise<void> {
  await db.updateTable('tfa_methods').set({ is_primary: 1 }).where('id', '=', id).execute();
}

/** Clears the primary flag of every other method of the user (one primary per account). */
export async function clearOtherPrimaries(db: Kysely<DB>, userId: number, exceptId: number): Promise<void> {
  await db
    .updateTable('tfa_methods')
    .set({ is_primary: 0 })
    .where('user_id', '=', userId)
    .where('id', '!=', exceptId)
    .execute();
}

/** Updates a live method's label and/or primary flag; undefined when it is gone. */
export function updateMethodRow(
  db: Kysely<DB>,
  id: number,
  patch: { label?: string; is_primary?: number },
): Promise<TfaMethod | undefined> {
  return db
    .updateTable('tfa_methods')
    .set(patch)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** Sets the user's 2FA status; with `from`, only when the status is still that one. */
export async function setTfaStatus(
  db: Kysely<DB>,
  userId: number,
  status: UsersTable['tfa_status'],
  from?: UsersTable['tfa_status'],
): Promise<void> {
  let q = db.updateTable('users').set({ tfa_status: status }).where('id', '=', userId);
  if (from !== undefined) q = q.where('tfa_status', '=', from);
  await q.execute();
}

/** Spends a TOTP step, atomically: false when this step (or a later one) was already accepted. */
export async function spendTotpStep(db: Kysely<DB>, methodId: number, step: number): Promise<boolean> {
  const r = await db
    .updateTable('tfa_methods')
    .set({ last_totp_step: step })
    .where('id', '=', methodId)
    .where((eb) => eb.or([eb('last_totp_step', 'is', null), eb('last_totp_step', '<', step)]))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Counts one try of a live challenge below its maximum; undefined when none is left. */
export function tryChallenge(db: Kysely<DB>, id: number, now: number, maxTries: number) {
  return db
    .updateTable('tfa_challenges')
    .set((eb) => ({ tries: eb('tries', '+', 1) }))
    .where('id', '=', id)
    .where('consumed_at', 'is', null)
    .where('expires_at', '>', now)
    .where('tries', '<', maxTries)
    .returning(['tries', 'code_hmac', 'provider_ref', 'phone_number'])
    .executeTakeFirst();
}

/**
 * Starts a fresh failure count when the method's lock has expired (or the count is at the maximum
 * without a lock); idempotent, so concurrent callers agree.
 */
export async function resetExpiredLock(
  db: Kysely<DB>,
  methodId: number,
  now: number,
  max: number,
): Promise<void> {
  await db
    .updateTable('tfa_methods')
    .set({ fail_count: 0, locked_until: null })
    .where('id', '=', methodId)
    .where((eb) =>
      eb.or([
        eb('locked_until', '<=', now),
        eb.and([eb('locked_until', 'is', null), eb('fail_count', '>=', max)]),
      ]),
    )
    .execute();
}

/**
 * Claims one attempt against an unlocked method below the maximum, setting the lock on the last
 * one; undefined when the method is locked (the conditional UPDATE decides between concurrent claims).
 */
export function claimMethodAttempt(
  db: Kysely<DB>,
  methodId: number,
  now: number,
  max: number,
  lockMs: number,
) {
  return db
    .updateTable('tfa_methods')
    .set((eb) => ({
      fail_count: eb('fail_count', '+', 1),
      locked_until: eb
        .case()
        .when('fail_count', '>=', max - 1)
        .then(now + lockMs)
        .else(null)
        .end(),
    }))
    .where('id', '=', methodId)
    .where('locked_until', 'is', null)
    .where('fail_count', '<', max)
    .returning(['fail_count', 'locked_until'])
    .executeTakeFirst();
}

export function methodLockState(db: Kysely<DB>, methodId: number) {
  return db
    .selectFrom('tfa_methods')
    .select(['fail_count', 'locked_until'])
    .where('id', '=', methodId)
    .executeTakeFirst();
}

/** A successful use: the failure count and lock cleared, last use stamped. */
export async function markMethodUsed(db: Kysely<DB>, methodId: number, now: number): Promise<void> {
  await db
    .updateTable('tfa_methods')
    .set({ fail_count: 0, locked_until: null, last_used: now })
    .where('id', '=', methodId)
    .execute();
}

/** Puts a fresh e-mail code on a live challenge; false when it was consumed meanwhile. */
export async function armEmailChallenge(
  db: Kysely<DB>,
  id: number,
  codeHmac: string,
  now: number,
  ttlMs: number,
): Promise<boolean> {
  const r = await db
    .updateTable('tfa_challenges')
    .set({
      method: 'email',
      tfa_method_id: null,
      phone_number: null,
      provider_ref: null,
      code_hmac: codeHmac,
      sent_at: now,
      expires_at: now + ttlMs,
    })
    .where('id', '=', id)
    .where('consumed_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Puts a fresh SMS code on a live challenge; false when it was consumed meanwhile. */
export async function armSmsChallenge(
  db: Kysely<DB>,
  id: number,
  c: { tfaMethodId: number | null; phone: string; codeHmac: string | null; now: number; ttlMs: number },
): Promise<boolean> {
  const r = await db
    .updateTable('tfa_challenges')
    .set({
      method: 'sms',
      tfa_method_id: c.tfaMethodId,
      phone_number: c.phone,
      code_hmac: c.codeHmac,
      provider_ref: null,
      sent_at: c.now,
      expires_at: c.now + c.ttlMs,
    })
    .where('id', '=', id)
    .where('consumed_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** The latest live SMS challenge of the user to this number for this purpose. */
export async function latestLiveSmsChallenge(
  db: Kysely<DB>,
  q: { userId: number; phone: string; purpose: ChallengePurpose; now: number },
): Promise<Challenge | null> {
  return (
    (await db
      .selectFrom('tfa_challenges')
      .selectAll()
      .where('user_id', '=', q.userId)
      .where('method', '=', 'sms')
      .where('phone_number', '=', q.phone)
      .where('purpose', '=', q.purpose)
      .where('consumed_at', 'is', null)
      .where('expires_at', '>', q.now)
      .orderBy('id', 'desc')
      .executeTakeFirst()) ?? null
  );
}

export async function setProviderRef(db: Kysely<DB>, id: number, ref: string): Promise<void> {
  await db.updateTable('tfa_challenges').set({ provider_ref: ref }).where('id', '=', id).execute();
}

/** Takes the sent code off a challenge (not delivered), leaving the challenge itself live. */
export async function clearChallengeCode(db: Kysely<DB>, id: number): Promise<void> {
  await db
    .updateTable('tfa_challenges')
    .set({ method: null, code_hmac: null, provider_ref: null, sent_at: null })
    .where('id', '=', id)
    .execute();
}
