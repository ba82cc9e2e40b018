// Sessions: `cli` sessions are Bearer tokens handed out as `session_key` after a 2FA login;
// `cookie` sessions back the browser flow. Both are 256-bit random tokens stored as SHA-256.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import { newToken, sha256Hex } from '../../crypto.js';
import { SESSION_KEY_PREFIX } from '../../http/auth.js';

export async function createSession(
  db: Kysely<DB>,
  p: {
    userId: number;
    teamId: number | null;
    kind: 'cli' | 'cookie';
    isAdmin: boolean;
    now: number;
    ttlS: number;
  },
): Promise<{ token: string; id: number; expiresAt: number }> {
  const token = newToken(p.kind === 'cli' ? SESSION_KEY_PREFIX : 'orc_');
  const expiresAt = p.now + p.ttlS * 1000;
  const row = await db
    .insertInto('sessions')
    .values({
      user_id: p.userId,
      team_id: p.teamId,
      kind: p.kind,
      token_hash: sha256Hex(token),
      is_admin: p.isAdmin ? 1 : 0,
      created_at: p.now,
      expires_at: expiresAt,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { token, id: row.id, expiresAt };
}
