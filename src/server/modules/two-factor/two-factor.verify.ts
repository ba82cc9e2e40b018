// Verifying a second factor: a backup code, a TOTP code, or an SMS / e-mail code bound to a
// challenge. Used by login, DELETE, regen-backup-codes and the PUT authorize step.
//
// Races are decided by the database, never read-then-write:
// - Lockout (per method, not per account): an attempt is *claimed* before the code is
//   evaluated, with `UPDATE … SET fail_count = fail_count + 1 WHERE fail_count < max AND
//   locked_until IS NULL`; the claim that reaches the maximum also sets locked_until. So of 50
//   concurrent wrong codes at most `max` are evaluated; the rest get 429 tfa_locked. Success
//   resets the count.
// - A challenge's wrong tries are claimed the same way (`tries < max`), and a right code
//   consumes it with `… WHERE consumed_at IS NULL`: 20 concurrent uses succeed once.
// - TOTP: the accepted RFC 6238 step is stored with `… WHERE last_totp_step < step`, so a code
//   (a step) is never accepted twice. A right code is checked before any attempt is claimed: a
//   code of a step already accepted (a replay, or the losers of 20 concurrent logins with one
//   code) is refused without counting toward any lockout, so concurrent uses of one code end in
//   one success and no lock on both databases. Only wrong codes claim attempts.
// - Per account (accounts/accounts.lockout.ts): a locked account's sign-in refuses every factor
//   before evaluating it; every failed factor counts toward the account's lock (a conditional
//   upsert, so a failure past the limit is not counted and answers the lock's 429), a right one
//   is held against the lock again, a success clears it.
// - Backup codes: `UPDATE … SET used_at WHERE used_at IS NULL` (repo.consumeBackupCode).
//
// Verify-then-act is one transaction: `verifyFactor` claims the attempt and evaluates
// the code, and returns a `Verification` whose *consuming* writes (backup code used_at, challenge
// consumed_at, TOTP last step, fail-count reset, the success event) have not run yet. The caller
// runs them with its action in one transaction (`actOnVerified`), so a crash or a failed action
// can never leave a code spent without its action, nor an action without its code spent. The
// failure side is different on purpose: a claimed attempt and a wrong try commit on their own
// (before the code is evaluated), so failed verifications count toward the lockout even though
// no action happens. Non-DB work (decrypting, HMACs, the SMS provider's HTTP check) runs before
// the transaction opens.
import type { Kysely } from 'kysely';
import type { Deps } from '../../deps.types.js';
import type { User } from '../../identity.js';
import { AppError, assertNever, type ErrorFactory } from '../../errors.js';
import { decryptSecret, sha256Hex } from '../../crypto.js';
import { tx } from '../../db/connection.js';
import { LostRace, txSettled } from '../../db/tx.js';
import type { ChallengePurpose } from '../../db/tables/two-factor.js';
import type { DB } from '../../db/schema.js';
import {
  backupCodeHmac,
  codeMatches,
  isCode,
  isTotpSecret,
  matchTotp,
  normalizeBackupCode,
  TOTP_PERIOD_S,
} from './two-factor.codes.js';
import { TfaErrors, lockedExtra } from './two-factor.errors.js';
import { enqueueNotice } from './two-factor.mail.js';
import { assertNotLocked, clearSignInFailures, recordSignInFailure } from '../accounts/accounts.lockout.js';
import {
  activeMethods,
  consumeBackupCode,
  consumeChallenge,
  countUnusedBackupCodes,
  findActiveMethod,
  findUnusedBackupCode,
  isUsedBackupCode,
  lockUser,
  findChallenge,
  recordEvent,
  type Challenge,
  type TfaMethod,
  claimMethodAttempt,
  markMethodUsed,
  methodLockState,
  resetExpiredLock,
  spendTotpStep,
  tryChallenge,
} from './two-factor.repo.js';
import { recordEvents as recordWebhookEvents, tfaEvent } from '../webhooks/webhooks.events.js';

export type TfaMethodName = 'sms' | 'totp' | 'email';

export interface FactorInput {
  tfa_method?: TfaMethodName;
  tfa_method_id?: number;
  code?: string;
  secret?: string;
  backup_code?: string;
}

