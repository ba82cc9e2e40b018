// Account basics an operator switches on: self sign-up with e-mail verification (OPENRIG_SIGNUP),
// password reset by an e-mailed single-use link, and password change.
//
// A link carries a token `selector + verifier` (16 + 32 characters of base64url, 288 random bits):
// the row is found by its selector and only the verifier's SHA-256 is stored, compared in
// constant time. A token works once, decided by the database (a conditional UPDATE of
// `used_at`), and until OPENRIG_PASSWORD_RESET_TTL_S. A sign-up makes no account until its link
// is followed. Neither a sign-up nor a reset request says whether an account has the e-mail: both
// answer the same words, and only the address's owner learns the rest, by e-mail. Both requests
// are limited per client address (the code_sends rate-limit family).
import { randomBytes } from 'node:crypto';
import type { Deps } from '../../deps.types.js';
import { tx, isUniqueViolation } from '../../db/connection.js';
import { hashPassword, safeEqual, sha256Hex, verifyPassword } from '../../crypto.js';
import type { AuthContext } from '../../identity.js';
import { enqueueEmails } from '../notifications/notifications.outbox.js';
import { AccountErrors } from './accounts.errors.js';
import { clearSignInFailures } from './accounts.lockout.js';
import { alreadyRegisteredMail, passwordChangedMail, resetMail, signupMail } from './accounts.mail.js';
import * as repo from './accounts.repo.js';
import { createUser, EMAIL_RE } from './accounts.service.js';

type TokenDeps = Pick<Deps, 'db' | 'store' | 'clock' | 'config' | 'kickOutbox'>;

const SELECTOR_LEN = 16;
const VERIFIER_LEN = 32;
/** What a token looks like; anything else is refused before the database is asked. */
export const TOKEN_RE = new RegExp(`^[A-Za-z0-9_-]{${SELECTOR_LEN + VERIFIER_LEN}}$`);

export const SIGNUP_SENT =
  'If this e-mail can be used, a link to confirm it is on its way: open it to create your account.';
export const RESET_SENT = 'If an account has this e-mail, a link to reset its password is on its way.';

/** NIST SP 800-63B: at least 8 characters; an upper bound keeps hashing cheap. */
function checkPassword(pw: unknown): string {
  // Characters (code points), as the document's minLength and maxLength count them.
  if (typeof pw !== 'string' || [...pw].length < 8 || [...pw].length > 256) throw AccountErrors.badPassword();
  return pw;
}

function normalEmail(raw: unknown): string {
  const email = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
  if (!EMAIL_RE.test(email) || email.length > 254) throw AccountErrors.badEmail();
  return email;
}

function newLinkToken(): { token: string; selector: string; verifierHash: string } {
  const token = randomBytes(36).toString('base64url'); // 48 characters
  return {
    token,
    selector: token.slice(0, SELECTOR_LEN),
    verifierHash: sha256Hex(token.slice(SELECTOR_LEN)),
  };
}

function link(deps: TokenDeps, page: 'verify-email' | 'reset-password', token: string): string {
  return `${deps.config.accounts.publicUrl}/${page}?token=${token}`;
}

/** The row a token names, when its verifier matches (compared in constant time); else a 400. */
async function tokenRow(deps: TokenDeps, token: unknown, purpose: 'signup' | 'reset') {
  if (typeof token !== 'string' || !TOKEN_RE.test(token)) throw AccountErrors.badToken();
  const row = await repo.findAccountToken(deps.db, token.slice(0, SELECTOR_LEN), purpose);
  const hash = sha256Hex(token.slice(SELECTOR_LEN));
  if (!safeEqual(hash, row?.verifier_hash ?? '0'.repeat(64)) || !row) throw AccountErrors.badToken();
  if (row.used_at !== null || row.expires_at <= deps.clock.now()) throw AccountErrors.badToken();
  return row;
}

/**
 * POST /users/signup: with sign-up on, e-mails a link that creates the account (unverified
 * addresses never get one). An address with an account gets a note saying so instead. The reply
 * is the same either way.
 */
export async function signUp(
  deps: TokenDeps,
  body: { email?: unknown; password?: unknown; full_name?: unknown },
): Promise<{ success: true; msg: string }> {
  if (!deps.config.accounts.signup) throw AccountErrors.signupDisabled();
  const email = normalEmail(body.email);
  const password = checkPassword(body.password);
  const fullName = typeof body.full_name === 'string' ? body.full_name.trim().slice(0, 200) : '';
  const passwordHash = await hashPassword(password);
  const now = deps.clock.now();
  const ttlS = deps.config.accounts.tokenTtlS;
  await tx(deps.store, async (db) => {
    const existing = await repo.findUserByEmail(db, email);
    if (existing) {
      await enqueueEmails(db, now, [
        {
          key: `account:signup-exists:${email}:${now}`,
          to: existing.email,
          ...alreadyRegisteredMail(
            `ask for a reset link at ${deps.config.accounts.publicUrl}/reset-password`,
          ),
          category: 'account.signup',
        },
      ]);
      return;
    }
    const t = newLinkToken();
    await repo.retireAccountTokens(db, email, 'signup', now);
    await repo.insertAccountToken(db, {
      selector: t.selector,
      purpose: 'signup',
      verifier_hash: t.verifierHash,
      email,
      user_id: null,
      password_hash: passwordHash,
      full_name: fullName,
      created_at: now,
      expires_at: now + ttlS * 1000,
      used_at: null,
    });
    await enqueueEmails(db, now, [
      {
        key: `account:signup:${t.selector}`,
        to: email,
        ...signupMail(link(deps, 'verify-email', t.token), ttlS),
        category: 'account.signup',
      },
    ]);
  });
  deps.kickOutbox();
  return { success: true, msg: SIGNUP_SENT };
}

