// The CLI's prompt for a secret (a password, an environment variable's value), with `read`: the
// prompt goes to stderr and the terminal echoes nothing of the answer (its output is muted while
// the answer is typed), which is kept exactly as typed, spaces included.

/** Asks `q` on the terminal and reads one line without echoing it; Ctrl-C ends the command (exit 130). */
export async function askHidden(q: string): Promise<string> {
  // Loaded when a secret is asked for, not with every command.
  const { read } = await import('read');
  try {
    return await read({ prompt: q, silent: true, replace: '', output: process.stderr });
  } catch (err) {
    if ((err as Error).message !== 'canceled') throw err;
    process.stderr.write('\n');
    process.exit(130);
  }
}