export interface VerifyCtx {
  /** What the verification is for (auth events). */
  action: string;
  /** Challenge purposes whose codes this step accepts (a code is bound to its purpose). */
  purposes: ChallengePurpose[];
  /** The failure code of this endpoint: 2fa_login_failed on login, else 2fa_verification_failed. */
  fail: ErrorFactory;
  ip: string | null;
}

export interface Verified {
  via: 'backup_code' | TfaMethodName;
  method: TfaMethod | null;
  challenge: Challenge | null;
  /** Unused backup codes left, after a backup-code verification. */
  backupRemaining: number | null;
}

/** A code that checked out; its consuming writes are still to run (`commit`, inside the action's transaction). */
export interface Verification {
  userId: number;
  via: Verified['via'];
  method: TfaMethod | null;
  challenge: Challenge | null;
  /**
   * The verification's consuming writes, conditional on nobody having consumed the code since it
   * was evaluated. Run with the action's transaction `db`; throws `LostRace` when a concurrent
   * request got there first (the transaction then rolls back and nothing happens).
   */
  commit(db: Kysely<DB>): Promise<Verified>;
}

/**
 * Commits a verification and its action in one transaction: both or neither. A lost race is
 * settled (failure event, lockout extras) after the rollback, outside the transaction.
 */
export async function actOnVerified<T>(
  deps: Pick<Deps, 'store'>,
  v: Verification,
  act: (db: Kysely<DB>, verified: Verified) => Promise<T>,
): Promise<T> {
  return txSettled(deps.store, async (db) => {
    // The user's row lock first, before the commit's row writes: every 2FA change takes its
    // locks in this one order, so two of them can't deadlock on PostgreSQL.
    await lockUser(db, v.userId);
    return act(db, await v.commit(db));
  });
}

/** What a LostRace of this module lost: a concurrent request consumed the same code first. */
const CODE = 'consuming a 2FA code';

type VerifyDeps = Pick<Deps, 'db' | 'store' | 'clock' | 'config' | 'sms' | 'kickOutbox'>;

/** Finds an active method of the user by id (404 not_found for another user's id). */
export async function methodById(deps: Pick<Deps, 'db'>, user: User, id: number): Promise<TfaMethod> {
  const m = await findActiveMethod(deps.db, user.id, id);
  if (!m) throw TfaErrors.notFound();
  return m;
}

/** The one active method of a type, or null; bad_request when several exist (pass tfa_method_id). */
export function singleOfType(methods: TfaMethod[], type: 'sms' | 'totp'): TfaMethod | null {
  const of = methods.filter((m) => m.method === type);
  if (of.length > 1) throw TfaErrors.badRequest(`Several ${type} methods exist: pass tfa_method_id`);
  return of[0] ?? null;
}

/**
 * Claims the attempt and evaluates the code; the caller commits it with its action
 * (`actOnVerified`). A right code is held against the account's lock once more, as a wrong one
 * is when it is counted: one that concurrent wrong guesses overtook gets their 429.
 */
export async function verifyFactor(
  deps: VerifyDeps,
  user: User,
  input: FactorInput,
  ctx: VerifyCtx,
): Promise<Verification> {
  await assertNotLocked(deps, user.email);
  const verification = await evaluateFactor(deps, user, input, ctx);
  await assertNotLocked(deps, user.email);
  return verification;
}