/** POST /users/signup/verify: the link's token makes the account, its e-mail verified. */
export async function verifySignup(
  deps: TokenDeps,
  body: { token?: unknown },
): Promise<{ success: true; msg: string; email: string }> {
  const row = await tokenRow(deps, body.token, 'signup');
  // Used first: of concurrent verifications exactly one goes on to make the account.
  if (!(await repo.useAccountToken(deps.db, row.selector, deps.clock.now()))) throw AccountErrors.badToken();
  try {
    await createUser(deps, {
      email: row.email,
      passwordHash: row.password_hash,
      fullName: row.full_name ?? '',
      emailVerified: true,
    });
  } catch (err) {
    // The address got an account meanwhile (an operator, or another sign-up's link).
    if (isUniqueViolation(err) || (err as { code?: string }).code === 'email_taken')
      throw AccountErrors.badToken();
    throw err;
  }
  return {
    success: true,
    msg: 'Your e-mail is confirmed and your account created: sign in.',
    email: row.email,
  };
}

/** POST /users/password-reset: e-mails a reset link when an account has the address. */
export async function requestPasswordReset(
  deps: TokenDeps,
  body: { email?: unknown },
): Promise<{ success: true; msg: string }> {
  const email = normalEmail(body.email);
  const now = deps.clock.now();
  const ttlS = deps.config.accounts.tokenTtlS;
  let sent = false;
  await tx(deps.store, async (db) => {
    const user = await repo.findUserByEmail(db, email);
    if (!user) return;
    const t = newLinkToken();
    await repo.retireAccountTokens(db, email, 'reset', now);
    await repo.insertAccountToken(db, {
      selector: t.selector,
      purpose: 'reset',
      verifier_hash: t.verifierHash,
      email,
      user_id: user.id,
      password_hash: null,
      full_name: null,
      created_at: now,
      expires_at: now + ttlS * 1000,
      used_at: null,
    });
    await enqueueEmails(db, now, [
      {
        key: `account:reset:${t.selector}`,
        to: user.email,
        ...resetMail(link(deps, 'reset-password', t.token), ttlS),
        category: 'account.reset',
      },
    ]);
    await repo.deleteOldAccountTokens(db, now - 86_400_000);
    sent = true;
  });
  if (sent) deps.kickOutbox();
  return { success: true, msg: RESET_SENT };
}

/**
 * POST /users/password-reset/confirm: the link's token sets a new password, once; every session
 * of the account ends and its sign-in lock is lifted (the owner proved the address).
 */
export async function confirmPasswordReset(
  deps: TokenDeps,
  body: { token?: unknown; password?: unknown },
): Promise<{ success: true; msg: string }> {
  const password = checkPassword(body.password);
  const row = await tokenRow(deps, body.token, 'reset');
  const hash = await hashPassword(password);
  const now = deps.clock.now();
  await tx(deps.store, async (db) => {
    // The conditional UPDATE decides: a second use, even a concurrent one, changes nothing.
    if (!(await repo.useAccountToken(db, row.selector, now))) throw AccountErrors.badToken();
    await repo.setPasswordHash(db, row.user_id!, hash);
    await repo.revokeUserSessions(db, row.user_id!, now);
    await clearSignInFailures(db, row.email);
    await enqueueEmails(db, now, [
      {
        key: `account:password-reset:${row.selector}`,
        to: row.email,
        ...passwordChangedMail('reset'),
        category: 'account.password',
      },
    ]);
  });
  deps.kickOutbox();
  return { success: true, msg: 'Your password is reset: sign in with the new one.' };
}

/**
 * PUT /users/password: the caller's current password and a new one. Every other session ends;
 * the caller's own stays signed in.
 */
export async function changePassword(
  deps: TokenDeps,
  auth: AuthContext,
  body: { current_password?: unknown; new_password?: unknown },
): Promise<{ success: true; msg: string }> {
  const next = checkPassword(body.new_password);
  const current = typeof body.current_password === 'string' ? body.current_password : '';
  if (!(await verifyPassword(auth.user.password_hash ?? null, current))) throw AccountErrors.wrongPassword();
  const hash = await hashPassword(next);
  const now = deps.clock.now();
  await tx(deps.store, async (db) => {
    await repo.setPasswordHash(db, auth.user.id, hash);
    await repo.revokeOtherSessions(db, auth.user.id, auth.sessionId, now);
    await enqueueEmails(db, now, [
      {
        key: `account:password-changed:${auth.user.id}:${now}`,
        to: auth.user.email,
        ...passwordChangedMail('changed'),
        category: 'account.password',
      },
    ]);
  });
  deps.kickOutbox();
  return { success: true, msg: 'Password changed; your other sessions were ended.' };
}
