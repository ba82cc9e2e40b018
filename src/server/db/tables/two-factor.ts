// Table types: 2FA methods, challenges, backup codes, the add-method authorization window, auth
// events and the SMS send log used by the abuse controls (docs/two-factor.md).
// Conventions: see db/connection.ts (ms timestamps, 0/1 booleans).
import type { Generated } from 'kysely';

/** A configured method. E-mail is never stored as a method. */
export interface TfaMethodsTable {
  id: Generated<number>;
  user_id: number;
  method: 'sms' | 'totp';
  label: string;
  /** E.164; SMS methods only. */
  phone_number: string | null;
  /** TOTP secret, AES-256-GCM encrypted with the server key (crypto.ts encryptSecret). */
  totp_secret_enc: string | null;
  /** Last RFC 6238 time step accepted: a step is never accepted twice. */
  last_totp_step: number | null;
  is_primary: number;
  /** Attempts counted against the lockout (claimed before a code is evaluated). */
  fail_count: number;
  locked_until: number | null;
  created_at: number;
  last_used: number | null;
  /** Soft delete: rows are kept so a legacy account's history is known. */
  deleted_at: number | null;
}

export type ChallengePurpose =
  /** Created by the password login; its secret authenticates the logged-out 2FA calls. */
  | 'login'
  /** A step-up code sent with a Bearer (CLI login, DELETE, regen-backup-codes). */
  | 'verify'
  /** Step 1 of authorize-new-method; its code opens the add-method window on PUT. */
  | 'authorize'
  /** An SMS code sent to a number that is not yet a method; used by confirm-new. */
  | 'setup';

/** A code challenge; its `secret` (tfa_secret) is stored as SHA-256 only. */
export interface TfaChallengesTable {
  id: Generated<number>;
  user_id: number;
  secret_hash: string;
  purpose: ChallengePurpose;
  /** The channel a code went out on (null: none sent yet, e.g. a fresh login challenge). */
  method: 'sms' | 'email' | 'totp' | null;
  tfa_method_id: number | null;
  phone_number: string | null;
  /** HMAC-SHA256 (server key) of the 6-digit code; null when the SMS provider checks codes. */
  code_hmac: string | null;
  /** The SMS provider's verification id (twilio), to cancel it on resend. */
  provider_ref: string | null;
  tries: number;
  created_at: number;
  sent_at: number | null;
  expires_at: number;
  consumed_at: number | null;
}

export interface TfaBackupCodesTable {
  id: Generated<number>;
  user_id: number;
  /** HMAC-SHA256 with the server key of the normalised code: a dump alone does not reveal it. */
  code_hmac: string;
  created_at: number;
  used_at: number | null;
  deleted_at: number | null;
}

/** The 30-minute add-method window. One row per user. */
export interface TfaAuthorizationsTable {
  user_id: number;
  authorized_until: number;
  created_at: number;
}

/** Auth events: what happened, with which method type; never a code or secret. */
export interface AuthEventsTable {
  id: Generated<number>;
  user_id: number;
  kind: 'success' | 'failure' | 'lock' | 'change';
  action: string;
  method: string | null;
  tfa_method_id: number | null;
  ip: string | null;
  created_at: number;
}

/** Every SMS handed to the provider, for the abuse controls. */
export interface SmsSendsTable {
  id: Generated<number>;
  user_id: number;
  phone_number: string;
  purpose: string;
  created_at: number;
}

export interface TwoFactorTables {
  tfa_methods: TfaMethodsTable;
  tfa_challenges: TfaChallengesTable;
  tfa_backup_codes: TfaBackupCodesTable;
  tfa_authorizations: TfaAuthorizationsTable;
  auth_events: AuthEventsTable;
  sms_sends: SmsSendsTable;
}
