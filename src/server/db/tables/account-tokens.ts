// The accounts module's single-use e-mailed links (migration 031-account-tokens).

export interface AccountTokensTable {
  /** The token's first part, by which its row is found. */
  selector: string;
  purpose: 'signup' | 'reset';
  /** SHA-256 (hex) of the token's second part; the part itself is only in the e-mail. */
  verifier_hash: string;
  /** Lower-cased. */
  email: string;
  /** reset: the account. */
  user_id: number | null;
  /** signup: the chosen password, hashed; the account is made with it when the link is followed. */
  password_hash: string | null;
  full_name: string | null;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export interface AccountTokenTables {
  account_tokens: AccountTokensTable;
}
