// The instance options that create, update and templates share: onstart (from a file or a
// command, gzip+base64 when long) and -e/-p environment options.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { dockerOptionsEnv, shellWords } from '../../contract/docker-options.js';
import { UsageError, type Opts } from './context.js';

/** onstart is at most 4048 characters; longer scripts go gzip+base64. */
export const ONSTART_MAX = 4048;

/**
 * The onstart of `--onstart FILE` (the script in a file) or `--onstart-cmd CMD` (the command
 * itself), encoded for the body; undefined when neither is given.
 */
export function onstartOf(opts: Opts): string | undefined {
  if (opts.onstart && opts.onstartCmd)
    throw new UsageError('give --onstart FILE or --onstart-cmd CMD, not both');
  if (opts.onstart) {
    try {
      return encodeOnstart(readFileSync(String(opts.onstart), 'utf8'));
    } catch (err) {
      if (err instanceof UsageError) throw err;
      throw new UsageError(
        `--onstart: cannot read ${String(opts.onstart)} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      );
    }
  }
  return opts.onstartCmd ? encodeOnstart(String(opts.onstartCmd)) : undefined;
}

/** Scripts over the limit are sent gzip+base64; still too long is a usage error. */
export function encodeOnstart(script: string): string {
  if (script.length <= ONSTART_MAX) return script;
  const packed = gzipSync(Buffer.from(script, 'utf8'), { level: 9 }).toString('base64');
  if (packed.length > ONSTART_MAX) {
    throw new UsageError(
      `onstart script is ${script.length} characters, ${packed.length} even gzip+base64 encoded; the limit is ${ONSTART_MAX}`,
    );
  }
  return packed;
}

/** `-e KEY=VALUE -p 8080:8080` (or bare KEY=VALUE) → the create body's env object. */
export function parseEnv(specs: string[]): Record<string, string> {
  const r = dockerOptionsEnv(specs.flatMap(shellWords));
  if ('error' in r) throw new UsageError(`--env: ${r.error}`);
  return r.env;
}
