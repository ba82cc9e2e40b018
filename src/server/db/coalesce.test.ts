// The coalescing reader against a fake database: calls made while a statement is in flight share
// the next one, never one already sent; rows reach their own callers; a failing batch is retried
// call by call; a statement that cannot be rewritten safely is never batched.
import { describe, expect, it } from 'vitest';
import { batchText, coalescingReader, MAX_BATCH, placeholderCount } from './coalesce.js';

const SQL = 'SELECT k.id FROM api_keys k WHERE k.key_hash = $1 AND k.user_id = $2';

/** A fake database whose statements finish when the test says so. */
function fakeDb(types: string[] = ['text', 'bigint']) {
  const batches: {
    text: string;
    params: unknown[][];
    finish(rows?: unknown[]): void;
    fail(e: Error): void;
  }[] = [];
  const singles: unknown[][] = [];
  let failSingle: (params: readonly unknown[]) => boolean = () => false;
  const run = <R>(text: string, params: readonly unknown[]) =>
    new Promise<R[]>((resolve, reject) => {
      const arrays = params as unknown[][];
      batches.push({
        text,
        params: arrays,
        // By default each call gets one row naming its own arguments.
        finish: (rows) =>
          resolve(
            (rows ?? arrays[0]!.map((_, i) => ({ b: i + 1, r: { args: arrays.map((a) => a[i]) } }))) as R[],
          ),
        fail: reject,
      });
    });
  const single = <R>(_text: string, params: readonly unknown[]) => {
    singles.push([...params]);
    return failSingle(params)
      ? Promise.reject(new Error('bad argument'))
      : Promise.resolve([{ args: [...params] }] as R[]);
  };
  const reader = coalescingReader(run, single, () => Promise.resolve(types));
  return {
    reader,
    batches,
    singles,
    failWhen(f: (params: readonly unknown[]) => boolean) {
      failSingle = f;
    },
  };
}

/** Two turns of the event loop: a finished statement's bookkeeping, then the next send. */
const turn = async () => {
  for (let i = 0; i < 2; i++) await new Promise((r) => setImmediate(r));
};

/** The reader with its statement's types learnt (the first call goes alone while they are asked). */
async function warm(db: ReturnType<typeof fakeDb>) {
  expect(await db.reader(SQL, ['warm', 0])).toEqual([{ args: ['warm', 0] }]);
  await turn();
  db.singles.length = 0;
}

