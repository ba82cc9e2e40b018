// The 2FA error codes, as data. Statuses and codes are those of the published API (docs/two-factor.md);
// messages say what to do next. `tfa_locked` and `2fa_verification_failed` (and, on the login
// endpoint, `2fa_login_failed`) carry `fail_count` and `locked_until` (see lockedExtra).
import { defineErrors } from '../../errors.js';
import { SMS_ERROR_DEFS } from '../sms/sms.errors.js';

export const TfaErrors = defineErrors({
  ...SMS_ERROR_DEFS,
  badRequest: [400, 'bad_request', 'Bad request'],
  authError: [
    403,
    'auth_error',
    'No valid authentication: send a Bearer API key or the tfa_secret of a 2FA login',
  ],
  invalidMethod: [400, 'invalid_tfa_method', 'tfa_method must be one of: sms, totp, email'],
  missingAuthValue: [400, 'missing_auth_value', 'code or backup_code is required'],
  noCredential: [
    401,
    'missing_auth_value',
    'Send a Bearer API key or the tfa_secret (secret) of a 2FA login',
  ],
  missingParams: [400, 'missing_params', 'code and secret are required'],
  emailNotVerified: [400, 'email_not_verified', 'Verify your e-mail address before 2FA codes can be sent'],
  expired: [400, '2fa_expired', 'This 2FA challenge has expired (10 minutes); request a new code'],
  challengeNotFound: [400, 'challenge_not_found', 'No 2FA challenge matches this secret'],
  noChallenge: [
    400,
    'no_challenge_found',
    'No active 2FA challenge for this request (expired or already used); request a new code',
  ],
  challengeExists: [
    400,
    'tfa_challenge_exists',
    // Read by people on the command line and by API integrators alike, so it names both ways.
    'An SMS code was sent to this number recently. To get a new code, resend it: ' +
      '`vastai tfa resend-sms --secret SECRET` (SECRET from that send), ' +
      '`openrig tfa send-sms --resend`, or POST /api/v0/tfa/sms/resend/',
  ],
  authorizationRequired: [
    403,
    'authorization_required',
    'Adding a 2FA method needs a fresh authorization: call authorize-new-method first (valid 30 minutes)',
  ],
  noPendingAuthorization: [
    400,
    'no_pending_authorization',
    'No pending authorization: call POST /api/v0/tfa/authorize-new-method/ first',
  ],
  invalidBackupCode: [401, 'invalid_backup_code', 'Backup code invalid or already used'],
  untracked: [
    400,
    'untracked_2fa_found',
    'This account uses legacy 2FA: regenerate backup codes first (PUT /api/v0/tfa/regen-backup-codes/)',
  ],
  duplicate: [400, 'duplicate_tfa_method', 'This 2FA method is already configured'],
  locked: [
    429,
    'tfa_locked',
    'This 2FA method is locked after too many failed attempts; try again later or use another method',
  ],
  phoneMismatch: [
    400,
    'phone_number_mismatch',
    "The phone number differs from the challenge's or method's number",
  ],
  loginFailed: [400, '2fa_login_failed', '2FA login failed: the code is wrong'],
  verificationFailed: [400, '2fa_verification_failed', 'Verification failed: the code is wrong'],
  teamForbidden: [
    403,
    'team_user_forbidden',
    '2FA can only be managed in the personal context, not with a team key',
  ],
  missingEmail: [400, 'missing_email', 'This account has no e-mail address to send a code to'],
  missingPhone: [
    400,
    'missing_phone_number',
    'A phone number is needed: pass phone_number (E.164) or tfa_method_id',
  ],
  notFound: [404, 'not_found', 'tfa_method_id matches no 2FA method of this account'],
  notConfigured: [
    400,
    'tfa_method_not_configured',
    'The TOTP method has no readable secret; remove it and set it up again',
  ],
  challengeCreationFailed: [
    500,
    'challenge_creation_failed',
    'The 2FA challenge could not be created; retry',
  ],
});

/** The extra fields of `tfa_locked` / `2fa_verification_failed`: locked_until in epoch seconds. */
export function lockedExtra(
  failCount: number,
  lockedUntilMs: number | null,
): { fail_count: number; locked_until: number | null } {
  return {
    fail_count: failCount,
    locked_until: lockedUntilMs === null ? null : Math.ceil(lockedUntilMs / 1000),
  };
}
