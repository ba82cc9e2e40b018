// Every SQL statement of single sign-on: the started sign-ins (state) and the provider identities.
// Team membership is the teams module's (sso.teams.ts calls its service).
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';

export async function insertState(
  db: Kysely<DB>,
  p: { stateHash: string; provider: string; now: number; expiresAt: number },
): Promise<void> {
  await db
    .insertInto('sso_states')
    .values({ state_hash: p.stateHash, provider: p.provider, created_at: p.now, expires_at: p.expiresAt })
    .execute();
}

/**
 * Spends a state: true for exactly one caller, and only while it is unused, unexpired and of this
 * provider. The database decides between racing callbacks (a conditional UPDATE), so a state
 * replayed at once against two server processes still signs in once.
 */
export async function consumeState(
  db: Kysely<DB>,
  stateHash: string,
  provider: string,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('sso_states')
    .set({ used_at: now })
    .where('state_hash', '=', stateHash)
    .where('provider', '=', provider)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Expired states can no longer be spent, used or not: they go. */
export async function pruneStates(db: Kysely<DB>, now: number): Promise<void> {
  await db.deleteFrom('sso_states').where('expires_at', '<=', now).execute();
}

export async function identityUser(
  db: Kysely<DB>,
  provider: string,
  subject: string,
): Promise<number | null> {
  const row = await db
    .selectFrom('sso_identities')
    .select('user_id')
    .where('provider', '=', provider)
    .where('subject', '=', subject)
    .executeTakeFirst();
  return row ? Number(row.user_id) : null;
}

/** Links a subject to an account; a subject linked already (a racing first sign-in) stays as it is. */
export async function linkIdentity(
  db: Kysely<DB>,
  p: { provider: string; subject: string; userId: number; email: string; now: number },
): Promise<void> {
  await db
    .insertInto('sso_identities')
    .values({
      provider: p.provider,
      subject: p.subject,
      user_id: p.userId,
      email: p.email,
      created_at: p.now,
      last_login_at: p.now,
    })
    .onConflict((oc) => oc.columns(['provider', 'subject']).doNothing())
    .execute();
}

export async function touchIdentity(
  db: Kysely<DB>,
  p: { provider: string; subject: string; email: string; now: number },
): Promise<void> {
  await db
    .updateTable('sso_identities')
    .set({ email: p.email, last_login_at: p.now })
    .where('provider', '=', p.provider)
    .where('subject', '=', p.subject)
    .execute();
}
