// Accounts: creating users (admin command, demo), password login.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { Deps } from '../../deps.types.js';
import { tx, isUniqueViolation } from '../../db/connection.js';
import { hashPassword, newToken, sha256Hex, verifyPassword } from '../../crypto.js';
import { API_KEY_PREFIX, type User } from '../../identity.js';
import { AccountErrors } from './accounts.errors.js';
import { assertNotLocked, recordSignInFailure } from './accounts.lockout.js';
import { findUserByEmail, revokeSession, revokeUserSessions } from './accounts.repo.js';
import { joinTeamByName } from '../teams/teams.setup.js';
import * as repo from './accounts.repo.js';
import type { AuthContext } from '../../identity.js';
import { allows } from '../../../contract/permissions.js';
import { listSshKeys } from '../ssh-keys/ssh-keys.service.js';
import { userView } from './accounts.view.js';
import { accountSettings } from './accounts.settings.js';
import { insertCredit } from '../billing/billing.service.js';

// Used by two-factor (a login's user) and api-keys (a revoked key's sessions) through this file,
// the module's public face.
export { findUserById, revokeKeySessions } from './accounts.repo.js';

// The demo's account and the keys it replaces (demo.ts).
export { findUserByEmail, revokeDemoKeys } from './accounts.repo.js';

export const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
export const E164_RE = /^\+[1-9]\d{6,14}$/;

export interface CreateUserInput {
  email: string;
  password?: string | null;
  /** A password hashed already (a sign-up's, kept with its link): used instead of `password`. */
  passwordHash?: string | null;
  fullName?: string;
  emailVerified?: boolean;
  admin?: boolean;
  phone?: string | null;
  legacyTfa?: boolean;
  team?: string | null;
  balanceUsd?: number;
  /** Made by another account with create subaccount: its parent, username and kind. */
  parent?: { id: number; username: string; hostOnly: boolean } | null;
}

export interface CreatedUser {
  id: number;
  email: string;
  api_key: string;
  team_api_key?: string;
}

/** Inserts an account key for a user (hash only) and returns the key, shown once. */
export async function insertApiKey(
  db: Kysely<DB>,
  p: {
    userId: number;
    teamId: number | null;
    name: string;
    permissions: string | null;
    /** The permissions as the creator gave them, shown back by the listing. */
    permissionsGiven?: string | null;
    now: number;
  },
): Promise<{ id: number; key: string }> {
  const key = newToken(API_KEY_PREFIX);
  const id = await repo.insertApiKeyRow(db, {
    user_id: p.userId,
    team_id: p.teamId,
    kind: 'user',
    instance_id: null,
    name: p.name,
    key_hash: sha256Hex(key),
    key_prefix: key.slice(0, 10),
    permissions: p.permissions,
    permissions_given: p.permissionsGiven ?? null,
    created_at: p.now,
  });
  return { id, key };
}

