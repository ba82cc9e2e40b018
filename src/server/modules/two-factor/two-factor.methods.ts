// Adding a method (confirm-new), removing one (DELETE tfa/), and backup codes (regen).
// Decisions that depend on the user's other rows (first method, last method) run in one
// transaction holding the user's row lock (repo.lockUser); duplicates are refused by unique
// indexes (migration 004). Each verify-then-act path commits the verification's consuming writes
// and its change in one transaction (two-factor.verify.ts actOnVerified): never one without the other.
import type { Kysely } from 'kysely';
import type { Deps } from '../../deps.types.js';
import type { DB } from '../../db/schema.js';
import type { User } from '../../identity.js';
import { encryptSecret } from '../../crypto.js';
import { isUniqueViolation, tx } from '../../db/connection.js';
import { E164_RE } from '../accounts/accounts.service.js';
import {
  backupCodeHmac,
  canonicalTotpSecret,
  isTotpSecret,
  matchTotp,
  newBackupCodeSet,
  LABEL_MAX,
} from './two-factor.codes.js';
import { TfaErrors, lockedExtra } from './two-factor.errors.js';
import { enqueueNotice } from './two-factor.mail.js';
import {
  activeMethods,
  authorizedUntil,
  clearAuthorization,
  countAllMethodRows,
  insertBackupCodes,
  lockUser,
  recordEvent,
  softDeleteBackupCodes,
  type TfaMethod,
  insertMethod,
  setPrimary,
  setTfaStatus,
  softDeleteMethod,
} from './two-factor.repo.js';
import {
  actOnVerified,
  liveChallenge,
  methodById,
  verifyFactor,
  type FactorInput,
  type Verification,
} from './two-factor.verify.js';
import { recordEvents as recordWebhookEvents, tfaEvent } from '../webhooks/webhooks.events.js';

type SvcDeps = Pick<Deps, 'db' | 'store' | 'dialect' | 'clock' | 'config' | 'sms' | 'kickOutbox'>;
export const DISABLED_MSG = '2FA Successfully Disabled';

/** Replaces the user's backup codes with a fresh set of 10; returns them in plaintext (once). */
async function issueBackupCodes(db: Kysely<DB>, key: Buffer, userId: number, now: number): Promise<string[]> {
  const codes = newBackupCodeSet();
  await softDeleteBackupCodes(db, userId, now);
  await insertBackupCodes(
    db,
    userId,
    codes.map((c) => backupCodeHmac(key, c)),
    now,
  );
  return codes;
}

export interface ConfirmInput {
  tfa_method?: string;
  code?: string;
  secret?: string;
  phone_number?: string;
  label?: string;
}

