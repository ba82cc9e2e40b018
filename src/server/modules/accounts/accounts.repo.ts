import type { Insertable, Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { ApiKeysTable, SessionsTable, UsersTable } from '../../db/tables/foundation.js';
import type { AccountProfilesTable } from '../../db/tables/account-profiles.js';
import type { User } from '../../identity.js';
import type { AccountTokensTable } from '../../db/tables/account-tokens.js';

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

/** The lockout row of an account (its lower-cased e-mail), if any failure was ever counted. */
export function findLockout(db: Kysely<DB>, subject: string) {
  return db.selectFrom('account_lockouts').selectAll().where('subject', '=', subject).executeTakeFirst();
}

/**
 * Counts one failure, atomically (an upsert): a count whose window has passed starts again at 1.
 * Only while the account is unlocked and its count is below `max`: a failure that finds the lock
 * set, or the count already full (concurrent failures got there first), is not counted and
 * undefined comes back. Returns the count and the lock level after it.
 */
export async function countLockoutFailure(
  db: Kysely<DB>,
  p: { subject: string; now: number; windowMs: number; max: number },
): Promise<{ failures: number; lock_level: number } | undefined> {
  const { subject, now } = p;
  const stale = now - p.windowMs;
  return db
    .insertInto('account_lockouts')
    .values({ subject, failures: 1, window_started_at: now, lock_level: 0, updated_at: now })
    .onConflict((oc) =>
      oc
        .column('subject')
        .doUpdateSet((eb) => ({
          failures: eb
            .case()
            .when('account_lockouts.window_started_at', '<=', stale)
            .then(1)
            .else(eb('account_lockouts.failures', '+', 1))
            .end(),
          window_started_at: eb
            .case()
            .when('account_lockouts.window_started_at', '<=', stale)
            .then(now)
            .else(eb.ref('account_lockouts.window_started_at'))
            .end(),
          updated_at: now,
        }))
        .where((eb) =>
          eb.and([
            eb.or([
              eb('account_lockouts.locked_until', 'is', null),
              eb('account_lockouts.locked_until', '<=', now),
            ]),
            eb.or([
              eb('account_lockouts.window_started_at', '<=', stale),
              eb('account_lockouts.failures', '<', p.max),
            ]),
          ]),
        ),
    )
    .returning(['failures', 'lock_level'])
    .executeTakeFirst();
}

/**
 * Locks the account when its count reached `threshold` at lock level `level`. Conditional, so of
 * concurrent failures that all saw the threshold exactly one sets the lock (and sends the e-mail).
 */
export async function lockAccount(
  db: Kysely<DB>,
  p: { subject: string; threshold: number; level: number; until: number; now: number },
): Promise<boolean> {
  const r = await db
    .updateTable('account_lockouts')
    .set((eb) => ({
      locked_until: p.until,
      lock_level: eb('lock_level', '+', 1),
      failures: 0,
      window_started_at: p.now,
      updated_at: p.now,
    }))
    .where('subject', '=', p.subject)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', p.now)]))
    .where('failures', '>=', p.threshold)
    .where('lock_level', '=', p.level)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** A completed login or verification clears the account's count and lock level. */
export async function clearLockout(db: Kysely<DB>, subject: string): Promise<void> {
  await db.deleteFrom('account_lockouts').where('subject', '=', subject).execute();
}

/** Revokes every account key of a demo account (the keys earlier demo starts printed). */
export async function revokeDemoKeys(db: Kysely<DB>, userId: number, now: number): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('user_id', '=', userId)
    .where('kind', '=', 'user')
    .where('revoked_at', 'is', null)
    .execute();
}

export async function insertApiKeyRow(db: Kysely<DB>, values: Insertable<ApiKeysTable>): Promise<number> {
  const r = await db.insertInto('api_keys').values(values).returning('id').executeTakeFirstOrThrow();
  return r.id;
}

export function insertUser(db: Kysely<DB>, values: Insertable<UsersTable>): Promise<{ id: number }> {
  return db.insertInto('users').values(values).returning('id').executeTakeFirstOrThrow();
}

/** Records `userId` as a subaccount of `parentId` (create subaccount). */
export async function insertSubaccount(
  db: Kysely<DB>,
  row: { user_id: number; parent_id: number; username: string; host_only: number; created_at: number },
): Promise<void> {
  await db.insertInto('subaccounts').values(row).execute();
}

/** The account that made `userId` a subaccount, or null when it is no one's. */
export async function parentOf(db: Kysely<DB>, userId: number): Promise<number | null> {
  const r = await db
    .selectFrom('subaccounts')
    .select('parent_id')
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return r ? Number(r.parent_id) : null;
}

/** Makes the user a member of the team; a member already is one. */
export async function addTeamMember(
  db: Kysely<DB>,
  teamId: number,
  userId: number,
  now: number,
): Promise<void> {
  await db
    .insertInto('team_members')
    .values({ team_id: teamId, user_id: userId, role: 'member', created_at: now })
    .onConflict((oc) => oc.columns(['team_id', 'user_id']).doNothing())
    .execute();
}

export function setSmsFraud(db: Kysely<DB>, email: string, flag: boolean) {
  return db
    .updateTable('users')
    .set({ sms_fraud: flag ? 1 : 0 })
    .where('email', '=', email)
    .returning(['id', 'sms_fraud'])
    .executeTakeFirst();
}

export async function setFullName(db: Kysely<DB>, userId: number, fullName: string): Promise<void> {
  await db.updateTable('users').set({ full_name: fullName }).where('id', '=', userId).execute();
}

/** The account's profile row and its balance alert's threshold, in one statement (null: none). */
export function accountSettingsRow(db: Kysely<DB>, userId: number) {
  return db
    .selectFrom('users as u')
    .leftJoin('account_profiles as p', 'p.user_id', 'u.id')
    .leftJoin('balance_alerts as a', 'a.user_id', 'u.id')
    .select([
      'p.billaddress_line1',
      'p.billaddress_line2',
      'p.billaddress_city',
      'p.billaddress_zip',
      'p.billaddress_country',
      'p.billaddress_taxinfo',
      'p.balance_threshold_micros',
      'a.threshold_micros as alert_micros',
    ])
    .where('u.id', '=', userId)
    .executeTakeFirst();
}

type ProfileFields = Partial<Omit<AccountProfilesTable, 'user_id' | 'updated_at'>>;

/** Writes the given profile fields (others keep their value; a new row has null for them). */
export async function upsertAccountProfile(
  db: Kysely<DB>,
  userId: number,
  fields: ProfileFields,
  now: number,
): Promise<void> {
  await db
    .insertInto('account_profiles')
    .values({ user_id: userId, ...fields, updated_at: now })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ ...fields, updated_at: now }))
    .execute();
}

