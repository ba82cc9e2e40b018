// Sending codes: POST tfa/email/, POST tfa/sms/, POST tfa/sms/resend/ (and the codes that
// authorize-new-method sends). A code goes out on a challenge; the challenge's `secret` is
// returned and passed back where the code is verified. The account
// e-mail must be verified before any code is sent (admins exempt on the two SMS endpoints only).
import type { Deps } from '../../deps.types.js';
import type { User } from '../../identity.js';
import { newToken, sha256Hex } from '../../crypto.js';
import { tx } from '../../db/connection.js';
import type { ChallengePurpose } from '../../db/tables/two-factor.js';
import { E164_RE } from '../accounts/accounts.service.js';
import { maskPhone } from '../accounts/accounts.view.js';
import {
  assertNotFlagged,
  checkSmsLimits,
  isBlockedNumber,
  lockNumber,
  recordSmsSend,
} from '../sms/sms.abuse.js';
import { codeHmac, newCode } from './two-factor.codes.js';
import { TfaErrors, lockedExtra } from './two-factor.errors.js';
import { AppError } from '../../errors.js';
import { enqueueCode } from './two-factor.mail.js';
import {
  activeMethods,
  consumeChallenge,
  insertChallenge,
  lockUser,
  type Challenge,
  type TfaMethod,
  armEmailChallenge,
  armSmsChallenge,
  clearChallengeCode,
  latestLiveSmsChallenge,
  setProviderRef,
} from './two-factor.repo.js';
import { liveChallenge, methodById } from './two-factor.verify.js';

export const SECRET_PREFIX = 'tfa_';
type SendDeps = Pick<Deps, 'db' | 'store' | 'dialect' | 'clock' | 'config' | 'sms' | 'kickOutbox'>;

export function newSecret(): { secret: string; hash: string } {
  const secret = newToken(SECRET_PREFIX);
  return { secret, hash: sha256Hex(secret) };
}

export function requireVerifiedEmail(user: User): void {
  if (!user.email) throw TfaErrors.missingEmail();
  if (user.email_verified_at === null) throw TfaErrors.emailNotVerified();
}

/** Purposes a caller may send codes on: the logged-out flow only its login challenge. */
function sendPurposes(viaSecret: boolean): ChallengePurpose[] {
  return viaSecret ? ['login'] : ['login', 'verify', 'authorize', 'setup'];
}

/**
 * POST tfa/email/: with a secret, a new code on that challenge (the old code stops working);
 * without one (Bearer), a fresh challenge and secret on every call.
 */
export async function sendEmailCode(
  deps: SendDeps,
  user: User,
  p: { secret?: string; viaSecret: boolean; purpose?: ChallengePurpose },
): Promise<{ secret: string; challenge: Challenge }> {
  requireVerifiedEmail(user);
  const now = deps.clock.now();
  const ttlMs = deps.config.tfa.challengeTtlS * 1000;
  // An SMS setup challenge can't turn into an e-mail one: e-mail is never a method to add.
  const purposes = sendPurposes(p.viaSecret).filter((x) => x !== 'setup');
  const existing = p.secret !== undefined ? await liveChallenge(deps, user, p.secret, purposes) : null;
  const out = await tx(deps.store, async (db) => {
    let secret = p.secret ?? '';
    let challenge: Challenge;
    if (existing) {
      challenge = existing;
    } else {
      const s = newSecret();
      secret = s.secret;
      challenge = await insertChallenge(db, {
        userId: user.id,
        secretHash: s.hash,
        purpose: p.purpose ?? 'verify',
        method: 'email',
        tfaMethodId: null,
        phone: null,
        now,
        ttlMs,
      });
    }
    const code = newCode();
    const hmac = codeHmac(deps.config.secretKey, challenge.secret_hash, code);
    if (!(await armEmailChallenge(db, challenge.id, hmac, now, ttlMs))) throw TfaErrors.noChallenge();
    await enqueueCode(
      db,
      now,
      user.email,
      `${challenge.id}:${now}:${code}`,
      code,
      deps.config.tfa.challengeTtlS,
    );
    return { secret, challenge };
  });
  deps.kickOutbox();
  return out;
}

export interface SmsRequest {
  phone_number?: string;
  tfa_method_id?: number;
  secret?: string;
}

