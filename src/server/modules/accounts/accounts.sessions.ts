// Sessions: `cli` sessions are Bearer tokens handed out as `session_key` after a 2FA login;
// `cookie` sessions back the browser flow. Both are 256-bit random tokens stored as SHA-256.
// A session never holds more power than the credential that made it: a 2FA login through an API
// key records that key and its permissions, and the session has exactly those permissions and
// ends when the key is revoked. A password login (no key) makes a full-scope session.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import { newToken, sha256Hex } from '../../crypto.js';
import { SESSION_KEY_PREFIX } from '../../identity.js';
import type { Permissions } from '../../../contract/permissions.js';
import { insertSession } from './accounts.repo.js';

export interface SessionOrigin {
  /** The API key the login was made with; null for a password login. */
  apiKeyId: number | null;
  /** Its permissions; null: full. */
  permissions: Permissions | null;
}

export const PASSWORD_LOGIN: SessionOrigin = { apiKeyId: null, permissions: null };

export async function createSession(
  db: Kysely<DB>,
  p: {
    userId: number;
    teamId: number | null;
    kind: 'cli' | 'cookie';
    isAdmin: boolean;
    now: number;
    ttlS: number;
    origin: SessionOrigin;
  },
): Promise<{ token: string; id: number; expiresAt: number }> {
  const token = newToken(p.kind === 'cli' ? SESSION_KEY_PREFIX : 'orc_');
  const expiresAt = p.now + p.ttlS * 1000;
  const id = await insertSession(db, {
    user_id: p.userId,
    team_id: p.teamId,
    kind: p.kind,
    token_hash: sha256Hex(token),
    is_admin: p.isAdmin ? 1 : 0,
    created_at: p.now,
    expires_at: expiresAt,
    api_key_id: p.origin.apiKeyId,
    permissions: p.origin.permissions === null ? null : JSON.stringify(p.origin.permissions),
  });
  return { token, id, expiresAt };
}