// ---- single-use e-mailed links (accounts.tokens.ts) ----

export async function insertAccountToken(db: Kysely<DB>, row: Insertable<AccountTokensTable>): Promise<void> {
  await db.insertInto('account_tokens').values(row).execute();
}

export function findAccountToken(db: Kysely<DB>, selector: string, purpose: 'signup' | 'reset') {
  return db
    .selectFrom('account_tokens')
    .selectAll()
    .where('selector', '=', selector)
    .where('purpose', '=', purpose)
    .executeTakeFirst();
}

/**
 * Uses a token: true for the one caller whose conditional UPDATE set `used_at` (unused and
 * unexpired at that moment); every other concurrent or later caller gets false.
 */
export async function useAccountToken(db: Kysely<DB>, selector: string, now: number): Promise<boolean> {
  const r = await db
    .updateTable('account_tokens')
    .set({ used_at: now })
    .where('selector', '=', selector)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Ends the earlier unused links of an address for one purpose: only the newest one works. */
export async function retireAccountTokens(
  db: Kysely<DB>,
  email: string,
  purpose: 'signup' | 'reset',
  now: number,
): Promise<void> {
  await db
    .updateTable('account_tokens')
    .set({ used_at: now })
    .where('email', '=', email)
    .where('purpose', '=', purpose)
    .where('used_at', 'is', null)
    .execute();
}

/** Forgets links that expired a day ago or more. */
export async function deleteOldAccountTokens(db: Kysely<DB>, before: number): Promise<void> {
  await db.deleteFrom('account_tokens').where('expires_at', '<', before).execute();
}

export async function setPasswordHash(db: Kysely<DB>, userId: number, hash: string): Promise<void> {
  await db.updateTable('users').set({ password_hash: hash }).where('id', '=', userId).execute();
}

/** Ends every live session of the user but one (the caller's own, which stays signed in). */
export async function revokeOtherSessions(
  db: Kysely<DB>,
  userId: number,
  keep: number | null,
  now: number,
): Promise<void> {
  let q = db
    .updateTable('sessions')
    .set({ revoked_at: now })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null);
  if (keep !== null) q = q.where('id', '!=', keep);
  await q.execute();
}
