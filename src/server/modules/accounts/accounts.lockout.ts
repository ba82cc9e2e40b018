// Per-account lockout of sign-in, whatever the channel and wherever the caller connects from.
// Failed passwords and failed second factors (every method, backup codes, e-mail and SMS codes)
// of one account add to one counter; at `maxFailures` within `windowS` the account's sign-in
// locks for `baseLockS`, doubled for each further lock until a sign-in succeeds (at most
// `maxLockS`), and the owner gets one e-mail per lock. The per-method 2FA lockout still applies
// with its own codes and fields; this one is the cap across methods and challenges.
//
// While locked, every password and every second factor for the account is refused with the same
// 429 before it is evaluated: a right password looks exactly like a wrong one, so the lock is
// never an oracle for the password. The counter is keyed by the lower-cased e-mail, so an e-mail
// without an account locks the same way and the lock does not tell which e-mails exist.
import type { Kysely } from 'kysely';
import type { Deps } from '../../deps.types.js';
import type { DB } from '../../db/schema.js';
import { AppError } from '../../errors.js';
import { enqueueEmails } from '../notifications/notifications.outbox.js';
import { lockedMail } from './accounts.mail.js';
import { tx } from '../../db/connection.js';
import {
  clearLockout,
  countLockoutFailure,
  findLockout,
  findUserByEmail,
  lockAccount,
} from './accounts.repo.js';

export const ACCOUNT_LOCKED_MSG =
  'Sign-in to this account is locked after too many failed attempts; try again later';

export const lockoutSubject = (email: string): string => email.trim().toLowerCase();

function lockedError(until: number, now: number): AppError {
  return new AppError(
    429,
    'account_locked',
    ACCOUNT_LOCKED_MSG,
    { locked_until: Math.ceil(until / 1000) },
    { 'Retry-After': String(Math.max(1, Math.ceil((until - now) / 1000))) },
  );
}

/**
 * Throws 429 account_locked while the account's sign-in is locked, or while its count of failures
 * is full (the failure that filled it is about to set the lock; one that never did, its process
 * killed in between, has it set here). Called before a password or second factor is evaluated,
 * and again after a right one: a right guess made while concurrent wrong ones filled the count
 * gets the same 429 as they do, so a burst of guesses learns the answer to at most `maxFailures`.
 */
export async function assertNotLocked(
  deps: Pick<Deps, 'db' | 'store' | 'clock' | 'config' | 'kickOutbox'>,
  email: string,
): Promise<void> {
  const cfg = deps.config.accountLockout;
  const subject = lockoutSubject(email);
  const now = deps.clock.now();
  let row = await findLockout(deps.db, subject);
  if (!row) return;
  const full = row.failures >= cfg.maxFailures && row.window_started_at > now - cfg.windowS * 1000;
  if (full && (row.locked_until == null || row.locked_until <= now)) {
    await lock(deps, subject, row.lock_level, now);
    row = (await findLockout(deps.db, subject)) ?? row;
  }
  if (row.locked_until != null && row.locked_until > now) throw lockedError(row.locked_until, now);
}

/** Length of the lock at `level` (0 for the first): doubling from the base, capped. */
export function lockMs(cfg: Deps['config']['accountLockout'], level: number): number {
  return Math.min(cfg.baseLockS * 2 ** Math.min(level, 30), cfg.maxLockS) * 1000;
}

/**
 * Counts one failed password or second factor; locks (and e-mails the owner) at the threshold.
 * A failure that finds the account locked, or its count already full, is not counted and throws
 * the 429 of a locked account instead of letting the caller throw its own error: concurrent
 * guesses past the limit are not told that they were wrong.
 */
export async function recordSignInFailure(
  deps: Pick<Deps, 'db' | 'store' | 'clock' | 'config' | 'kickOutbox'>,
  email: string,
): Promise<void> {
  const cfg = deps.config.accountLockout;
  const subject = lockoutSubject(email);
  const now = deps.clock.now();
  const r = await countLockoutFailure(deps.db, {
    subject,
    now,
    windowMs: cfg.windowS * 1000,
    max: cfg.maxFailures,
  });
  if (!r) return assertNotLocked(deps, email);
  if (r.failures >= cfg.maxFailures) await lock(deps, subject, r.lock_level, now);
}

/** Sets the lock of a full count at `level`, once between concurrent callers, with its e-mail. */
async function lock(
  deps: Pick<Deps, 'store' | 'config' | 'kickOutbox'>,
  subject: string,
  level: number,
  now: number,
): Promise<void> {
  const cfg = deps.config.accountLockout;
  const until = now + lockMs(cfg, level);
  const locked = await tx(deps.store, async (db) => {
    if (!(await lockAccount(db, { subject, threshold: cfg.maxFailures, level, until, now }))) return false;
    await enqueueLockNotice(db, subject, until, now);
    return true;
  });
  if (locked) deps.kickOutbox();
}

async function enqueueLockNotice(db: Kysely<DB>, email: string, until: number, now: number): Promise<void> {
  const user = await findUserByEmail(db, email);
  if (!user) return;
  await enqueueEmails(db, now, [
    {
      key: `account:locked:${email}:${until}`,
      to: user.email,
      ...lockedMail(until),
      category: 'account.locked',
    },
  ]);
}

/** A completed sign-in (or second-factor verification) resets the account's count and level. */
export async function clearSignInFailures(db: Kysely<DB>, email: string): Promise<void> {
  await clearLockout(db, lockoutSubject(email));
}
