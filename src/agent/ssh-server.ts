// The per-instance SSH server with the `ssh2` library: public-key only,
// accepting exactly the keys in the instance's authorized_keys file (re-read at every attempt, so
// a key attached later works at once), giving a shell or exec in the instance's directory.
// Before it accepts a key it asks the control server which keys the instance holds now (answers
// kept at most a second), so a detached or deleted key stops working at once, not at the next sync.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { timingSafeEqual } from 'node:crypto';
import type * as Ssh2 from 'ssh2';
import type { AuthContext, ServerChannel, Session } from 'ssh2';
import { lazyRequire } from '../contract/lazy-require.js';
import {
  isRsyncDaemonCommand,
  RSYNC_USER,
  spawnRsyncDaemon,
  type RsyncAccess,
  type RsyncModule,
} from './rsync-daemon.js';

/** ssh2, loaded when an SSH server or key parser is first used, not by every process. */
export const ssh2 = lazyRequire<typeof Ssh2>('ssh2');

export interface SshServerOptions {
  hostKey: Buffer;
  authorizedKeysFile: string;
  cwd: string;
  env: Record<string, string>;
  log: (msg: string) => void;
  /** The control server's current keys for this instance (see keyAuthenticator). */
  currentKeys?: CurrentKeys;
  /** rsync's daemon protocol for `vastai_kaalia` logins (rsync-daemon.ts); absent: refused. */
  rsync?: RsyncLogin;
}

/** What an instance's SSH server serves to `vastai_kaalia` logins (rsync's daemon protocol). */
export interface RsyncLogin {
  /** The modules a login of this access gets (the instance's file system). */
  modules(access: RsyncAccess): Promise<RsyncModule[]>;
  /**
   * Whether a key is the one-time key of a copy into this instance (the control server decides);
   * with `consume`, the login takes it, and no later login can.
   */
  copyGrant?: (keyBlob: Buffer, consume: boolean) => Promise<boolean>;
}

type PublicKey = ReturnType<typeof Ssh2.utils.parseKey>;

function readLines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n');
  } catch {
    return [];
  }
}

function parseKeys(lines: string[]): Exclude<PublicKey, Error | unknown[]>[] {
  const out: Exclude<PublicKey, Error | unknown[]>[] = [];
  for (const line of lines) {
    const l = line.trim();
    if (!l || l.startsWith('#')) continue;
    const k = ssh2().utils.parseKey(l);
    if (k instanceof Error || Array.isArray(k)) continue;
    out.push(k);
  }
  return out;
}

function sameBlob(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export function checkKey(ctx: AuthContext, file: string | string[]): boolean {
  if (ctx.method !== 'publickey') return false;
  const lines = typeof file === 'string' ? readLines(file) : file;
  const key = parseKeys(lines).find(
    (k) => k.type === ctx.key.algo && sameBlob(k.getPublicSSH(), ctx.key.data),
  );
  if (!key) return false;
  // Without a signature the client only asks whether the key would do (RFC 4252 §7).
  if (ctx.signature && ctx.blob) return key.verify(ctx.blob, ctx.signature, ctx.hashAlgo) === true;
  return true;
}

/**
 * Asks the control server for the instance's keys now; null when it cannot answer (unreachable,
 * an error), and then the caller keeps to the synced authorized_keys file.
 */
export type CurrentKeys = () => Promise<string[] | null>;

/** How long one answer of the control server about an instance's keys is trusted. */
export const CURRENT_KEYS_TTL_MS = 1000;

/**
 * Decides public-key logins: the key must be in the synced authorized_keys file and, when the
 * control server answers, in its current list too. When the server does not answer, the synced
 * file alone decides, so a control-plane outage does not lock renters out; a key removed during
 * the outage then works until the next successful sync.
 */
export function keyAuthenticator(
  file: string,
  current?: CurrentKeys,
): (ctx: AuthContext) => Promise<boolean> {
  let cached: { at: number; keys: Promise<string[] | null> } | null = null;
  const fresh = (): Promise<string[] | null> => {
    const now = Date.now();
    if (!cached || now - cached.at > CURRENT_KEYS_TTL_MS) {
      cached = { at: now, keys: current ? current().catch(() => null) : Promise.resolve(null) };
    }
    return cached.keys;
  };
  return async (ctx) => {
    if (!checkKey(ctx, file)) return false;
    if (!current || ctx.method !== 'publickey') return true;
    const keys = await fresh();
    return keys === null || checkKey(ctx, keys);
  };
}

/**
 * Decides a `vastai_kaalia` login: the instance's own keys (as any login) give the owner's access;
 * otherwise a copy's one-time key, confirmed by the control server, gives write-only access. The
 * key is taken only once its signature is verified here (a query without one takes nothing).
 */
export function rsyncAuthenticator(
  allowed: (ctx: AuthContext) => Promise<boolean>,
  login: RsyncLogin,
): (ctx: AuthContext) => Promise<RsyncAccess | null> {
  return async (ctx) => {
    if (ctx.method !== 'publickey') return null;
    if (await allowed(ctx)) return 'owner';
    if (!login.copyGrant) return null;
    if (!(ctx.signature && ctx.blob)) return (await login.copyGrant(ctx.key.data, false)) ? 'copy' : null;
    const key = ssh2().utils.parseKey(`${ctx.key.algo} ${ctx.key.data.toString('base64')}`);
    if (key instanceof Error || Array.isArray(key)) return null;
    if (key.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true) return null;
    return (await login.copyGrant(ctx.key.data, true)) ? 'copy' : null;
  };
}

/**
 * A `vastai_kaalia` session: the one command it may run is rsync's daemon over the connection,
 * with the login's modules; a shell, another command, a terminal or a subsystem is refused.
 */
export function handleRsyncSession(
  session: Session,
  modules: () => Promise<RsyncModule[]>,
  log: (msg: string) => void,
): void {
  session.on('pty', (_accept, reject) => reject?.());
  session.on('env', (accept) => accept?.());
  session.on('shell', (_accept, reject) => reject?.());
  session.on('subsystem', (_accept, reject) => reject?.());
  session.on('sftp', (_accept, reject) => reject?.());
  session.on('exec', (accept, reject, info) => {
    if (!isRsyncDaemonCommand(info.command)) return void reject?.();
    const channel = accept();
    modules().then(
      (mods) => attach(spawnRsyncDaemon(mods), channel),
      (err: Error) => {
        log(`rsync login refused: ${err.message}`);
        channel.stderr.write(`openrig: ${err.message}\n`);
        channel.exit(1);
        channel.end();
      },
    );
  });
}

function shellPath(): string {
  return existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';
}

/** Wires a child process to an SSH channel; the exit code goes back to the client. */
function attach(child: ChildProcess, channel: ServerChannel): void {
  channel.pipe(child.stdin!);
  child.stdout!.pipe(channel, { end: false });
  child.stderr!.pipe(channel.stderr, { end: false });
  child.on('error', () => {
    channel.exit(127);
    channel.end();
  });
  child.on('close', (code, signal) => {
    if (signal) channel.exit(signal.replace(/^SIG/, ''), false, '');
    else channel.exit(code ?? 0);
    channel.end();
  });
  channel.on('close', () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGHUP');
  });
}

