// Concurrent reads of one statement share a round trip on PostgreSQL.
//
// Every request authenticated with a key reads that key (and, for the instance poll, its
// instance) from the database, so that a revoked key is refused on its very next request by every
// process. On PostgreSQL each read is a round trip to another process: under load most of the
// cost of such a request is waking a backend, having it run a small plan and waking Node again,
// once per request. Here the calls of one statement that arrive while earlier ones are in flight
// wait for the next round trip and go together: one statement that unnests each parameter's
// values as an array and runs the original for each set of them (a LATERAL join), its rows tagged
// with the call they belong to. Its text does not depend on how many calls it carries, so it is
// prepared and planned once per connection like any other.
//
// A call is never added to a statement already sent: it goes in one sent after it was made, so it
// reads state committed before it was made, exactly as a statement of its own would (READ
// COMMITTED takes its snapshot when the statement starts). With nothing in flight a call is sent
// in the check phase of the same turn of the event loop, so a lone request waits for nothing.
//
// Only for reads of at most one row per call: rows of different calls come in no promised order.

/** Runs one statement (PostgreSQL `$n` placeholders) and returns its rows. */
export type RunStatement = <R>(sqlText: string, params: readonly unknown[]) => Promise<R[]>;

/** How many statements of one text may be in flight at once, per process. */
export const MAX_IN_FLIGHT = 1;
/** The most calls one statement carries. */
export const MAX_BATCH = 64;

interface Call {
  params: readonly unknown[];
  resolve(rows: unknown[]): void;
  reject(err: unknown): void;
}

interface Queue {
  pending: Call[];
  inFlight: number;
  scheduled: boolean;
  /**
   * The batched statement: undefined until the parameters' types are known (calls go alone
   * meanwhile), null when the statement cannot be batched (every call goes alone).
   */
  batched: string | null | undefined;
}

/**
 * The statement's placeholders, $1 to $n each used, or null when a `$` stands anywhere else (in
 * a quoted string or identifier, or a dollar-quoted string) or the text has a comment: rewriting
 * only what is surely a placeholder keeps the batched statement the same statement.
 */
export function placeholderCount(sqlText: string): number | null {
  const used = new Set<number>();
  let quote: string | null = null;
  for (let i = 0; i < sqlText.length; i++) {
    const c = sqlText[i]!;
    if (quote) {
      if (c === '$') return null;
      if (c === quote) quote = null;
    } else if (c === "'" || c === '"') quote = c;
    else if ((c === '-' && sqlText[i + 1] === '-') || (c === '/' && sqlText[i + 1] === '*')) return null;
    else if (c === '$') {
      const digits = /^\d+/.exec(sqlText.slice(i + 1))?.[0];
      if (!digits) return null;
      used.add(Number(digits));
      i += digits.length;
    }
  }
  if (quote) return null;
  for (let i = 1; i <= used.size; i++) if (!used.has(i)) return null;
  return used.size;
}

/**
 * The statement for many calls: parameter k of every call in the array $k (of the type PostgreSQL
 * gave the original's parameter k), one row of arguments per call, numbered from 1 as `b`.
 */
export function batchText(sqlText: string, types: readonly string[]): string {
  const arrays = types.map((t, i) => `$${i + 1}::${t}[]`).join(', ');
  const columns = types.map((_, i) => `p${i + 1}`).join(', ');
  const body = sqlText.replace(/\$(\d+)/g, (_, d: string) => `b.p${d}`);
  // OFFSET 0 keeps the original a subquery of its own, run once per call with that call's values
  // (its own plan: index lookups), instead of merged into a join whose plan, made once for any
  // number of calls, could scan a whole table for a few.
  return `SELECT b.n AS b, row_to_json(t) AS r FROM unnest(${arrays}) WITH ORDINALITY AS b(${columns}, n) CROSS JOIN LATERAL (SELECT * FROM (${body}) s OFFSET 0) t`;
}

/** A type name as PostgreSQL prints it, safe to write after `::` (no quoting, no injection). */
const TYPE_NAME = /^[a-z][a-z0-9_ ]*(\([0-9, ]+\))?$/;

/**
 * A reader that coalesces concurrent calls of the same statement.
 * - `run` runs a statement as it is;
 * - `single` runs one call alone (as the caller would without this): used until the statement's
 *   parameter types are known, for a call with nothing else queued, and for each call of a batch
 *   that failed, so that one call's bad argument fails that call alone;
 * - `parameterTypes` asks PostgreSQL the types of a statement's parameters.
 * Rows come back as `single` returns them (row_to_json of the statement's row).
 */
export function coalescingReader(
  run: RunStatement,
  single: RunStatement,
  parameterTypes: (sqlText: string) => Promise<string[]>,
) {
  const queues = new Map<string, Queue>();

  /** Runs each call as a statement of its own; how many of them failed. */
  const alone = async (sqlText: string, calls: Call[]): Promise<number> => {
    let failed = 0;
    await Promise.all(
      calls.map((c) =>
        single(sqlText, c.params).then(
          (rows) => c.resolve(rows),
          (err: unknown) => {
            failed++;
            c.reject(err);
          },
        ),
      ),
    );
    return failed;
  };

  const sendBatch = async (sqlText: string, q: Queue, calls: Call[]): Promise<void> => {
    if (calls.length === 1 || !q.batched) {
      await alone(sqlText, calls);
      return;
    }
    const params = calls[0]!.params.map((_, k) => calls.map((c) => c.params[k]));
    let rows: { b: number; r: unknown }[];
    try {
      rows = await run<{ b: number; r: unknown }>(q.batched, params);
    } catch {
      // One call's arguments may fail the statement for all: each is retried alone. When every
      // one succeeds alone, the batched form itself is at fault, and it is not used again.
      const failed = await alone(sqlText, calls);
      if (failed === 0) q.batched = null;
      return;
    }
    const out: unknown[][] = calls.map(() => []);
    for (const row of rows) out[row.b - 1]?.push(row.r);
    calls.forEach((c, k) => c.resolve(out[k]!));
  };

  const send = (sqlText: string, q: Queue): void => {
    q.scheduled = false;
    while (q.pending.length > 0 && q.inFlight < MAX_IN_FLIGHT) {
      const calls = q.pending.splice(0, MAX_BATCH);
      q.inFlight++;
      void sendBatch(sqlText, q, calls).finally(() => {
        q.inFlight--;
        if (q.pending.length > 0 && !q.scheduled) {
          q.scheduled = true;
          setImmediate(send, sqlText, q);
        }
      });
    }
  };

  const learn = (sqlText: string, q: Queue, arity: number): void => {
    if (arity === 0 || placeholderCount(sqlText) !== arity) {
      q.batched = null;
      return;
    }
    parameterTypes(sqlText).then(
      (types) => {
        q.batched =
          types.length === arity && types.every((t) => TYPE_NAME.test(t)) ? batchText(sqlText, types) : null;
      },
      () => {
        q.batched = null;
      },
    );
  };

  return <R>(sqlText: string, params: readonly unknown[]): Promise<R[]> =>
    new Promise<R[]>((resolve, reject) => {
      let q = queues.get(sqlText);
      if (!q) {
        q = { pending: [], inFlight: 0, scheduled: false, batched: undefined };
        queues.set(sqlText, q);
        learn(sqlText, q, params.length);
      }
      q.pending.push({ params, resolve: resolve as (rows: unknown[]) => void, reject });
      if (!q.scheduled && q.inFlight < MAX_IN_FLIGHT) {
        q.scheduled = true;
        setImmediate(send, sqlText, q);
      }
    });
}
