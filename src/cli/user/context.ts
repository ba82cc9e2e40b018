// What every user command shares: the common options (--url, --api-key, --raw), where the settings
// come from (flag > environment > config file), the client, and how failures end the process:
// an API error prints the server's `msg` on stderr and exits 1; a usage error exits 2 (main.ts
// prints it); an unreachable server exits 1 with one line, never a stack trace.
import { createHash } from 'node:crypto';
import { createInterface } from 'node:readline/promises';
import { CommanderError, type Command } from 'commander';
import { ApiError, NetworkError, OpenrigClient } from '../../client/client.js';
import { SearchQueryError } from '../../client/search-query.js';
import {
  ConfigFileError,
  configMode,
  configPath,
  readConfig,
  updateConfig,
  type StoredConfig,
} from '../config-file.js';
import { relativeTime } from '../output.js';

export const DEFAULT_URL = 'http://127.0.0.1:8080';

export interface CommonOpts {
  url?: string;
  apiKey?: string;
  raw?: boolean;
  wide?: boolean;
}

export interface Ctx {
  client: OpenrigClient;
  url: string;
  apiKey: string | null;
  raw: boolean;
  /** The terminal's width for tables; undefined prints every column (`--wide`, or not a terminal). */
  width: number | undefined;
  /** stdout is a terminal: a spinner and live updates are drawn; otherwise plain lines. */
  tty: boolean;
  env: NodeJS.ProcessEnv;
  out(s: string): void;
  err(s: string): void;
  now(): number;
  /** Prints the last reply exactly as the server sent it (`--raw`). */
  printRaw(): void;
}

export class UsageError extends CommanderError {
  constructor(msg: string) {
    super(2, 'usage', msg);
  }
}

/** Adds the options every user command takes, and a usage example to its --help. */
export function common(cmd: Command, example: string): Command {
  return cmd
    .option('--url <url>', `server base URL (env OPENRIG_URL, else \`openrig login\`, else ${DEFAULT_URL})`)
    .option('--api-key <key>', 'API key (env OPENRIG_API_KEY, else the one stored by `openrig login`)')
    .option('--raw', "print the server's JSON reply unchanged")
    .option('--wide', 'print every table column, however wide the terminal')
    .addHelpText('after', `\nExample:\n  ${example.split('\n').join('\n  ')}\n`);
}