/** POST confirm-new: adds an SMS or TOTP method inside the add-method window. */
export async function confirmNew(deps: SvcDeps, user: User, given: ConfirmInput, ip: string | null) {
  // Without tfa_method the method is SMS when a phone number comes with it, else TOTP: the
  // official CLI's `tfa activate CODE --secret S` sends none for an authenticator app.
  const input = { ...given, tfa_method: given.tfa_method ?? (given.phone_number ? 'sms' : 'totp') };
  if (input.tfa_method === 'email')
    throw TfaErrors.invalidMethod('E-mail cannot be added as a method: use sms or totp');
  if (input.tfa_method !== 'sms' && input.tfa_method !== 'totp')
    throw TfaErrors.invalidMethod('tfa_method must be sms or totp');
  if (input.code === undefined || input.secret === undefined) throw TfaErrors.missingParams();
  if (!/^\d{6}$/.test(input.code)) throw TfaErrors.badRequest('code must be a 6-digit string');
  const label = (input.label ?? '').trim();
  if (label.length > LABEL_MAX) throw TfaErrors.badRequest(`label must be at most ${LABEL_MAX} characters`);
  const now = deps.clock.now();
  const until = await authorizedUntil(deps.db, user.id);
  if (until === null || until <= now) throw TfaErrors.authorizationRequired();
  const existing = await activeMethods(deps.db, user.id);

  let verification: Verification | null = null;
  let values: {
    method: 'sms' | 'totp';
    phone_number: string | null;
    totp_secret_enc: string | null;
    last_totp_step: number | null;
  };
  if (input.tfa_method === 'totp') {
    if (!isTotpSecret(input.secret))
      throw TfaErrors.badRequest('secret must be the base32 secret from /api/v0/tfa/totp-setup/');
    if (existing.some((m) => m.method === 'totp'))
      throw TfaErrors.duplicate('A TOTP method is already configured');
    const secret = canonicalTotpSecret(input.secret);
    const step = matchTotp(secret, input.code, now);
    if (step === null) {
      await recordEvent(deps.db, now, {
        userId: user.id,
        kind: 'failure',
        action: 'confirm_new',
        method: 'totp',
        ip,
      });
      throw TfaErrors.verificationFailed(undefined, lockedExtra(0, null));
    }
    // The step that confirmed the method is spent: it can't also log in.
    values = {
      method: 'totp',
      phone_number: null,
      totp_secret_enc: encryptSecret(deps.config.secretKey, secret),
      last_totp_step: step,
    };
  } else {
    if (input.phone_number === undefined) throw TfaErrors.missingPhone();
    const phone = input.phone_number.trim();
    if (!E164_RE.test(phone))
      throw TfaErrors.badRequest('phone_number must be an E.164 number such as +14155550123');
    if (existing.some((m) => m.method === 'sms' && m.phone_number === phone))
      throw TfaErrors.duplicate('This phone number is already an SMS method');
    const challenge = await liveChallenge(deps, user, input.secret, ['setup']);
    if (challenge.method !== 'sms') throw TfaErrors.noChallenge('No SMS code was sent for this secret');
    if (challenge.phone_number !== phone) throw TfaErrors.phoneMismatch();
    verification = await verifyFactor(
      deps,
      user,
      { tfa_method: 'sms', code: input.code, secret: input.secret },
      { action: 'confirm_new', purposes: ['setup'], fail: TfaErrors.verificationFailed, ip },
    );
    values = { method: 'sms', phone_number: phone, totp_secret_enc: null, last_totp_step: null };
  }

  // The SMS code's challenge is consumed in the same transaction as the insert (a duplicate rolls
  // both back); a TOTP confirmation's spent step is stored in the new row itself.
  const v = verification;
  const inTx = <T>(act: (db: Kysely<DB>) => Promise<T>): Promise<T> =>
    v ? actOnVerified(deps, v, (db) => act(db)) : tx(deps.store, act);
  try {
    const out = await inTx(async (db) => {
      await lockUser(db, user.id);
      const first = (await activeMethods(db, user.id)).length === 0;
      const row = await insertMethod(db, {
        user_id: user.id,
        ...values,
        label,
        is_primary: first ? 1 : 0,
        fail_count: 0,
        locked_until: null,
        created_at: now,
        last_used: now,
        deleted_at: null,
      });
      let backupCodes: string[] | undefined;
      if (first) {
        await setTfaStatus(db, user.id, 'enabled');
        backupCodes = await issueBackupCodes(db, deps.config.secretKey, user.id, now);
      }
      await recordEvent(db, now, {
        userId: user.id,
        kind: 'change',
        action: 'method_added',
        method: row.method,
        tfaMethodId: row.id,
        ip,
      });
      await enqueueNotice(db, now, user.email, String(row.id), {
        kind: 'method_added',
        method: row.method,
        label: row.label,
      });
      const added = { method: row.method, tfa_method_id: row.id };
      await recordWebhookEvents(db, now, [
        tfaEvent(user.id, 'tfa.method_added', added),
        ...(first ? [tfaEvent(user.id, 'tfa.enabled', added)] : []),
      ]);
      return { row, backupCodes };
    });
    deps.kickOutbox();
    const msg =
      out.row.method === 'sms' ? 'SMS 2FA method added' : 'Authenticator app (TOTP) 2FA method added';
    return out.backupCodes ? { success: true, msg, backup_codes: out.backupCodes } : { success: true, msg };
  } catch (err) {
    if (isUniqueViolation(err)) throw TfaErrors.duplicate();
    throw err;
  }
}

export interface RemoveInput extends FactorInput {
  target_id?: number;
}

