// Single sign-on (migration 035-sso; modules/sso).
import type { Generated } from 'kysely';

/** A started OpenID Connect sign-in, spent once (sso.repo.ts consumeState). */
export interface SsoStatesTable {
  id: Generated<number>;
  /** SHA-256 (hex) of the `state` value; the value itself is never stored. */
  state_hash: string;
  /** The provider's id in the configuration. */
  provider: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

/** The account a provider's subject (`sub`) signs in to. */
export interface SsoIdentitiesTable {
  provider: string;
  subject: string;
  user_id: number;
  /** The e-mail the provider gave at the last sign-in (lower-cased). */
  email: string;
  created_at: number;
  last_login_at: number;
}

export interface SsoTables {
  sso_states: SsoStatesTable;
  sso_identities: SsoIdentitiesTable;
}
