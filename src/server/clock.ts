// Side effects behind one-method interfaces: tests move time without sleeping.
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests set and advance by hand. */
export class ManualClock implements Clock {
  constructor(private t = Date.UTC(2026, 10, 22, 12, 0, 0)) {}
  now(): number {
    return this.t;
  }
  set(ms: number): void {
    this.t = ms;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

/**
 * One turn of the event loop. Long batches (offer index loads, heartbeat flushes, the billing
 * meter, the heartbeat sweep) await it between chunks: on SQLite every statement resolves at
 * once, so without it a batch is one long stretch of microtasks that every request waits behind.
 */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
