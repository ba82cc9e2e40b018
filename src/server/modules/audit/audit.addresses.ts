// The addresses that used each account (GET /users/me/ipaddrs): a sign-in, an audited request
// or a use of an API key queues (user, address, time) here, and one statement a second writes
// every queued pair, an upsert on the unique (user_id, ip) index, so several processes and nodes
// writing the same pair at once leave one row (first_seen the earliest, last_seen the latest).
// Requests never wait for it; what is still queued when the app closes is written then.
// API key uses come from http/key-uses.ts, which marks a key at most once a minute: a key's
// address is taken at that mark, so an address that used a key only in the minute after another
// address's use appears at its next marked use.
import type { Deps } from '../../deps.js';
import { upsertAddresses, type AddressUse } from './audit.repo.js';

/** How long a use waits for the others of its batch. */
const FLUSH_DELAY_MS = 1000;
/** Pairs per statement. */
const CHUNK = 500;

export class AddressUseBuffer {
  /** `user_id ip` → the pair's earliest and latest use not yet written. */
  readonly uses = new Map<string, AddressUse>();
  timer: NodeJS.Timeout | null = null;
  flushing: Promise<void> = Promise.resolve();
}

type AddressDeps = Pick<Deps, 'db' | 'log' | 'addressUses'>;

/** Queues a use of the account `userId` from `ip` (a normalised address; null: nothing to keep). */
export function recordAddressUse(deps: AddressDeps, userId: number, ip: string | null, now: number): void {
  if (ip === null) return;
  const b = deps.addressUses;
  const k = `${userId} ${ip}`;
  const had = b.uses.get(k);
  if (had) {
    had.first = Math.min(had.first, now);
    had.last = Math.max(had.last, now);
  } else b.uses.set(k, { userId, ip, first: now, last: now });
  if (b.timer) return;
  b.timer = setTimeout(() => {
    b.timer = null;
    void flushAddressUses(deps);
  }, FLUSH_DELAY_MS);
  b.timer.unref();
}

/**
 * Writes every queued use now. Never rejects: a batch that could not be written is queued again
 * (merged with what came meanwhile) for the next write, and the failure logged.
 */
export function flushAddressUses(deps: AddressDeps): Promise<void> {
  const b = deps.addressUses;
  if (b.timer) {
    clearTimeout(b.timer);
    b.timer = null;
  }
  b.flushing = b.flushing.then(async () => {
    if (b.uses.size === 0) return;
    const batch = [...b.uses.values()];
    b.uses.clear();
    try {
      for (let i = 0; i < batch.length; i += CHUNK) await upsertAddresses(deps.db, batch.slice(i, i + CHUNK));
    } catch (err) {
      for (const u of batch) {
        const k = `${u.userId} ${u.ip}`;
        const had = b.uses.get(k);
        if (had) {
          had.first = Math.min(had.first, u.first);
          had.last = Math.max(had.last, u.last);
        } else b.uses.set(k, u);
      }
      deps.log.warn(
        { err: (err as Error)?.message ?? String(err), pairs: batch.length },
        'recording login addresses failed; kept for the next write',
      );
    }
  });
  return b.flushing;
}
