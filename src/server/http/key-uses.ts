// last_used_at of API keys: a request that uses a key not marked in the last minute queues the
// key here, and one statement a second writes every queued key (conditional on the stored value
// being older, so processes and nodes sharing the database write each key once a minute).
// Requests never wait for it (write-behind.ts); what is still queued when the app closes is
// written then.
import { sql, type Kysely } from 'kysely';
import type { Deps } from '../deps.types.js';
import type { DB } from '../db/schema.js';
import { caseById } from '../db/case-by-id.js';
import { flushUses, queueUse, WriteBehind, type MergeUse } from './write-behind.js';

/** How stale a key's last_used_at may get before a use of it is written again. */
export const LAST_USED_RESOLUTION_MS = 60_000;

/** Key id → its latest use not yet written. */
export class KeyUseBuffer extends WriteBehind<number, number> {}

/** Of two uses of a key, the latest is kept. */
const latest: MergeUse<number> = (had, at) => Math.max(had ?? 0, at);

type KeyUseDeps = Pick<Deps, 'db' | 'log' | 'keyUses'>;

/**
 * Queues the use of a key whose stored last_used_at (`used`) is a minute old or unset; true when
 * it did (the caller queues the use's address the same way: modules/audit/audit.addresses.ts).
 */
export function recordKeyUse(deps: KeyUseDeps, keyId: number, used: number | null, now: number): boolean {
  if (used !== null && now - used < LAST_USED_RESOLUTION_MS) return false;
  queueUse(deps.keyUses, keyId, now, latest, () => void flushKeyUses(deps));
  return true;
}

/**
 * Writes every queued key use now, one statement per 500 keys. Never rejects: a batch that could
 * not be written is queued again (unless a newer use came meanwhile), to go with the next batch,
 * and the failure logged.
 */
export function flushKeyUses(deps: KeyUseDeps): Promise<void> {
  return flushUses(
    deps.keyUses,
    latest,
    (uses) => markKeysUsed(deps.db, uses, LAST_USED_RESOLUTION_MS),
    (err, keys) => deps.log.warn({ err, keys }, 'recording last_used_at failed; kept for the next write'),
  );
}

async function markKeysUsed(
  db: Kysely<DB>,
  uses: [id: number, at: number][],
  resolutionMs: number,
): Promise<void> {
  if (uses.length === 0) return;
  const at = caseById(
    uses.map(([id, t]) => [id, sql`${t}`]),
    'last_used_at',
  );
  await db
    .updateTable('api_keys')
    .set({ last_used_at: at })
    .where(
      'id',
      'in',
      uses.map(([id]) => id),
    )
    .where((eb) =>
      eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<=', sql<number>`${at} - ${resolutionMs}`)]),
    )
    .execute();
}
