// SMS abuse controls. Thresholds come from config (`OPENRIG_SMS_*`, documented
// in docs/two-factor.md); every check runs inside the transaction that records the send, with the
// user's row lock and a lock on the number, so two concurrent requests
// can't both slip under a limit.
// - sms_blocked_number: the number starts with a blocked prefix (SMS-pumping risk), checked
//   before anything is sent.
// - sms_rate_limited: more than perUserLimit sends for one account, or perNumberLimit to one
//   number, within windowS (resends count too).
// (tfa_challenge_exists, a plain send within resendAfterS of the last one, is in two-factor.send.ts.)
// - preauth_phone_cap: one number used for adding a method (setup / authorize codes) by more
//   than preauthPhoneCap different accounts within preauthPhoneWindowS.
// - sms_fraud_detected: the account flag set by `admin flag-sms-fraud`.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { Config } from '../../config.js';
import type { SqlDialect } from '../../db/connection.js';
import type { User } from '../../identity.js';
import { AppError } from '../../errors.js';
import { SmsErrors } from './sms.errors.js';
import * as repo from './sms.repo.js';

export const PREAUTH_PURPOSES = ['setup', 'authorize'];

export function isBlockedNumber(cfg: Config['sms'], phone: string): boolean {
  return cfg.blockedPrefixes.some((p) => phone.startsWith(p.startsWith('+') ? p : `+${p}`));
}

export function assertNotFlagged(user: User): void {
  if (user.sms_fraud === 1) throw SmsErrors.smsFraud();
}

/** Serialises SMS sends to one number across accounts for the rest of the transaction. */
export function lockNumber(db: Kysely<DB>, dialect: SqlDialect, phone: string): Promise<void> {
  return dialect.lockName(db, `sms:${phone}`);
}

function rateLimited(retryAfterS: number, msg?: string): AppError {
  const e = SmsErrors.smsRateLimited(msg);
  return new AppError(
    e.status,
    e.code,
    e.message,
    { retry_after: retryAfterS },
    { 'Retry-After': String(retryAfterS) },
  );
}

export async function checkSmsLimits(
  db: Kysely<DB>,
  cfg: Config['sms'],
  p: { userId: number; phone: string; purpose: string; now: number },
): Promise<void> {
  const since = p.now - cfg.windowS * 1000;
  const byUser = await repo.sendsByUser(db, p.userId, since);
  if (Number(byUser.n) >= cfg.perUserLimit) {
    throw rateLimited(
      retryAfter(byUser.first, cfg.windowS, p.now),
      'Too many SMS codes requested for this account; wait before requesting another',
    );
  }
  const byNumber = await repo.sendsToNumber(db, p.phone, since);
  if (Number(byNumber.n) >= cfg.perNumberLimit) {
    throw rateLimited(
      retryAfter(byNumber.first, cfg.windowS, p.now),
      'Too many SMS codes requested for this phone number; wait before requesting another',
    );
  }
  if (PREAUTH_PURPOSES.includes(p.purpose)) {
    const others = await repo.otherPreauthUsers(
      db,
      p.phone,
      PREAUTH_PURPOSES,
      p.now - cfg.preauthPhoneWindowS * 1000,
      p.userId,
    );
    if (others.length >= cfg.preauthPhoneCap) throw SmsErrors.preauthPhoneCap();
  }
}

function retryAfter(first: unknown, windowS: number, now: number): number {
  const f = Number(first);
  if (!Number.isFinite(f)) return windowS;
  return Math.max(1, Math.ceil((f + windowS * 1000 - now) / 1000));
}

export { recordSmsSend } from './sms.repo.js';
