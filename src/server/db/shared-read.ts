// One read for many callers, never a stale one. Reads that every caller makes alike (the offer
// index's change feed, the GPU names) need not run once per caller: a caller that arrives while
// a read is under way waits for the next read, which starts once that one has settled, and every
// caller that arrived meanwhile takes its answer. That read began after each of them was made, so
// it has seen everything committed before them, as a read of their own would have. At most one
// read runs and one waits per shared read.

/** `read` shared as above: one call runs it at once, calls made while it runs share the next run. */
export function sharedRead<T>(read: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | null = null;
  let queued: Promise<T> | null = null;
  const call = (): Promise<T> => {
    if (!running) {
      const run = read().finally(() => {
        if (running === run) running = null;
      });
      running = run;
      return run;
    }
    if (!queued) {
      const next = running
        .catch(() => {})
        .then(() => {
          queued = null;
          return call();
        });
      queued = next;
    }
    return queued;
  };
  return call;
}