describe('coalescingReader', () => {
  it('sends calls made together as one statement and gives each caller its own row', async () => {
    const db = fakeDb();
    await warm(db);
    const calls = Array.from({ length: 10 }, (_, i) => db.reader(SQL, [`h${i}`, i]));
    await turn();
    expect(db.batches).toHaveLength(1);
    expect(db.batches[0]!.params).toEqual([
      Array.from({ length: 10 }, (_, i) => `h${i}`),
      [...Array(10).keys()],
    ]);
    expect(db.batches[0]!.text).toBe(batchText(SQL, ['text', 'bigint']));
    db.batches[0]!.finish();
    const rows = await Promise.all(calls);
    rows.forEach((r, i) => expect(r).toEqual([{ args: [`h${i}`, i] }]));
    expect(db.singles).toEqual([]);
  });

  it('never adds a call to a statement already sent: it goes in the next, sent after the first ends', async () => {
    const db = fakeDb();
    await warm(db);
    const first = [db.reader(SQL, ['a', 1]), db.reader(SQL, ['b', 2])];
    await turn();
    expect(db.batches).toHaveLength(1);
    // Made while the first is in flight (a revocation committed just before, say).
    const later = [db.reader(SQL, ['c', 3]), db.reader(SQL, ['d', 4])];
    await turn();
    expect(db.batches).toHaveLength(1);
    expect(db.batches[0]!.params[0]).toEqual(['a', 'b']);
    db.batches[0]!.finish();
    await Promise.all(first);
    await turn();
    expect(db.batches).toHaveLength(2);
    expect(db.batches[1]!.params[0]).toEqual(['c', 'd']);
    db.batches[1]!.finish();
    expect(await Promise.all(later)).toEqual([[{ args: ['c', 3] }], [{ args: ['d', 4] }]]);
  });

  it('sends a lone call as a statement of its own', async () => {
    const db = fakeDb();
    await warm(db);
    expect(await db.reader(SQL, ['x', 9])).toEqual([{ args: ['x', 9] }]);
    expect(db.batches).toEqual([]);
    expect(db.singles).toEqual([['x', 9]]);
  });

  it('answers [] to a call with no row, and drops rows tagged outside the batch', async () => {
    const db = fakeDb();
    await warm(db);
    const calls = [db.reader(SQL, ['a', 1]), db.reader(SQL, ['b', 2]), db.reader(SQL, ['c', 3])];
    await turn();
    db.batches[0]!.finish([
      { b: 3, r: { id: 'c' } },
      { b: 1, r: { id: 'a' } },
      { b: 7, r: { id: 'stray' } },
    ]);
    expect(await Promise.all(calls)).toEqual([[{ id: 'a' }], [], [{ id: 'c' }]]);
  });

  it('carries at most MAX_BATCH calls a statement', async () => {
    const db = fakeDb();
    await warm(db);
    const calls = Array.from({ length: MAX_BATCH + 5 }, (_, i) => db.reader(SQL, [`h${i}`, i]));
    await turn();
    expect(db.batches).toHaveLength(1);
    expect(db.batches[0]!.params[0]).toHaveLength(MAX_BATCH);
    db.batches[0]!.finish();
    await turn();
    await turn();
    expect(db.batches).toHaveLength(2);
    expect(db.batches[1]!.params[0]).toHaveLength(5);
    db.batches[1]!.finish();
    expect((await Promise.all(calls)).map((r) => (r[0] as { args: unknown[] }).args[1])).toEqual([
      ...Array(MAX_BATCH + 5).keys(),
    ]);
  });

  it('retries each call of a failed batch alone, so only the bad one fails', async () => {
    const db = fakeDb();
    await warm(db);
    db.failWhen((p) => p[0] === 'bad');
    const calls = [db.reader(SQL, ['a', 1]), db.reader(SQL, ['bad', 2]), db.reader(SQL, ['c', 3])];
    await turn();
    db.batches[0]!.fail(new Error('value out of range'));
    const settled = await Promise.allSettled(calls);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((settled[0] as PromiseFulfilledResult<unknown>).value).toEqual([{ args: ['a', 1] }]);
    // One call was bad, so the batched form is kept.
    const next = [db.reader(SQL, ['d', 4]), db.reader(SQL, ['e', 5])];
    await turn();
    expect(db.batches).toHaveLength(2);
    db.batches[1]!.finish();
    await Promise.all(next);
  });

  it('stops batching a statement whose batched form fails while every call succeeds alone', async () => {
    const db = fakeDb();
    await warm(db);
    const calls = [db.reader(SQL, ['a', 1]), db.reader(SQL, ['b', 2])];
    await turn();
    db.batches[0]!.fail(new Error('cannot cast'));
    expect(await Promise.all(calls)).toEqual([[{ args: ['a', 1] }], [{ args: ['b', 2] }]]);
    db.singles.length = 0;
    const next = [db.reader(SQL, ['c', 3]), db.reader(SQL, ['d', 4])];
    await Promise.all(next);
    expect(db.batches).toHaveLength(1);
    expect(db.singles).toEqual([
      ['c', 3],
      ['d', 4],
    ]);
  });

  it('never batches a statement it cannot rewrite safely or whose types are unknown', async () => {
    for (const [text, types] of [
      ["SELECT $1 || '$2' AS x WHERE $2 = 1", ['text', 'integer']],
      ['SELECT $$a$$ AS x, $1 AS y, $2 AS z', ['text', 'integer']],
      [SQL, ['text', 'bigint; drop table users']],
      [SQL, ['text']],
    ] as const) {
      const db = fakeDb([...types]);
      await db.reader(text, ['a', 1]);
      await Promise.all([db.reader(text, ['b', 2]), db.reader(text, ['c', 3])]);
      expect(db.batches).toEqual([]);
      expect(db.singles).toHaveLength(3);
    }
  });

  it('counts placeholders only when they are $1..$n with no other $', () => {
    expect(placeholderCount('SELECT 1')).toBe(0);
    expect(placeholderCount('a = $1 AND b = $2 AND c = $1')).toBe(2);
    expect(placeholderCount('a = $2')).toBeNull();
    expect(placeholderCount("a = $1 AND b = 'x$'")).toBeNull();
    expect(placeholderCount(`a = $1 AND "b$" = 1`)).toBeNull();
    expect(placeholderCount("a = $1 AND b = 'it''s' AND c = $2")).toBe(2);
    expect(placeholderCount('a = $1 -- $2')).toBeNull();
    expect(placeholderCount("a = 'open")).toBeNull();
  });
});