export interface SmsCaller {
  user: User;
  /** The logged-out flow: the secret alone authenticated the call. */
  viaSecret: boolean;
  /** Admin accounts skip the e-mail verification rule on the two SMS send endpoints. */
  emailExempt: boolean;
}

function validPhone(raw: string): string {
  const phone = raw.trim();
  if (!E164_RE.test(phone))
    throw TfaErrors.badRequest('phone_number must be an E.164 number such as +14155550123');
  return phone;
}

interface Target {
  phone: string;
  method: TfaMethod | null;
  purpose: ChallengePurpose;
}

/**
 * Which number an SMS goes to, and what the code will be good for: an existing SMS method
 * (verify), the legacy number on file (verify), or a new number to add with confirm-new (setup).
 * A login challenge only sends to a number that already protects the account.
 */
async function resolveTarget(
  deps: SendDeps,
  user: User,
  req: SmsRequest,
  existing: Challenge | null,
  resend: boolean,
): Promise<Target> {
  const methods = (await activeMethods(deps.db, user.id)).filter((m) => m.method === 'sms');
  let method: TfaMethod | null = null;
  let phone: string | null = null;
  if (req.tfa_method_id !== undefined) {
    method = await methodById(deps, user, req.tfa_method_id);
    if (method.method !== 'sms' || !method.phone_number)
      throw TfaErrors.badRequest(`tfa_method_id ${method.id} is not an SMS method`);
    phone = method.phone_number;
    if (req.phone_number !== undefined && validPhone(req.phone_number) !== phone)
      throw TfaErrors.phoneMismatch();
  } else if (req.phone_number !== undefined) {
    phone = validPhone(req.phone_number);
    method = methods.find((m) => m.phone_number === phone) ?? null;
  } else if (existing?.phone_number) {
    phone = existing.phone_number;
    method =
      existing.tfa_method_id !== null ? (methods.find((m) => m.id === existing.tfa_method_id) ?? null) : null;
  } else {
    method = methods.find((m) => m.is_primary === 1) ?? methods[0] ?? null;
    phone = method?.phone_number ?? user.phone_number;
  }
  if (!phone) throw TfaErrors.missingPhone();
  // A resend goes where the original went; a login may switch to another of the account's numbers.
  if (
    existing?.phone_number &&
    existing.method === 'sms' &&
    existing.phone_number !== phone &&
    (resend || existing.purpose !== 'login')
  ) {
    throw TfaErrors.phoneMismatch();
  }
  if (
    existing &&
    existing.purpose !== 'setup' &&
    existing.purpose !== 'login' &&
    existing.tfa_method_id !== null &&
    method?.id !== existing.tfa_method_id
  ) {
    throw TfaErrors.phoneMismatch();
  }
  const onFile = !method && user.tfa_status === 'legacy' && user.phone_number === phone;
  if (existing) {
    if (existing.purpose === 'login' && !method && !onFile)
      throw TfaErrors.phoneMismatch('This number is not one of your 2FA methods');
    return { phone, method, purpose: existing.purpose };
  }
  return { phone, method, purpose: method || onFile ? 'verify' : 'setup' };
}

/**
 * POST tfa/sms/ (resend false) and POST tfa/sms/resend/ (resend true). `forcePurpose` is set by
 * authorize-new-method for its own code.
 */
