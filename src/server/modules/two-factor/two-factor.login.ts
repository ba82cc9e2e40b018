// 2FA login. `beginTfaLogin` is the 2FA branch of `POST /api/v0/users/login/`:
// it creates the login challenge whose
// `tfa_secret` then authenticates the logged-out 2FA calls. `completeLogin` is POST tfa/ in the
// three credential flows (docs/api.md, "Two-factor authentication"):
// - CLI: Bearer API key in, `session_key` out (a `cli` session, then used as the Bearer);
// - logged-out UI: the login `secret` alone; the session is set by cookie, no session_key;
// - logged-in UI: not a login call (the table says "-"); a cookie caller is treated like the UI.
import type { Deps } from '../../deps.types.js';
import type { AuthContext, User } from '../../identity.js';
import { createSession, PASSWORD_LOGIN, type SessionOrigin } from '../accounts/accounts.sessions.js';
import { userView } from '../accounts/accounts.view.js';
import { findUserById, checkPassword } from '../accounts/accounts.service.js';
import { clearSignInFailures } from '../accounts/accounts.lockout.js';
import { tx } from '../../db/connection.js';
import { TfaErrors } from './two-factor.errors.js';
import {
  activeMethods,
  consumeChallenge,
  insertChallenge,
  pruneExpired,
  type Challenge,
} from './two-factor.repo.js';
import { newSecret } from './two-factor.send.js';
import { actOnVerified, liveChallenge, verifyFactor, type FactorInput } from './two-factor.verify.js';

export interface TfaLoginStart {
  tfa_secret: string;
  methods: { id: number; method: string; label: string; is_primary: boolean }[];
}

/**
 * POST /api/v0/users/login/: checks the password; an account with 2FA gets a login challenge, any
 * other a cookie session (its sign-in failures forgotten in the same transaction).
 */
export async function passwordLogin(
  deps: Deps,
  email: string,
  password: string,
): Promise<
  | { kind: 'tfa'; start: TfaLoginStart }
  | { kind: 'session'; user: User; session: { token: string; expiresAt: number } }
> {
  const user = await checkPassword(deps, email, password);
  if (user.tfa_status !== 'disabled') return { kind: 'tfa', start: await beginTfaLogin(deps, user) };
  const now = deps.clock.now();
  const s = await tx(deps.store, async (db) => {
    await clearSignInFailures(db, user.email);
    return createSession(db, {
      userId: user.id,
      teamId: null,
      kind: 'cookie',
      isAdmin: false,
      now,
      ttlS: deps.config.sessionTtlS,
      origin: PASSWORD_LOGIN,
    });
  });
  return { kind: 'session', user, session: { token: s.token, expiresAt: s.expiresAt } };
}

export async function beginTfaLogin(deps: Deps, user: User): Promise<TfaLoginStart> {
  const now = deps.clock.now();
  const s = newSecret();
  await insertChallenge(deps.db, {
    userId: user.id,
    secretHash: s.hash,
    purpose: 'login',
    method: null,
    tfaMethodId: null,
    phone: null,
    now,
    ttlMs: deps.config.tfa.challengeTtlS * 1000,
  });
  const methods = await activeMethods(deps.db, user.id);
  const sms = deps.config.sms;
  await pruneExpired(deps.db, now, Math.max(sms.windowS, sms.preauthPhoneWindowS) * 1000);
  return {
    tfa_secret: s.secret,
    methods: methods.map((m) => ({
      id: m.id,
      method: m.method,
      label: m.label,
      is_primary: m.is_primary === 1,
    })),
  };
}

/** Who is logging in: the Bearer's user, or the user of a login challenge (logged-out UI). */
export async function loginCaller(
  deps: Deps,
  auth: AuthContext | null,
  secret: string | undefined,
): Promise<{ user: User; login: Challenge | null }> {
  if (auth) {
    if (auth.teamId !== null) throw TfaErrors.teamForbidden();
    return { user: auth.user, login: null };
  }
  if (secret === undefined) throw TfaErrors.noCredential();
  const c = await liveChallenge(deps, null, secret, ['login', 'verify', 'authorize', 'setup']);
  // Only the secret of a password login stands in for a Bearer.
  if (c.purpose !== 'login') throw TfaErrors.authError();
  const user = await findUserById(deps.db, c.user_id);
  if (!user) throw TfaErrors.challengeNotFound();
  return { user, login: c };
}

export interface LoginResult {
  body: Record<string, unknown>;
  cookie: { token: string; expiresAt: number } | null;
}

export async function completeLogin(
  deps: Deps,
  auth: AuthContext | null,
  input: FactorInput & { admin?: boolean },
  ip: string | null,
): Promise<LoginResult> {
  const { user, login } = await loginCaller(deps, auth, input.secret);
  if (user.tfa_status === 'disabled')
    throw TfaErrors.loginFailed('2FA is not enabled on this account', { fail_count: 0, locked_until: null });
  const verification = await verifyFactor(deps, user, input, {
    action: 'login',
    purposes: login ? ['login'] : ['verify', 'login'],
    fail: TfaErrors.loginFailed,
    ip,
  });
  const now = deps.clock.now();
  const cli = auth !== null && auth.via !== 'cookie';
  // The code (and the login secret) are spent in the transaction that creates the session: a
  // crash or a lost race leaves either both or neither.
  const { verified, fresh, s } = await actOnVerified(deps, verification, async (db, done) => {
    // The login secret works once: whichever factor completed it, it is spent now. A code on the
    // login challenge already consumed it (verify.ts); a TOTP or backup code did not.
    if (login && done.challenge?.id !== login.id && !(await consumeChallenge(db, login.id, now)))
      throw TfaErrors.noChallenge();
    const row = (await findUserById(db, user.id)) ?? user;
    const session = await createSession(db, {
      userId: user.id,
      teamId: null,
      kind: cli ? 'cli' : 'cookie',
      // `admin: true` gives an admin session only to admins.
      isAdmin: input.admin === true && user.is_admin === 1,
      now,
      ttlS: deps.config.sessionTtlS,
      origin: sessionOrigin(auth),
    });
    return { verified: done, fresh: row, s: session };
  });
  const body: Record<string, unknown> = { ...userView(fresh), success: true };
  if (cli) body.session_key = s.token;
  if (verified.via === 'backup_code' && verified.backupRemaining !== null && verified.backupRemaining > 0)
    body.backup_codes_remaining = verified.backupRemaining;
  if (fresh.tfa_status === 'legacy') body.legacy_tfa_user = true;
  return { body, cookie: cli ? null : { token: s.token, expiresAt: s.expiresAt } };
}

/**
 * What the new session inherits: a login through an API key (or through a session or cookie that
 * came from one) keeps that key and its permissions; a password login (the login secret) is full.
 */
export function sessionOrigin(auth: AuthContext | null): SessionOrigin {
  if (!auth) return PASSWORD_LOGIN;
  return { apiKeyId: auth.originKeyId, permissions: auth.permissions };
}
