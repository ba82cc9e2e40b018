// The SMS error codes, as data. The 2FA module answers with them too (two-factor.errors.ts takes
// these definitions into TfaErrors), so a code means the same whichever module throws it.
import { defineErrors } from '../../errors.js';

export const SMS_ERROR_DEFS = {
  twilioError: [400, 'twilio_error', 'The SMS could not be sent; check the number and try again'],
  preauthPhoneCap: [
    429,
    'preauth_phone_cap',
    'This phone number has been used in too many authorization attempts; try again later',
  ],
  smsRateLimited: [429, 'sms_rate_limited', 'Too many SMS codes requested; wait before requesting another'],
  twilioRateLimited: [
    429,
    'twilio_rate_limited',
    'The SMS provider is rate-limiting requests; wait briefly and retry',
  ],
  unavailable: [503, 'service_unavailable', 'A required service is unavailable; retry'],
  blockedNumber: [400, 'sms_blocked_number', 'SMS to this phone number is blocked (high SMS-pumping risk)'],
  smsFraud: [403, 'sms_fraud_detected', 'SMS sending is disabled for this account; contact support'],
} satisfies Record<string, [number, string, string]>;

export const SmsErrors = defineErrors(SMS_ERROR_DEFS);