export async function sendSmsCode(
  deps: SendDeps,
  caller: SmsCaller,
  req: SmsRequest,
  opts: { resend: boolean; forcePurpose?: ChallengePurpose },
): Promise<{ secret: string; phone: string; challenge: Challenge }> {
  const { user } = caller;
  assertNotFlagged(user);
  if (!caller.emailExempt) requireVerifiedEmail(user);
  const now = deps.clock.now();
  const ttlMs = deps.config.tfa.challengeTtlS * 1000;
  const given =
    req.secret !== undefined
      ? await liveChallenge(deps, user, req.secret, sendPurposes(caller.viaSecret))
      : null;
  const target = await resolveTarget(deps, user, req, given, opts.resend);
  const purpose = opts.forcePurpose ?? target.purpose;
  if (isBlockedNumber(deps.config.sms, target.phone)) throw TfaErrors.blockedNumber();
  // No SMS for a locked method: its code could not be checked before the lock ends anyway.
  const lock = target.method?.locked_until ?? null;
  if (lock !== null && lock > now) {
    const e = TfaErrors.locked();
    throw new AppError(e.status, e.code, e.message, lockedExtra(target.method!.fail_count, lock), {
      'Retry-After': String(Math.ceil((lock - now) / 1000)),
    });
  }
  const provider = deps.sms;
  const code = provider.codes === 'local' ? newCode() : null;

  const prepared = await tx(deps.store, async (db) => {
    await lockUser(db, user.id);
    await lockNumber(db, deps.dialect, target.phone);
    // The challenge a resend replaces: the given one, or (Bearer, no secret) the latest live SMS
    // challenge to this number for this purpose, whose secret was lost.
    let previous: Challenge | null =
      given && given.method === 'sms' && given.sent_at !== null && given.phone_number === target.phone
        ? given
        : null;
    if (!given) {
      previous = await latestLiveSmsChallenge(db, { userId: user.id, phone: target.phone, purpose, now });
    }
    if (opts.resend) {
      if (!previous && !given)
        throw TfaErrors.noChallenge('No SMS code was sent to this number recently; use /api/v0/tfa/sms/');
    } else if (
      previous &&
      previous.sent_at !== null &&
      previous.sent_at > now - deps.config.sms.resendAfterS * 1000
    ) {
      // "A recent code was already sent; use resend": within OPENRIG_SMS_RESEND_AFTER_S
      // a plain send is refused; resend (which replaces the code) is the way to a new one. After
      // that a send replaces the older code the same way.
      const waitS = Math.ceil((previous.sent_at + deps.config.sms.resendAfterS * 1000 - now) / 1000);
      throw TfaErrors.challengeExists(
        `${TfaErrors.challengeExists.msg}. A plain send works again in ${waitS} s.`,
      );
    }
    await checkSmsLimits(db, deps.config.sms, { userId: user.id, phone: target.phone, purpose, now });
    await recordSmsSend(db, { userId: user.id, phone: target.phone, purpose, now });
    let challenge: Challenge;
    let secret: string;
    if (given) {
      challenge = given;
      secret = req.secret!;
    } else {
      // Without a secret (Bearer): the older challenge to this number dies and a new secret is
      // returned; on resend this recovers a lost secret.
      if (previous) await consumeChallenge(db, previous.id, now);
      const s = newSecret();
      secret = s.secret;
      challenge = await insertChallenge(db, {
        userId: user.id,
        secretHash: s.hash,
        purpose,
        method: 'sms',
        tfaMethodId: target.method?.id ?? null,
        phone: target.phone,
        now,
        ttlMs,
      });
    }
    const armed = await armSmsChallenge(db, challenge.id, {
      tfaMethodId: target.method?.id ?? null,
      phone: target.phone,
      codeHmac: code === null ? null : codeHmac(deps.config.secretKey, challenge.secret_hash, code),
      now,
      ttlMs,
    });
    if (!armed) throw TfaErrors.noChallenge();
    return { challenge, secret, previousRef: (given ?? previous)?.provider_ref ?? null };
  });

  try {
    const { ref } = await provider.send({ to: target.phone, code, previousRef: prepared.previousRef });
    if (ref) await setProviderRef(deps.db, prepared.challenge.id, ref);
  } catch (err) {
    // Not delivered: no code may stay usable that nobody received. A new challenge dies; a given
    // one (e.g. the login challenge) only loses its code, so the caller can try another channel.
    if (given) {
      await clearChallengeCode(deps.db, given.id);
    } else {
      await consumeChallenge(deps.db, prepared.challenge.id, deps.clock.now());
    }
    throw err;
  }
  return { secret: prepared.secret, phone: target.phone, challenge: prepared.challenge };
}

/** Says where an e-mail code went without showing the whole address: `d***@openrig.local`. */
export function emailSentMsg(email: string): string {
  const at = email.lastIndexOf('@');
  const masked = at > 0 ? `${email[0]}***${email.slice(at)}` : '***';
  return `Code e-mailed to ${masked}`;
}

export function smsSentMsg(phone: string): string {
  return `Code sent by SMS to ${maskPhone(phone)}`;
}