/** DELETE tfa/: removes a method after verification; the last one disables 2FA. */
export async function removeMethod(
  deps: SvcDeps,
  user: User,
  input: RemoveInput,
  ip: string | null,
): Promise<{ success: true; msg: string; remaining_methods?: number }> {
  if (input.backup_code !== undefined && input.target_id === undefined)
    throw TfaErrors.badRequest('target_id is required with backup_code');
  const methods = await activeMethods(deps.db, user.id);
  if (methods.length === 0 && user.tfa_status !== 'legacy')
    throw TfaErrors.badRequest('2FA is not enabled on this account');
  let target: TfaMethod | null =
    input.target_id !== undefined ? await methodById(deps, user, input.target_id) : null;
  const verified = await verifyFactor(deps, user, input, {
    action: 'remove_method',
    purposes: ['verify'],
    fail: TfaErrors.verificationFailed,
    ip,
  });
  const now = deps.clock.now();

  if (methods.length === 0) {
    // A legacy account (no method rows): DELETE disables 2FA; no backup codes exist.
    await actOnVerified(deps, verified, async (db) => {
      await setTfaStatus(db, user.id, 'disabled', 'legacy');
      await recordEvent(db, now, {
        userId: user.id,
        kind: 'change',
        action: 'tfa_disabled',
        method: verified.via,
        ip,
      });
      await enqueueNotice(db, now, user.email, `legacy:${user.id}:${now}`, { kind: 'tfa_disabled' });
      await recordWebhookEvents(db, now, [tfaEvent(user.id, 'tfa.disabled')]);
    });
    deps.kickOutbox();
    return { success: true, msg: DISABLED_MSG };
  }
  target ??= verified.method ?? (methods.length === 1 ? methods[0]! : null);
  if (!target) throw TfaErrors.badRequest('target_id is required: which method should be removed?');
  const removed = target;

  const out = await actOnVerified(deps, verified, async (db) => {
    await lockUser(db, user.id);
    if (!(await softDeleteMethod(db, removed.id, now))) throw TfaErrors.notFound();
    const remaining = await activeMethods(db, user.id);
    await recordEvent(db, now, {
      userId: user.id,
      kind: 'change',
      action: 'method_removed',
      method: removed.method,
      tfaMethodId: removed.id,
      ip,
    });
    await enqueueNotice(db, now, user.email, String(removed.id), {
      kind: 'method_removed',
      method: removed.method,
      label: removed.label,
      disabled: remaining.length === 0,
    });
    if (remaining.length === 0) {
      // The last method: 2FA off, every backup code soft-deleted, no open add-method window.
      await softDeleteBackupCodes(db, user.id, now);
      await clearAuthorization(db, user.id);
      await setTfaStatus(db, user.id, 'disabled');
      await recordWebhookEvents(db, now, [
        tfaEvent(user.id, 'tfa.disabled', { method: removed.method, tfa_method_id: removed.id }),
      ]);
      return 0;
    }
    if (removed.is_primary === 1 && !remaining.some((m) => m.is_primary === 1)) {
      await setPrimary(db, remaining[0]!.id);
    }
    return remaining.length;
  });
  deps.kickOutbox();
  return out === 0
    ? { success: true, msg: DISABLED_MSG }
    : { success: true, msg: '2FA method removed', remaining_methods: out };
}

/**
 * Creates the SMS method of a legacy account from the number on file when it has no method rows
 * at all (active or soft-deleted): its 2FA predates method records. Runs in the
 * regeneration's transaction (`db`, user row locked), after the verification: a wrong code or a
 * crash changes nothing.
 */
async function adoptLegacyMethod(db: Kysely<DB>, user: User, now: number): Promise<void> {
  if (user.tfa_status !== 'legacy' || !user.phone_number) return;
  if ((await countAllMethodRows(db, user.id)) > 0) return;
  const row = await insertMethod(db, {
    user_id: user.id,
    method: 'sms',
    label: '',
    phone_number: user.phone_number,
    totp_secret_enc: null,
    last_totp_step: null,
    is_primary: 1,
    fail_count: 0,
    locked_until: null,
    created_at: now,
    // Its number has just verified this very request.
    last_used: now,
    deleted_at: null,
  });
  await recordEvent(db, now, {
    userId: user.id,
    kind: 'change',
    action: 'legacy_method_created',
    method: 'sms',
    tfaMethodId: row.id,
  });
}

/** PUT regen-backup-codes. */
export async function regenBackupCodes(deps: SvcDeps, user: User, input: FactorInput, ip: string | null) {
  const methods = await activeMethods(deps.db, user.id);
  if (methods.length === 0 && user.tfa_status !== 'legacy')
    throw TfaErrors.badRequest('2FA is not enabled on this account');
  const verified = await verifyFactor(deps, user, input, {
    action: 'regen_backup_codes',
    purposes: ['verify'],
    fail: TfaErrors.verificationFailed,
    ip,
  });
  const now = deps.clock.now();
  // The backup code (or challenge, or TOTP step) is spent in the transaction that issues the new
  // set: a crash between the two can't leave the user with the code spent and no new set.
  const codes = await actOnVerified(deps, verified, async (db) => {
    await lockUser(db, user.id);
    await adoptLegacyMethod(db, user, now);
    const c = await issueBackupCodes(db, deps.config.secretKey, user.id, now);
    // A legacy account is tracked once it has method rows and backup codes.
    if (user.tfa_status === 'legacy' && (await activeMethods(db, user.id)).length > 0) {
      await setTfaStatus(db, user.id, 'enabled', 'legacy');
    }
    await recordEvent(db, now, {
      userId: user.id,
      kind: 'change',
      action: 'backup_codes_regenerated',
      method: verified.via,
      ip,
    });
    await enqueueNotice(db, now, user.email, `${user.id}:${now}`, { kind: 'backup_regenerated' });
    return c;
  });
  deps.kickOutbox();
  return {
    success: true,
    msg: 'Backup codes regenerated; the previous codes no longer work',
    backup_codes: codes,
  };
}