async function evaluateFactor(
  deps: VerifyDeps,
  user: User,
  input: FactorInput,
  ctx: VerifyCtx,
): Promise<Verification> {
  if (input.backup_code !== undefined) return verifyBackupCode(deps, user, input.backup_code, ctx);
  if (input.code === undefined) throw TfaErrors.missingAuthValue();
  if (!isCode(input.code)) throw TfaErrors.badRequest('code must be a 6-digit string');

  const byId = input.tfa_method_id !== undefined ? await methodById(deps, user, input.tfa_method_id) : null;
  const challenge =
    input.secret !== undefined ? await liveChallenge(deps, user, input.secret, ctx.purposes) : null;
  const kind = input.tfa_method ?? byId?.method ?? challenge?.method ?? (await inferMethod(deps, user));
  if (byId && kind !== byId.method)
    throw TfaErrors.badRequest(`tfa_method_id ${byId.id} is a ${byId.method} method, not ${kind}`);

  switch (kind) {
    case 'totp':
      return verifyTotp(
        deps,
        user,
        byId ?? singleOfType(await activeMethods(deps.db, user.id), 'totp'),
        input.code,
        ctx,
      );
    case 'sms':
    case 'email':
      if (!challenge) throw TfaErrors.missingParams(`secret is required to verify an ${kind} code`);
      return verifyChallengeCode(deps, user, kind, challenge, byId, input.code, ctx);
    default:
      return assertNever(kind, 'tfa_method');
  }
}

/** Without tfa_method: the type of the user's methods if they are all one type, else sms (the published default). */
async function inferMethod(deps: VerifyDeps, user: User): Promise<TfaMethodName> {
  const types = new Set((await activeMethods(deps.db, user.id)).map((m) => m.method));
  return types.size === 1 ? [...types][0]! : 'sms';
}

/**
 * The challenge a secret names, checked to be the caller's, unconsumed, unexpired and of an
 * accepted purpose. challenge_not_found: no such secret (or another user's); 2fa_expired;
 * no_challenge_found: used, dead after too many tries, or not a challenge for this step.
 */
export async function liveChallenge(
  deps: Pick<Deps, 'db' | 'clock'>,
  user: User | null,
  secret: string,
  purposes: ChallengePurpose[],
): Promise<Challenge> {
  const c = await findChallenge(deps.db, sha256Hex(secret));
  if (!c || (user !== null && c.user_id !== user.id)) throw TfaErrors.challengeNotFound();
  if (c.consumed_at !== null) throw TfaErrors.noChallenge();
  if (c.expires_at <= deps.clock.now()) throw TfaErrors.expired();
  if (!purposes.includes(c.purpose))
    throw TfaErrors.noChallenge('This secret does not belong to this step; request a new code');
  return c;
}

async function verifyBackupCode(
  deps: VerifyDeps,
  user: User,
  raw: string,
  ctx: VerifyCtx,
): Promise<Verification> {
  const now = deps.clock.now();
  const normalized = normalizeBackupCode(raw);
  const hmac = normalized === null ? null : backupCodeHmac(deps.config.secretKey, normalized);
  const invalid = async (counts: boolean): Promise<never> => {
    await recordEvent(deps.db, now, {
      userId: user.id,
      kind: 'failure',
      action: ctx.action,
      method: 'backup_code',
      ip: ctx.ip,
    });
    if (counts) await recordSignInFailure(deps, user.email);
    throw TfaErrors.invalidBackupCode();
  };
  // A read only, to fail fast: the code is spent by commit's conditional UPDATE.
  // A code already used is a replay of a real code, not a guess: refused without counting.
  if (hmac === null) return invalid(true);
  if (!(await findUnusedBackupCode(deps.db, user.id, hmac)))
    return invalid(!(await isUsedBackupCode(deps.db, user.id, hmac)));
  return {
    userId: user.id,
    via: 'backup_code',
    method: null,
    challenge: null,
    async commit(db) {
      // A right code spent by a concurrent request: refused, but not a guess.
      if (!(await consumeBackupCode(db, user.id, hmac, now))) throw new LostRace(CODE, () => invalid(false));
      await recordEvent(db, now, {
        userId: user.id,
        kind: 'success',
        action: ctx.action,
        method: 'backup_code',
        ip: ctx.ip,
      });
      await clearSignInFailures(db, user.email);
      return {
        via: 'backup_code',
        method: null,
        challenge: null,
        backupRemaining: await countUnusedBackupCodes(db, user.id),
      };
    },
  };
}

