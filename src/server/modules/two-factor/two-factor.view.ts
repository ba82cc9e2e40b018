// The 2FA method record as replies show it (its schema: src/contract/schemas/two-factor.ts).
// Phone numbers are masked to their last 4 digits; a TOTP secret is never returned.
import { maskPhone, toSeconds } from '../accounts/accounts.view.js';
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