export function sha256(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

export function checkUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new UsageError(`--url: "${url}" is not a URL (e.g. http://127.0.0.1:8080)`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new UsageError(`--url must start with http:// or https://`);
  // The API paths are added by the client: a base URL that already names them would double them.
  if (/^\/api(\/|$)/.test(u.pathname))
    throw new UsageError(
      `--url is the server's base URL, without the API path: use ${u.origin}${u.pathname.replace(/\/api(\/.*)?$/, '')} instead of ${url}`,
    );
  return url.replace(/\/+$/, '');
}

export interface Settings {
  url: string;
  apiKey: string | null;
  sessionKey: string | null;
  stored: StoredConfig;
}

/**
 * The settings: flag, else environment, else the config file. A broken config file is an error
 * only when something is taken from it: with both a URL and an API key given, or with
 * `brokenConfigOk` (login replaces the file, logout removes it), it is passed over.
 */
export function resolveSettings(o: CommonOpts, env: NodeJS.ProcessEnv, brokenConfigOk = false): Settings {
  let stored: StoredConfig;
  try {
    stored = readConfig(env);
  } catch (e) {
    const given = (o.url ?? nonEmpty(env.OPENRIG_URL)) && (o.apiKey ?? nonEmpty(env.OPENRIG_API_KEY));
    if (!(e instanceof ConfigFileError) || !(given || brokenConfigOk)) throw e;
    stored = {};
  }
  const url = checkUrl(o.url ?? nonEmpty(env.OPENRIG_URL) ?? stored.url ?? DEFAULT_URL);
  const apiKey = o.apiKey ?? nonEmpty(env.OPENRIG_API_KEY) ?? stored.api_key ?? null;
  // A stored 2FA session is used only for the server and API key it was opened with.
  const sessionKey =
    stored.session_key &&
    stored.session_url === url &&
    apiKey !== null &&
    stored.session_api_key_sha256 === sha256(apiKey)
      ? stored.session_key
      : null;
  return { url, apiKey, sessionKey, stored };
}

function nonEmpty(s: string | undefined): string | undefined {
  return s && s.length > 0 ? s : undefined;
}

export interface ActOptions {
  /** Most commands need a credential; `login` checks its own. */
  needsKey?: boolean;
  /** The command works without the config file, so a broken one is passed over (login, logout). */
  brokenConfigOk?: boolean;
}

/**
 * Wraps a command body: builds the context, runs it, and maps failures to exit codes.
 * Commander calls actions with (...positionals, options, command).
 */
/** A value commander hands an action: an option's or argument's text, a flag, or a variadic list. */
export type OptValue = string | boolean | string[] | undefined;
/** A command's options, as commander parsed them. */
export type Opts = Record<string, OptValue>;

export function act(fn: (ctx: Ctx, args: OptValue[], opts: Opts) => Promise<void>, ao: ActOptions = {}) {
  return async (...a: unknown[]): Promise<void> => {
    const cmd = a[a.length - 1] as Command;
    const opts = cmd.opts<Opts & CommonOpts>();
    const args = a.slice(0, -2) as OptValue[];
    const env = process.env;
    const out = (s: string) => void process.stdout.write(s);
    const err = (s: string) => void process.stderr.write(s);
    let ctx: Ctx | undefined;
    try {
      const st = resolveSettings(opts, env, ao.brokenConfigOk);
      if (ao.needsKey !== false && !st.apiKey) {
        throw new UsageError(
          'no API key: pass --api-key KEY, set OPENRIG_API_KEY, or run `openrig login --url URL --api-key KEY`',
        );
      }
      const mode = configMode(env);
      if (mode !== null && (mode & 0o077) !== 0)
        err(`openrig: warning: ${configPath(env)} is readable by others (chmod 600 it)\n`);
      const client = new OpenrigClient({
        url: st.url,
        apiKey: st.apiKey,
        sessionKey: st.sessionKey,
        onSessionFallback: (reason) => {
          err(
            `openrig: ${reason} — the 2FA session is no longer valid; using the API key (run \`openrig tfa login\` for a new session)\n`,
          );
          try {
            updateConfig(
              { session_key: undefined, session_url: undefined, session_api_key_sha256: undefined },
              env,
            );
          } catch (e) {
            err(
              `openrig: warning: could not forget the session in ${configPath(env)}: ${(e as Error).message}\n`,
            );
          }
        },
      });
      ctx = {
        client,
        url: st.url,
        apiKey: st.apiKey,
        raw: !!opts.raw,
        width: opts.wide || !process.stdout.isTTY ? undefined : process.stdout.columns || undefined,
        tty: !!process.stdout.isTTY,
        env,
        out,
        err,
        now: () => Date.now(),
        printRaw: () => out(client.lastRaw.endsWith('\n') ? client.lastRaw : client.lastRaw + '\n'),
      };
      await fn(ctx, args, opts);
    } catch (e) {
      if (e instanceof CommanderError) throw e; // usage: main.ts prints it and exits 2
      if (e instanceof SearchQueryError) throw new UsageError(e.message);
      process.exitCode = 1;
      if (e instanceof ApiError) {
        if (opts.raw && e.raw) out(e.raw.endsWith('\n') ? e.raw : e.raw + '\n');
        err(`openrig: ${e.message}${lockHint(e.body)}\n`);
      } else if (e instanceof NetworkError || e instanceof ConfigFileError || e instanceof CliFailure) {
        err(`openrig: ${e.message}\n`);
      } else {
        const m = e instanceof Error ? e.message : String(e);
        err(`openrig: ${m}\n`);
        if (env.OPENRIG_DEBUG && e instanceof Error && e.stack) err(e.stack + '\n');
      }
    }
  };
}

/** An expected failure the command itself detects (exit 1, one line). */
export class CliFailure extends Error {}

/** y/N on a terminal; null when there is no terminal to ask on (scripts must pass --yes). */
export async function confirm(q: string): Promise<boolean | null> {
  if (!process.stdin.isTTY || !process.stdout.isTTY) return null;
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return /^y(es)?$/i.test((await rl.question(q)).trim());
  } finally {
    rl.close();
  }
}

function lockHint(body: unknown): string {
  if (typeof body !== 'object' || body === null) return '';
  const b = body as { locked_until?: unknown; fail_count?: unknown };
  if (typeof b.locked_until === 'number')
    return ` (locked until ${new Date(b.locked_until * 1000).toISOString()}, ${relativeTime(b.locked_until, Date.now())})`;
  return '';
}

/** Parses a positive whole number argument (an ID), or a usage error naming it. */
export function intArg(v: unknown, what: string): number {
  const s = String(v);
  if (!/^\d+$/.test(s) || Number(s) < 1 || !Number.isSafeInteger(Number(s)))
    throw new UsageError(`${what} must be a positive whole number, not "${s}"`);
  return Number(s);
}

export function numArg(v: unknown, what: string): number {
  const s = String(v);
  const n = Number(s);
  if (s.trim() === '' || !Number.isFinite(n)) throw new UsageError(`${what} must be a number, not "${s}"`);
  return n;
}

/** `1,2,3` → [1, 2, 3]. */
export function idList(v: unknown, what: string): number[] {
  const parts = String(v)
    .split(/[\s,]+/)
    .filter(Boolean);
  if (parts.length === 0) throw new UsageError(`${what}: give at least one ID`);
  return parts.map((p) => intArg(p, what));
}
