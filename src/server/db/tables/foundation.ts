// Table types of the foundation: accounts, teams, keys, sessions, SSH keys, the e-mail outbox.
// Conventions: see db/connection.ts (ms timestamps, 0/1 booleans, micro-dollars, JSON as text).
import type { Generated } from 'kysely';

export interface UsersTable {
  id: Generated<number>;
  email: string; // stored lower-cased; unique
  full_name: string;
  password_hash: string | null;
  email_verified_at: number | null;
  tfa_status: 'enabled' | 'disabled' | 'legacy';
  phone_number: string | null;
  is_admin: number;
  sms_fraud: number;
  balance_micros: number;
  created_at: number;
}

export interface TeamsTable {
  id: Generated<number>;
  name: string;
  created_at: number;
  /** The team's own account (a users row without a password): its balance, instances, SSH keys. */
  account_user_id: number | null;
  /** The member who owns the team (can destroy it; never removed). */
  owner_id: number | null;
  /** Set when the team was destroyed; its name is then free again. */
  deleted_at: number | null;
}

export interface TeamMembersTable {
  team_id: number;
  user_id: number;
  /** The role's name when it was given (the role itself is role_id). */
  role: string;
  created_at: number;
  /** The member's role (team_roles.id). */
  role_id: number | null;
}

export interface ApiKeysTable {
  id: Generated<number>;
  user_id: number;
  team_id: number | null;
  /** 'user' (account key) or 'instance' (the restricted instance_api_key). */
  kind: 'user' | 'instance';
  instance_id: number | null;
  name: string;
  /** SHA-256 (hex) of the key; the key itself is never stored. */
  key_hash: string;
  /** First characters of the key, for recognising it in a listing. */
  key_prefix: string;
  /** JSON: null (full access) or { family: 'read' | 'write' }. */
  permissions: string | null;
  /** JSON: the permissions exactly as the creator gave them (null: none given, or created before). */
  permissions_given: string | null;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface SessionsTable {
  id: Generated<number>;
  user_id: number;
  team_id: number | null;
  /** 'cli' (session_key used as Bearer) or 'cookie' (browser session). */
  kind: 'cli' | 'cookie';
  token_hash: string;
  is_admin: number;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
  /** The API key whose 2FA login made this session; null for a password (cookie) login. */
  api_key_id: number | null;
  /** JSON: the permissions of that key when the session was made; null: full. */
  permissions: string | null;
}

export interface SshKeysTable {
  id: Generated<number>;
  user_id: number;
  public_key: string;
  key_type: string;
  fingerprint: string;
  comment: string;
  created_at: number;
  deleted_at: number | null;
  /** Set for a key attached to that one instance only (not one of the account's keys). */
  instance_id: number | null;
}

/** Transactional outbox of e-mails: written in the same transaction as the change. */
export interface EmailOutboxTable {
  id: Generated<number>;
  /** Unique: a retried enqueue never makes a second e-mail. Also the Message-ID seed. */
  idempotency_key: string;
  to_addr: string;
  subject: string;
  text_body: string;
  html_body: string | null;
  /** What the e-mail is about ('maintenance.client', 'tfa.code', …), for metrics and tests. */
  category: string;
  created_at: number;
  available_at: number;
  attempts: number;
  last_error: string | null;
  locked_by: string | null;
  locked_until: number | null;
  sent_at: number | null;
  failed_at: number | null;
}

/** Per-account failure counter and lock (accounts/accounts.lockout.ts). */
export interface AccountLockoutsTable {
  /** The account's lower-cased e-mail. */
  subject: string;
  failures: number;
  window_started_at: number;
  locked_until: number | null;
  /** How many locks in a row (each doubles the next one's length); a successful login resets it. */
  lock_level: number;
  updated_at: number;
}

export interface FoundationTables {
  users: UsersTable;
  teams: TeamsTable;
  team_members: TeamMembersTable;
  api_keys: ApiKeysTable;
  sessions: SessionsTable;
  ssh_keys: SshKeysTable;
  email_outbox: EmailOutboxTable;
  account_lockouts: AccountLockoutsTable;
}
