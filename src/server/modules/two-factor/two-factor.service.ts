// 2FA status, TOTP setup, the add-method authorization and method updates.
// Adding, removing and backup codes: two-factor.methods.ts. Login: two-factor.login.ts.
import type { Deps } from '../../deps.types.js';
import type { User } from '../../identity.js';
import { tx } from '../../db/connection.js';
import { AppError, assertNever } from '../../errors.js';
import { newTotpSecret, provisioningUri } from './two-factor.codes.js';
import { TfaErrors } from './two-factor.errors.js';
import {
  activeMethods,
  authorizedUntil,
  consumeChallenge,
  countUnusedBackupCodes,
  findChallenge,
  grantAuthorization,
  insertChallenge,
  recordEvent,
  clearOtherPrimaries,
  updateMethodRow,
} from './two-factor.repo.js';
import {
  emailSentMsg,
  newSecret,
  sendEmailCode,
  sendSmsCode,
  requireVerifiedEmail,
  smsSentMsg,
} from './two-factor.send.js';
import {
  actOnVerified,
  methodById,
  singleOfType,
  verifyFactor,
  type FactorInput,
  type TfaMethodName,
} from './two-factor.verify.js';
import { methodView } from './two-factor.view.js';
import { sha256Hex } from '../../crypto.js';

type SvcDeps = Pick<Deps, 'db' | 'store' | 'dialect' | 'clock' | 'config' | 'sms' | 'kickOutbox'>;

export async function tfaStatus(deps: SvcDeps, user: User) {
  const now = deps.clock.now();
  const [methods, remaining, until] = await Promise.all([
    activeMethods(deps.db, user.id),
    countUnusedBackupCodes(deps.db, user.id),
    authorizedUntil(deps.db, user.id),
  ]);
  return {
    success: true,
    tfa_enabled: user.tfa_status !== 'disabled',
    methods: methods.map((m) => methodView(m, now)),
    backup_codes_remaining: remaining,
    new_method_authorized: until !== null && until > now,
  };
}

/** A fresh secret and its otpauth:// URI; nothing is stored (confirm-new adds the method). */
export function totpSetup(user: User): { secret: string; provisioning_uri: string } {
  const secret = newTotpSecret();
  return { secret, provisioning_uri: provisioningUri(secret, user.email) };
}

const AUTHORIZED_MSG = 'Authorized: you may add a 2FA method within the next 30 minutes';