function handleSession(session: Session, o: SshServerOptions): void {
  let pty: { term: string; cols: number; rows: number } | null = null;
  const extraEnv: Record<string, string> = {};
  const env = () => ({
    ...o.env,
    ...extraEnv,
    ...(pty ? { TERM: pty.term || 'xterm', COLUMNS: String(pty.cols), LINES: String(pty.rows) } : {}),
  });
  session.on('pty', (accept, _reject, info) => {
    pty = { term: info.term, cols: info.cols, rows: info.rows };
    accept?.();
  });
  session.on('window-change', (accept) => accept?.());
  session.on('env', (accept, _reject, info) => {
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(info.key) && info.key !== 'CONTAINER_API_KEY')
      extraEnv[info.key] = info.val;
    accept?.();
  });
  session.on('exec', (accept, _reject, info) => {
    const channel = accept();
    attach(spawn(shellPath(), ['-c', info.command], { cwd: o.cwd, env: env(), stdio: 'pipe' }), channel);
  });
  session.on('shell', (accept) => {
    const channel = accept();
    const sh = shellPath();
    // With a terminal requested, `script` gives the shell a real pty (job control, prompts).
    const child = pty
      ? spawn('script', ['-qfc', `${sh} -l`, '/dev/null'], { cwd: o.cwd, env: env(), stdio: 'pipe' })
      : spawn(sh, ['-l'], { cwd: o.cwd, env: env(), stdio: 'pipe' });
    attach(child, channel);
  });
  session.on('subsystem', (_accept, reject) => reject?.());
}

export function createSshServer(o: SshServerOptions): InstanceType<typeof Ssh2.Server> {
  const allowed = keyAuthenticator(o.authorizedKeysFile, o.currentKeys);
  const rsyncAllowed = o.rsync ? rsyncAuthenticator(allowed, o.rsync) : null;
  return new (ssh2().Server)({ hostKeys: [o.hostKey] }, (client) => {
    // A `vastai_kaalia` login serves rsync's daemon protocol only, with this access.
    let rsync: RsyncAccess | null = null;
    client.on('authentication', (ctx) => {
      if (ctx.username === RSYNC_USER) {
        if (!rsyncAllowed) return ctx.reject(['publickey']);
        return void rsyncAllowed(ctx).then(
          (access) => {
            if (!access) return ctx.reject(['publickey']);
            rsync = access;
            ctx.accept();
          },
          () => ctx.reject(['publickey']),
        );
      }
      allowed(ctx).then(
        (ok) => (ok ? ctx.accept() : ctx.reject(['publickey'])),
        () => ctx.reject(['publickey']),
      );
    });
    client.on('ready', () => {
      client.on('session', (accept) => {
        const access = rsync;
        if (access && o.rsync) handleRsyncSession(accept(), () => o.rsync!.modules(access), o.log);
        else handleSession(accept(), o);
      });
    });
    client.on('error', (err) => o.log(`ssh client error: ${err.message}`));
  });
}