export async function createUser(
  deps: Pick<Deps, 'store' | 'clock'>,
  input: CreateUserInput,
): Promise<CreatedUser> {
  const email = input.email.trim().toLowerCase();
  if (!EMAIL_RE.test(email)) throw AccountErrors.badEmail();
  if (input.phone && !E164_RE.test(input.phone)) throw AccountErrors.badPhone();
  if (input.legacyTfa && !input.phone)
    throw AccountErrors.badPhone('--legacy-tfa needs --phone: legacy 2FA sends codes to the number on file');
  // Hash outside the transaction: it is slow on purpose and must not hold the write lock.
  const passwordHash = input.passwordHash ?? (input.password ? await hashPassword(input.password) : null);
  const now = deps.clock.now();
  const startingMicros = Math.round((input.balanceUsd ?? 0) * 1_000_000);
  try {
    return await tx(deps.store, async (db) => {
      const user = await repo.insertUser(db, {
        email,
        full_name: input.fullName ?? '',
        password_hash: passwordHash,
        email_verified_at: input.emailVerified ? now : null,
        tfa_status: input.legacyTfa ? 'legacy' : 'disabled',
        phone_number: input.phone ?? null,
        is_admin: input.admin ? 1 : 0,
        sms_fraud: 0,
        balance_micros: startingMicros,
        created_at: now,
      });
      // A starting balance is the account's first credit: the ledger accounts for every dollar.
      if (startingMicros > 0) await insertCredit(db, user.id, startingMicros, now);
      if (input.parent)
        await repo.insertSubaccount(db, {
          user_id: user.id,
          parent_id: input.parent.id,
          username: input.parent.username,
          host_only: input.parent.hostOnly ? 1 : 0,
          created_at: now,
        });
      const personal = await insertApiKey(db, {
        userId: user.id,
        teamId: null,
        name: 'default',
        permissions: null,
        now,
      });
      const out: CreatedUser = { id: user.id, email, api_key: personal.key };
      if (input.team) {
        // A new team is made whole (its account, roles, the user its owner); an existing one
        // takes the user as a member.
        const teamId = await joinTeamByName(db, input.team, user.id, now);
        out.team_api_key = (
          await insertApiKey(db, {
            userId: user.id,
            teamId,
            name: `team:${input.team}`,
            permissions: null,
            now,
          })
        ).key;
      }
      return out;
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw AccountErrors.emailTaken();
    throw err;
  }
}

/**
 * Checks e-mail and password; the same error whether or not the e-mail exists. A locked account
 * is refused before the password is looked at (accounts.lockout.ts); a wrong password counts
 * toward the lock, and a right one is held against the lock again once checked, so that of
 * concurrent guesses at most the lock's limit learn their answer. A right one does not clear the
 * count: the sign-in may still need a second factor, and only a completed sign-in clears it.
 */
export async function checkPassword(
  deps: Pick<Deps, 'db' | 'store' | 'clock' | 'config' | 'kickOutbox'>,
  email: string,
  password: string,
): Promise<User> {
  await assertNotLocked(deps, email);
  const user = await findUserByEmail(deps.db, email);
  const ok = await verifyPassword(user?.password_hash ?? null, password);
  if (!user || !ok) {
    await recordSignInFailure(deps, email);
    throw AccountErrors.badLogin();
  }
  await assertNotLocked(deps, email);
  return user;
}

export async function setSmsFraud(
  deps: Pick<Deps, 'db'>,
  email: string,
  flag: boolean,
): Promise<{ id: number; sms_fraud: boolean }> {
  const row = await repo.setSmsFraud(deps.db, email.trim().toLowerCase(), flag);
  if (!row) throw new Error(`no user with e-mail ${email}`);
  return { id: row.id, sms_fraud: row.sms_fraud === 1 };
}

/**
 * Ends the session the caller presented (a `session_key` Bearer or the session cookie). An API
 * key is not a session: logging out with one is a 400 (revoke the key instead).
 */
export async function logout(deps: Pick<Deps, 'db' | 'clock'>, auth: AuthContext): Promise<void> {
  if (auth.sessionId === null) throw AccountErrors.notASession();
  await revokeSession(deps.db, auth.user.id, auth.sessionId, deps.clock.now());
}

/** Ends every session of the caller's account, CLI and browser alike; API keys stay valid. */
export async function logoutEverywhere(deps: Pick<Deps, 'db' | 'clock'>, auth: AuthContext): Promise<number> {
  return revokeUserSessions(deps.db, auth.user.id, deps.clock.now());
}

/**
 * GET /users/current: the user object, plus `ssh_key` (the account's oldest SSH public key, null
 * when it has none; left out for a key that may not read SSH keys) and `api_key`, the key the
 * caller presented (the official CLI removes it before printing and fails when it is missing).
 * For a browser's cookie session `api_key` is empty: the cookie is HttpOnly so that no script can
 * read it, and a body that echoed it would undo that.
 */
export async function currentUser(deps: Deps, auth: AuthContext) {
  const view = userView(auth.user, { teamId: auth.teamId });
  const ssh = allows(auth.permissions, 'ssh_keys', 'read')
    ? { ssh_key: (await listSshKeys(deps, auth.user.id))[0]?.ssh_key ?? null }
    : {};
  const settings = await accountSettings(deps.db, auth.user.id);
  return {
    ...view,
    ...settings,
    ...ssh,
    credit_help: deps.config.accounts.creditHelp,
    api_key: auth.via === 'cookie' ? '' : auth.credential,
  };
}