/** POST authorize-new-method (step 1). */
export async function authorizeStart(
  deps: SvcDeps,
  user: User,
  input: { tfa_method?: TfaMethodName; tfa_method_id?: number; backup_code?: string },
  ip: string | null,
): Promise<{ success: true; secret?: string; msg?: string }> {
  const now = deps.clock.now();
  if (input.backup_code !== undefined) {
    // No send/verify round trip: a valid backup code authorizes directly.
    const v = await verifyFactor(
      deps,
      user,
      { backup_code: input.backup_code },
      { action: 'authorize', purposes: [], fail: TfaErrors.verificationFailed, ip },
    );
    // The code is spent in the transaction that opens the window: both or neither.
    await actOnVerified(deps, v, (db) =>
      grantAuthorization(db, user.id, now + deps.config.tfa.authorizationTtlS * 1000, now),
    );
    return { success: true, msg: AUTHORIZED_MSG };
  }
  const methods = await activeMethods(deps.db, user.id);
  const byId = input.tfa_method_id !== undefined ? await methodById(deps, user, input.tfa_method_id) : null;
  // A user with no methods is always verified by e-mail.
  let kind: TfaMethodName =
    methods.length === 0
      ? 'email'
      : (input.tfa_method ?? byId?.method ?? (methods.find((m) => m.is_primary === 1) ?? methods[0]!).method);
  if (byId && input.tfa_method && methods.length > 0 && input.tfa_method !== byId.method) {
    throw TfaErrors.badRequest(
      `tfa_method_id ${byId.id} is a ${byId.method} method, not ${input.tfa_method}`,
    );
  }
  if (methods.length === 0) kind = 'email';
  try {
    switch (kind) {
      case 'email': {
        requireVerifiedEmail(user);
        const { secret } = await sendEmailCode(deps, user, { viaSecret: false, purpose: 'authorize' });
        // Where the code went, as every send says.
        return { success: true, secret, msg: emailSentMsg(user.email) };
      }
      case 'sms': {
        const method = byId ?? singleOfType(methods, 'sms');
        if (!method) throw TfaErrors.notFound('No SMS method is configured on this account');
        const { secret, phone } = await sendSmsCode(
          deps,
          { user, viaSecret: false, emailExempt: false },
          { tfa_method_id: method.id },
          { resend: false, forcePurpose: 'authorize' },
        );
        return { success: true, secret, msg: smsSentMsg(phone) };
      }
      case 'totp': {
        const method = byId ?? singleOfType(methods, 'totp');
        if (!method) throw TfaErrors.notFound('No TOTP method is configured on this account');
        const s = newSecret();
        await insertChallenge(deps.db, {
          userId: user.id,
          secretHash: s.hash,
          purpose: 'authorize',
          method: 'totp',
          tfaMethodId: method.id,
          phone: null,
          now,
          ttlMs: deps.config.tfa.challengeTtlS * 1000,
        });
        return { success: true, secret: s.secret };
      }
      default:
        return assertNever(kind, 'tfa_method');
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw TfaErrors.challengeCreationFailed();
  }
}

/** PUT authorize-new-method (step 2): the code of the pending challenge opens the 30-minute window. */
export async function authorizeConfirm(
  deps: SvcDeps,
  user: User,
  input: { code?: string; secret?: string },
  ip: string | null,
) {
  if (input.code === undefined || input.secret === undefined) throw TfaErrors.missingParams();
  const now = deps.clock.now();
  const c = await findChallenge(deps.db, sha256Hex(input.secret));
  if (!c || c.user_id !== user.id) throw TfaErrors.challengeNotFound();
  if (c.purpose !== 'authorize' || c.consumed_at !== null) throw TfaErrors.noPendingAuthorization();
  if (c.expires_at <= now) throw TfaErrors.expired();
  const factor: FactorInput = { tfa_method: c.method ?? 'email', code: input.code, secret: input.secret };
  if (c.tfa_method_id !== null) factor.tfa_method_id = c.tfa_method_id;
  const v = await verifyFactor(deps, user, factor, {
    action: 'authorize',
    purposes: ['authorize'],
    fail: TfaErrors.verificationFailed,
    ip,
  });
  // The verification, the challenge and the window commit together.
  await actOnVerified(deps, v, async (db) => {
    // TOTP codes don't consume the challenge themselves; a code challenge already is consumed.
    if (c.method === 'totp' && !(await consumeChallenge(db, c.id, now)))
      throw TfaErrors.noPendingAuthorization();
    await grantAuthorization(db, user.id, now + deps.config.tfa.authorizationTtlS * 1000, now);
  });
  return { success: true, msg: AUTHORIZED_MSG };
}

/** PUT update: label and primary flag of an SMS or TOTP method. */
export async function updateMethod(
  deps: SvcDeps,
  user: User,
  input: { tfa_method?: TfaMethodName; tfa_method_id?: number; label?: string; is_primary?: boolean },
  ip: string | null,
) {
  if (input.tfa_method === 'email')
    throw TfaErrors.invalidMethod('E-mail is not a stored method and cannot be updated');
  let method;
  if (input.tfa_method_id !== undefined) {
    method = await methodById(deps, user, input.tfa_method_id);
    if (input.tfa_method && input.tfa_method !== method.method)
      throw TfaErrors.badRequest(`tfa_method_id ${method.id} is a ${method.method} method`);
  } else if (input.tfa_method) {
    method = singleOfType(await activeMethods(deps.db, user.id), input.tfa_method);
    if (!method) throw TfaErrors.notFound(`No ${input.tfa_method} method is configured on this account`);
  } else {
    throw TfaErrors.badRequest(
      'tfa_method_id (or tfa_method when one method of that type exists) is required',
    );
  }
  if (input.label === undefined && input.is_primary === undefined)
    throw TfaErrors.badRequest('Nothing to update: pass label or is_primary');
  const now = deps.clock.now();
  const id = method.id;
  const updated = await tx(deps.store, async (db) => {
    if (input.is_primary === true) {
      // One primary per account: clear the others in the same transaction.
      await clearOtherPrimaries(db, user.id, id);
    }
    const row = await updateMethodRow(db, id, {
      ...(input.label !== undefined ? { label: input.label } : {}),
      ...(input.is_primary !== undefined ? { is_primary: input.is_primary ? 1 : 0 } : {}),
    });
    if (!row) throw TfaErrors.notFound();
    await recordEvent(db, now, {
      userId: user.id,
      kind: 'change',
      action: 'method_updated',
      method: row.method,
      tfaMethodId: row.id,
      ip,
    });
    return row;
  });
  return { success: true, msg: '2FA method updated', method: methodView(updated, now) };
}