async function verifyTotp(
  deps: VerifyDeps,
  user: User,
  method: TfaMethod | null,
  code: string,
  ctx: VerifyCtx,
): Promise<Verification> {
  if (!method) throw ctx.fail('No TOTP method is configured on this account', lockedExtra(0, null));
  const secret = method.totp_secret_enc ? decryptSecret(deps.config.secretKey, method.totp_secret_enc) : null;
  if (!secret || !isTotpSecret(secret)) throw TfaErrors.notConfigured();
  const now = deps.clock.now();
  const step = matchTotp(secret, code, now);
  // A wrong code claims an attempt against the lockout (429 tfa_locked when none is left).
  if (step === null) return failed(deps, user, method, await claimAttempt(deps, method, now), ctx, 'totp');
  // A right code while the method is locked gets the same 429 as a wrong one. The lock is read
  // again, after the code was found right: concurrent wrong codes may have set it since the
  // method's row was read, and a right code among them must not be the one that gets through.
  const lockNow = (await methodLockState(deps.db, method.id)) ?? method;
  if (lockNow.locked_until !== null && lockNow.locked_until > now) throw lockedError(lockNow, now, deps);
  // A right code of a step already accepted: refused, never counted (the row read is a fast
  // path; commit's conditional UPDATE decides between concurrent uses of one code).
  if (method.last_totp_step !== null && method.last_totp_step >= step)
    return replayed(ctx, method, step, now);
  return {
    userId: user.id,
    via: 'totp',
    method,
    challenge: null,
    async commit(db) {
      if (!(await spendTotpStep(db, method.id, step)))
        throw new LostRace(CODE, () => replayed(ctx, method, step, now));
      await succeeded(db, user, method, now, ctx, 'totp');
      return { via: 'totp', method, challenge: null, backupRemaining: null };
    },
  };
}

async function verifyChallengeCode(
  deps: VerifyDeps,
  user: User,
  kind: 'sms' | 'email',
  challenge: Challenge,
  byId: TfaMethod | null,
  code: string,
  ctx: VerifyCtx,
): Promise<Verification> {
  if (challenge.method !== kind)
    throw TfaErrors.noChallenge(`No ${kind} code was sent for this secret; request one first`);
  if (byId && challenge.tfa_method_id !== byId.id)
    throw TfaErrors.phoneMismatch('The code was sent for another 2FA method than tfa_method_id');
  let method: TfaMethod | null = null;
  if (kind === 'sms' && challenge.tfa_method_id !== null) {
    method = (await findActiveMethod(deps.db, user.id, challenge.tfa_method_id)) ?? null;
    if (!method) throw TfaErrors.noChallenge('The SMS method of this code was removed');
  }
  const now = deps.clock.now();
  const claim = method ? await claimAttempt(deps, method, now) : null;
  const maxTries = deps.config.tfa.challengeMaxTries;
  const tried = await tryChallenge(deps.db, challenge.id, now, maxTries);
  if (!tried) throw TfaErrors.noChallenge();
  let ok: boolean;
  if (tried.code_hmac !== null)
    ok = codeMatches(deps.config.secretKey, challenge.secret_hash, code, tried.code_hmac);
  else if (kind === 'sms' && tried.phone_number)
    ok = await deps.sms.check({ to: tried.phone_number, code, ref: tried.provider_ref });
  else ok = false;
  if (!ok) {
    // A challenge dies after its last allowed wrong try.
    if (tried.tries >= maxTries) await consumeChallenge(deps.db, challenge.id, now);
    return failed(
      deps,
      user,
      method,
      claim ?? { failCount: tried.tries, lockedUntil: null, lockedNow: false },
      ctx,
      kind,
    );
  }
  return {
    userId: user.id,
    via: kind,
    method,
    challenge,
    async commit(db) {
      if (!(await consumeChallenge(db, challenge.id, now)))
        throw new LostRace(CODE, () => Promise.reject(TfaErrors.noChallenge()));
      await succeeded(db, user, method, now, ctx, kind);
      return { via: kind, method, challenge, backupRemaining: null };
    },
  };
}

interface Claim {
  failCount: number;
  lockedUntil: number | null;
  /** This claim reached the maximum and set the lock. */
  lockedNow: boolean;
}

