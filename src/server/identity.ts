// Who a request acts as, below HTTP: the user row, the credential's context, and the prefixes
// that tell the kinds of keys apart. The auth hook (http/auth.ts) builds an AuthContext; services
// and repos take one and never import anything from http/.
import type { Selectable } from 'kysely';
import type { Permissions } from '../contract/permissions.js';
import type { UsersTable } from './db/tables/foundation.js';

/** An account's API key begins with this. */
export const API_KEY_PREFIX = 'or_';
/** An instance_api_key (one instance's start, stop and destroy) begins with this. */
export const INSTANCE_KEY_PREFIX = 'ori_';
/** A session key from a 2FA login (CLI flow) begins with this. */
export const SESSION_KEY_PREFIX = 'ors_';

export type User = Selectable<UsersTable>;

export interface AuthContext {
  user: User;
  via: 'api_key' | 'instance_key' | 'session' | 'cookie';
  keyId: number | null;
  sessionId: number | null;
  /**
   * The API key behind the credential: the key itself, or the key whose 2FA login made the
   * session (null for a password login's session).
   */
  originKeyId: number | null;
  teamId: number | null;
  permissions: Permissions | null;
  /** Set for an instance_api_key: the one instance it may start, stop or destroy. */
  instanceId: number | null;
  isAdminSession: boolean;
  /** The credential as presented (returned as `api_key` by /users/current, compat). */
  credential: string;
}
