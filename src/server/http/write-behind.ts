// A write-behind queue for bookkeeping that requests never wait for (the last use of an API key,
// the addresses that used an account): a use is queued under its key, merged with one still
// queued there, and one write a second stores every queued use, 500 per statement. A batch that
// could not be written is merged back into the queue, to go with the next write, and the failure
// logged: a flush never rejects. Each queue's owner writes what is still queued when the app
// closes.
import { chunks } from '../db/chunks.js';

/** How long a use waits for the others of its batch. */
const FLUSH_DELAY_MS = 1000;
/** Uses per statement. */
const CHUNK = 500;

export class WriteBehind<K, V> {
  /** Key → its use not yet written (merged). */
  readonly uses = new Map<K, V>();
  timer: NodeJS.Timeout | null = null;
  flushing: Promise<void> = Promise.resolve();
}

/** Merges a use into the one queued under the same key (undefined: none); returns what to keep. */
export type MergeUse<V> = (had: V | undefined, use: V) => V;

/** Queues `use` under `key`; `flush` runs a second later unless a run is already scheduled. */
export function queueUse<K, V>(
  b: WriteBehind<K, V>,
  key: K,
  use: V,
  merge: MergeUse<V>,
  flush: () => void,
): void {
  b.uses.set(key, merge(b.uses.get(key), use));
  if (b.timer) return;
  b.timer = setTimeout(() => {
    b.timer = null;
    flush();
  }, FLUSH_DELAY_MS);
  b.timer.unref();
}

/**
 * Writes every queued use now (after any write still running), `write` taking up to 500 at a
 * time. Never rejects: on a failure the batch is merged back and `failed` told how many it held.
 */
export function flushUses<K, V>(
  b: WriteBehind<K, V>,
  merge: MergeUse<V>,
  write: (uses: [K, V][]) => Promise<void>,
  failed: (err: unknown, count: number) => void,
): Promise<void> {
  if (b.timer) {
    clearTimeout(b.timer);
    b.timer = null;
  }
  b.flushing = b.flushing.then(async () => {
    if (b.uses.size === 0) return;
    const batch = [...b.uses];
    b.uses.clear();
    try {
      for (const part of chunks(batch, CHUNK)) await write(part);
    } catch (err) {
      for (const [k, v] of batch) b.uses.set(k, merge(b.uses.get(k), v));
      failed(err, batch.length);
    }
  });
  return b.flushing;
}
