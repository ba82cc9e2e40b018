// How many turns of the event loop other work got while `fn` ran. On SQLite every statement
// resolves at once, so only a batch's own yields (clock.ts nextTurn) let a waiting request in.
export async function turnsDuring<T>(fn: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let done = false;
  const tick = () => {
    if (done) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  try {
    return { result: await fn(), turns };
  } finally {
    done = true;
  }
}