/** Claims one attempt against the method's lockout, or throws 429 tfa_locked. */
export async function claimAttempt(
  deps: Pick<Deps, 'db' | 'config'>,
  method: TfaMethod,
  now: number,
): Promise<Claim> {
  const max = deps.config.tfa.maxFailures;
  const lockMs = deps.config.tfa.lockoutS * 1000;
  // An expired lock starts a fresh count; idempotent, so concurrent callers agree. (A count at
  // the maximum without a lock only arises when OPENRIG_TFA_MAX_FAILURES was lowered: reset it
  // too rather than lock the method for ever.)
  await resetExpiredLock(deps.db, method.id, now, max);
  const row = await claimMethodAttempt(deps.db, method.id, now, max, lockMs);
  if (row)
    return { failCount: row.fail_count, lockedUntil: row.locked_until, lockedNow: row.locked_until !== null };
  const cur = await methodLockState(deps.db, method.id);
  throw lockedError(
    { fail_count: cur?.fail_count ?? max, locked_until: cur?.locked_until ?? now + lockMs },
    now,
    deps,
  );
}

/** 429 tfa_locked for a locked method, with its count and the lock's end. */
function lockedError(
  m: Pick<TfaMethod, 'fail_count' | 'locked_until'>,
  now: number,
  deps: Pick<Deps, 'config'>,
): AppError {
  const until = m.locked_until ?? now + deps.config.tfa.lockoutS * 1000;
  const e = TfaErrors.locked();
  return new AppError(e.status, e.code, e.message, lockedExtra(m.fail_count, until), {
    'Retry-After': String(Math.max(1, Math.ceil((until - now) / 1000))),
  });
}

/** A TOTP code of a step already accepted: refused without counting toward any lockout. */
function replayed(ctx: VerifyCtx, method: TfaMethod, step: number, now: number): Promise<never> {
  // The next code the method accepts is the one after the newest step already used.
  const used = Math.max(step, method.last_totp_step ?? step);
  const wait = Math.max(1, Math.ceil(((used + 1) * TOTP_PERIOD_S * 1000 - now) / 1000));
  return Promise.reject(
    ctx.fail(
      `This code was already used; the next code of your authenticator app comes in ${wait} s`,
      lockedExtra(method.fail_count, method.locked_until),
    ),
  );
}

async function failed(
  deps: VerifyDeps,
  user: User,
  method: TfaMethod | null,
  claim: Claim,
  ctx: VerifyCtx,
  kind: string,
): Promise<never> {
  const now = deps.clock.now();
  await tx(deps.store, async (db) => {
    await recordEvent(db, now, {
      userId: user.id,
      kind: 'failure',
      action: ctx.action,
      method: kind,
      tfaMethodId: method?.id ?? null,
      ip: ctx.ip,
    });
    if (method && claim.lockedNow && claim.lockedUntil !== null) {
      await recordEvent(db, now, {
        userId: user.id,
        kind: 'lock',
        action: ctx.action,
        method: kind,
        tfaMethodId: method.id,
        ip: ctx.ip,
      });
      await enqueueNotice(db, now, user.email, `${method.id}:${claim.lockedUntil}`, {
        kind: 'method_locked',
        method: method.method,
        label: method.label,
        untilMs: claim.lockedUntil,
      });
      await recordWebhookEvents(db, now, [
        tfaEvent(user.id, 'tfa.locked', {
          method: method.method,
          tfa_method_id: method.id,
          locked_until: claim.lockedUntil / 1000,
        }),
      ]);
    }
  });
  if (method && claim.lockedNow) deps.kickOutbox();
  await recordSignInFailure(deps, user.email);
  throw ctx.fail(undefined, lockedExtra(claim.failCount, claim.lockedUntil));
}

/** The success side of a verification: inside the action's transaction (`db`). */
async function succeeded(
  db: Kysely<DB>,
  user: User,
  method: TfaMethod | null,
  now: number,
  ctx: VerifyCtx,
  kind: string,
): Promise<void> {
  if (method) await markMethodUsed(db, method.id, now);
  await recordEvent(db, now, {
    userId: user.id,
    kind: 'success',
    action: ctx.action,
    method: kind,
    tfaMethodId: method?.id ?? null,
    ip: ctx.ip,
  });
  await clearSignInFailures(db, user.email);
}
