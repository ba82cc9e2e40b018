// What `serve` does on SIGTERM or SIGINT, apart from the server's modules: a cluster's primary
// installs it before it loads them.

/** On the first SIGTERM or SIGINT: `stop`, then exit 0 (1 if it failed). */
export function onTermination(stop: (signal: string) => Promise<void>): void {
  let once = false;
  const handle = (sig: string) => {
    if (once) return;
    once = true;
    stop(sig).then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`openrig: shutdown failed: ${err instanceof Error ? err.stack : String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => handle('SIGTERM'));
  process.on('SIGINT', () => handle('SIGINT'));
}
