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

/** The person behind a team-context credential, with the role they act within. */
export interface TeamActor {
  userId: number;
  email: string;
  teamName: string;
  role: string;
  /** The role's permissions (null: every permission). */
  rolePermissions: Permissions | null;
  isOwner: boolean;
}

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
  /**
   * The team the credential acts for, or null (the personal context). In a team context `user`
   * is the team's own account (its balance, instances, keys' work) and `member` the person.
   */
  teamId: number | null;
  /** Set in a team context: the member acting for the team and their role (teams.auth.ts). */
  member?: TeamActor | null;
  /** In a team context: the key's (or session's) permissions narrowed to the member's role. */
  permissions: Permissions | null;
  /** Set for an instance_api_key: the one instance it may start, stop or destroy. */
  instanceId: number | null;
  isAdminSession: boolean;
  /** The credential as presented (returned as `api_key` by /users/current, compat). */
  credential: string;
}
