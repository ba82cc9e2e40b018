// Polling in tests: call `fn` until its value passes `ok` or the time is up, then return the last
// value, so the caller's assertion on it reports what was actually seen.
export async function pollUntil<T>(
  fn: () => T | Promise<T>,
  ok: (v: T) => boolean,
  ms = 10_000,
  stepMs = 50,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
