// The addresses that used each account (GET /users/me/ipaddrs): a sign-in, an audited request
// or a use of an API key queues (user, address, time) here, and one statement a second writes
// every queued pair, an upsert on the unique (user_id, ip) index, so several processes and nodes
// writing the same pair at once leave one row (first_seen the earliest, last_seen the latest).
// Requests never wait for it; what is still queued when the app closes is written then.
// API key uses come from http/key-uses.ts, which marks a key at most once a minute: a key's
// address is taken at that mark, so an address that used a key only in the minute after another
// address's use appears at its next marked use.
import type { Deps } from '../../deps.types.js';
import { flushUses, queueUse, WriteBehind, type MergeUse } from '../../http/write-behind.js';
import { upsertAddresses, type AddressUse } from './audit.repo.js';

/** `user_id ip` → the pair's earliest and latest use not yet written (http/write-behind.ts). */
export class AddressUseBuffer extends WriteBehind<string, AddressUse> {}

type AddressDeps = Pick<Deps, 'db' | 'log' | 'addressUses'>;

/** Of two uses of a pair, the earliest first and the latest last are kept. */
const span: MergeUse<AddressUse> = (had, u) => {
  if (!had) return u;
  had.first = Math.min(had.first, u.first);
  had.last = Math.max(had.last, u.last);
  return had;
};

/** Queues a use of the account `userId` from `ip` (a normalised address; null: nothing to keep). */
export function recordAddressUse(deps: AddressDeps, userId: number, ip: string | null, now: number): void {
  if (ip === null) return;
  queueUse(deps.addressUses, `${userId} ${ip}`, { userId, ip, first: now, last: now }, span, () => {
    void flushAddressUses(deps);
  });
}

/**
 * Writes every queued use now. Never rejects: a batch that could not be written is queued again
 * (merged with what came meanwhile) for the next write, and the failure logged.
 */
export function flushAddressUses(deps: AddressDeps): Promise<void> {
  return flushUses(
    deps.addressUses,
    span,
    (uses) =>
      upsertAddresses(
        deps.db,
        uses.map(([, u]) => u),
      ),
    (err, pairs) =>
      deps.log.warn(
        { err: (err as Error)?.message ?? String(err), pairs },
        'recording login addresses failed; kept for the next write',
      ),
  );
}
