// Lists too long for one statement go in chunks. SQLite refuses a statement with more than 32,766
// bound parameters, so a list of ids or rows from a large fleet is written or read a slice at a
// time; each caller picks the slice's size from how many parameters one element takes.
import { nextTurn } from '../clock.js';

/** Ids per statement where each id is one parameter: far below SQLite's limit, with room to spare. */
export const IDS_PER_STATEMENT = 500;

/** `items` in consecutive slices of at most `size` elements, in order; none for an empty list. */
export function* chunks<T>(items: readonly T[], size: number): Generator<T[]> {
  if (!Number.isSafeInteger(size) || size < 1)
    throw new RangeError(`chunk size must be a positive integer, not ${size}`);
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}

/**
 * chunks(), with a turn of the event loop between two slices (none before the first), for long
 * batches run beside requests: on a SQLite file every statement resolves at once, so without the
 * turns a batch would be one stretch of microtasks that every request waits behind.
 */
export async function* chunksWithTurns<T>(items: readonly T[], size: number): AsyncGenerator<T[]> {
  let n = 0;
  for (const part of chunks(items, size)) {
    if (n++ > 0) await nextTurn();
    yield part;
  }
}
