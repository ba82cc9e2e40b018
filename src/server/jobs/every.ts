// The scheduler of background loops: `every` runs a pass on a period, never overlapping itself,
// wakes early on kick() and waits for the pass in progress on stop(). The loops themselves live
// with their modules (or in jobs/ when they span modules); jobs/index.ts starts them.
export interface Job {
  name: string;
  stop(): Promise<void>;
}

/** Runs `fn` every `ms` (never overlapping itself) until stopped. */
export function every(
  name: string,
  ms: number,
  fn: () => Promise<unknown>,
  onError: (err: unknown) => void,
): Job & { kick(): void } {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<unknown> | null = null;
  let stopped = false;
  let again = false;
  const run = () => {
    timer = null;
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = fn()
      .catch(onError)
      .finally(() => {
        running = null;
        if (stopped) return;
        if (again) {
          again = false;
          setImmediate(run);
        } else schedule();
      });
  };
  const schedule = () => {
    if (!stopped && !timer) timer = setTimeout(run, ms);
  };
  schedule();
  return {
    name,
    kick() {
      if (stopped) return;
      if (timer) {
        clearTimeout(timer);
        timer = null;
      }
      run();
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
