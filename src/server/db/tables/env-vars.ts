// Table types of the env-vars module: an account's environment variables and the copy of them an
// instance was created with (migration 021). Values are AES-256-GCM encrypted (crypto.ts
// encryptSecret, with the server's secret key); names are stored as given.
import type { Generated } from 'kysely';

/** One variable of one account: (user_id, name) is unique. Times are epoch ms. */
export interface EnvVarsTable {
  id: Generated<number>;
  user_id: number;
  /** An environment variable name: [A-Za-z_][A-Za-z0-9_]*, case-sensitive. */
  name: string;
  /** The value, encryptSecret(config.secretKey, value). */
  value_enc: string;
  created_at: number;
  updated_at: number;
}

/**
 * The account's variables as they were when the instance was created, read in the create's
 * transaction: encryptSecret(config.secretKey, JSON of {NAME: value}). No row when the account
 * had none. The agent gets them in the instance's launch spec, under the instance's own env.
 */
export interface InstanceAccountEnvTable {
  instance_id: number;
  env_enc: string;
}

export interface EnvVarTables {
  env_vars: EnvVarsTable;
  instance_account_env: InstanceAccountEnvTable;
}
