// Lists too long for one statement go in chunks. SQLite refuses a statement with more than 32,766
// bound parameters, so a list of ids or rows from a large fleet is written or read a slice at a
// time; each caller picks the slice's size from how many parameters one element takes.

/** Ids per statement where each id is one parameter: far below SQLite's limit, with room to spare. */
export const IDS_PER_STATEMENT = 500;

/** `items` in consecutive slices of at most `size` elements, in order; none for an empty list. */
export function* chunks<T>(items: readonly T[], size: number): Generator<T[]> {
  if (!Number.isSafeInteger(size) || size < 1)
    throw new RangeError(`chunk size must be a positive integer, not ${size}`);
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}
