// Transactions that a race may have to run again. A write that decides a race does so by a
// conditional UPDATE (… WHERE column = <the value read>); the loser of that update throws LostRace
// inside its transaction, which rolls it back, and runs it again or reports the loss.
import type { Kysely } from 'kysely';
import { tx, type Store } from './connection.js';
import { isTransient } from './dialect.js';
import type { DB } from './schema.js';

/**
 * Thrown inside a transaction when a conditional write found the row changed since it was read.
 * `settle`, when given, is what the loser does once the transaction has rolled back (see
 * `settleLostRace`); without it the transaction is simply run again (`txRetry`).
 */
export class LostRace extends Error {
  constructor(
    what: string,
    readonly settle?: () => Promise<never>,
  ) {
    super(`lost a race on ${what}`);
    this.name = 'LostRace';
  }
}

/**
 * Runs `fn` in a write transaction, again (up to `tries`) when it lost a conditional update or
 * PostgreSQL broke a deadlock or a serialization conflict.
 */
export async function txRetry<T>(store: Store, fn: (trx: Kysely<DB>) => Promise<T>, tries = 8): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await tx(store, fn);
    } catch (err) {
      if (!(err instanceof LostRace || isTransient(err)) || i >= tries) throw err;
    }
  }
}

/**
 * Runs `fn` in one write transaction; when it throws a LostRace that carries `settle`, the loser's
 * outcome is settled after the rollback, outside the transaction.
 */
export async function txSettled<T>(store: Store, fn: (trx: Kysely<DB>) => Promise<T>): Promise<T> {
  try {
    return await tx(store, fn);
  } catch (err) {
    if (err instanceof LostRace && err.settle) return err.settle();
    throw err;
  }
}
