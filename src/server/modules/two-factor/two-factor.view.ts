// Reply shapes of the 2FA module: the method record and the status response.
// Phone numbers are masked to their last 4 digits; a TOTP secret is never returned.
import { maskPhone, toSeconds } from '../accounts/accounts.view.js';
import { errorSchema } from '../../http/schemas.js';
import type { TfaMethod } from './two-factor.repo.js';

export function methodView(m: TfaMethod, now: number) {
  const locked = m.locked_until !== null && m.locked_until > now;
  const lockExpired = m.locked_until !== null && !locked;
  return {
    id: m.id,
    user_id: m.user_id,
    method: m.method,
    label: m.label,
    phone_number: m.method === 'sms' ? maskPhone(m.phone_number) : null,
    is_primary: m.is_primary === 1,
    // An expired lock means a fresh count (two-factor.verify.ts claimAttempt).
    fail_count: lockExpired ? 0 : m.fail_count,
    locked_until: locked ? Math.ceil(m.locked_until! / 1000) : null,
    created_at: toSeconds(m.created_at)!,
    // A number, as the published record has it: a method never used since it was made shows when it was made.
    last_used: toSeconds(m.last_used ?? m.created_at)!,
  };
}

export const methodSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    user_id: { type: 'integer' },
    method: { type: 'string', enum: ['sms', 'totp'] },
    label: { type: 'string' },
    phone_number: { type: ['string', 'null'], description: 'Masked: only the last 4 digits' },
    is_primary: { type: 'boolean' },
    fail_count: { type: 'integer' },
    locked_until: { type: ['number', 'null'] },
    created_at: { type: 'number' },
    last_used: { type: 'number' },
  },
} as const;

/** Error replies of the 2FA routes (tfa_locked / 2fa_verification_failed add fail_count, locked_until). */
export const tfaErrorSchema = {
  ...errorSchema,
  properties: {
    ...errorSchema.properties,
    fail_count: { type: 'integer' },
    locked_until: { type: ['number', 'null'] },
  },
} as const;

export const tfaErrors = {
  400: tfaErrorSchema,
  401: tfaErrorSchema,
  403: tfaErrorSchema,
  404: tfaErrorSchema,
  429: tfaErrorSchema,
  500: tfaErrorSchema,
  503: tfaErrorSchema,
} as const;
