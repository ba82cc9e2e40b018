// The user object of the user and login replies: named fields id, email,
// full_name, tfa_status; the rest is what clients of a GPU cloud read (balance, email_verified).
// `fullname` repeats full_name under the name the official CLI's user table reads.
import type { User } from '../../identity.js';

export function maskPhone(phone: string | null): string | null {
  if (!phone) return null;
  const digits = phone.replace(/\D/g, '');
  return `***${digits.slice(-4)}`;
}

export function toSeconds(ms: number | null): number | null {
  return ms === null ? null : ms / 1000;
}

export function userView(u: User, extra: { teamId?: number | null } = {}) {
  return {
    id: u.id,
    email: u.email,
    full_name: u.full_name,
    fullname: u.full_name,
    username: u.email,
    tfa_status: u.tfa_status,
    tfa_enabled: u.tfa_status !== 'disabled',
    email_verified: u.email_verified_at !== null,
    email_verified_at: toSeconds(u.email_verified_at),
    phone_number: maskPhone(u.phone_number),
    is_admin: u.is_admin === 1,
    sms_fraud: u.sms_fraud === 1,
    balance: u.balance_micros / 1_000_000,
    credit: u.balance_micros / 1_000_000,
    team_id: extra.teamId ?? null,
    created_at: u.created_at / 1000,
  };
}

/** The user row's schema: its contract (src/contract/schemas/accounts.ts). */
export { userSchema } from '../../../contract/schemas/accounts.js';
