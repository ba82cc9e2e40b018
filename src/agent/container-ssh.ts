// The SSH server of one container (Docker runtime): the agent listens on the instance's SSH port
// with `ssh2` and turns each session into Engine API calls, so the image needs no SSH server:
// - shell and `ssh … 'cmd'`: an exec in the container as root (with a TTY when the client asked
//   for one), stdin/stdout/stderr relayed and the exit code passed back;
// - the SFTP subsystem (what current OpenSSH `scp` and `sftp` use) and legacy `scp -O`
//   (`scp -t` / `scp -f` commands): files read and written through the container archive
//   endpoint, so they work in any image, even one without a shell utility;
// - anything else the client runs (rsync's `rsync --server …`) is an exec like any command, so
//   it works when the image has that program.
// Only the instance's keys get in: its authorized_keys file is re-read at every attempt, so a
// key removed from the instance is refused from the next connection on.
import { mkdtemp, open, rm, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type * as Ssh2 from 'ssh2';
import type { Attributes, ServerChannel, Session, SFTPWrapper } from 'ssh2';
import { ByteReader, demux, type DockerEngine, type PathStat } from './docker-engine.js';
import {
  handleRsyncSession,
  keyAuthenticator,
  rsyncAuthenticator,
  ssh2,
  type CurrentKeys,
} from './ssh-server.js';
import { instanceModules, RSYNC_USER, type RsyncAccess } from './rsync-daemon.js';

// ssh2's SFTP constants are constants of the protocol: written out here so that loading this
// module does not load ssh2 (every process of the command loads it; ssh2 loads on first use).
export const STATUS_CODE = { OK: 0, EOF: 1, NO_SUCH_FILE: 2, FAILURE: 4, OP_UNSUPPORTED: 8 } as const;
export const OPEN_MODE = { WRITE: 2 } as const;
const HOME = '/root';
/**
 * Largest file one SFTP or scp upload takes (an SFTP upload is spooled on the host until it is
 * closed). Downloads stream, whatever their size.
 */
const MAX_FILE = 2 * 1024 ** 3;

export interface ContainerSshOptions {
  engine: DockerEngine;
  /** Container name or id. */
  container: string;
  hostKey: Buffer;
  authorizedKeysFile: string;
  /** Where SFTP uploads are spooled until their file is closed (absent: the system's tmpdir). */
  spoolDir?: string;
  /** Asks the control server for the instance's keys now (absent: the synced file alone decides). */
  currentKeys?: CurrentKeys;
  /** The instance id: `vastai_kaalia` logins get rsync's daemon protocol with its modules. */
  instanceId?: number;
  /** Asks the control server whether a key is a copy's one-time key for the instance. */
  copyGrant?: (keyBlob: Buffer, consume: boolean) => Promise<boolean>;
  log: (msg: string) => void;
}

/**
 * The container's file system as the host reaches it: /proc/PID/root of its main process (its
 * mount namespace's root, volumes mounted), where the rsync daemon chroots.
 */
export async function containerRoot(engine: DockerEngine, container: string): Promise<string> {
  const c = await engine.inspect(container);
  const pid = c?.State?.Running ? c.State.Pid : undefined;
  if (!pid) throw new Error('the container is not running');
  return `/proc/${pid}/root`;
}

const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;
const S_IFLNK = 0o120000;

/** The engine reports Go's os.FileMode: type bits high (dir 1<<31, symlink 1<<27), permissions low. */
export function unixMode(goMode: number): number {
  const perm = goMode & 0o7777;
  if (goMode & (2 ** 31)) return S_IFDIR | perm;
  if (goMode & (2 ** 27)) return S_IFLNK | perm;
  return S_IFREG | perm;
}

function attrsOf(st: PathStat): Attributes {
  const t = Math.floor(Date.parse(st.mtime) / 1000) || 0;
  return { mode: unixMode(st.mode), size: st.size, uid: 0, gid: 0, atime: t, mtime: t };
}

function resolvePath(p: string): string {
  return path.posix.resolve(HOME, p || '.');
}

/** Runs a command in the container, without a TTY, to its end: exit code and output. */
export async function runInContainer(
  engine: DockerEngine,
  container: string,
  cmd: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { execId, socket } = await engine.exec(container, { cmd, tty: false, user: '0' });
  const chunks: Buffer[] = [];
  socket.on('data', (d: Buffer) => chunks.push(d));
  socket.end();
  await new Promise<void>((resolve) => {
    socket.once('close', () => resolve());
    socket.once('end', () => resolve());
    socket.once('error', () => resolve());
  });
  const frames = demux(Buffer.concat(chunks));
  const text = (s: number) =>
    Buffer.concat(frames.filter((f) => f.stream === s).map((f) => f.data)).toString('utf8');
  return { code: await engine.execExitCode(execId), stdout: text(1), stderr: text(2) };
}

/** Relays a multiplexed exec stream to a channel's stdout and stderr as frames arrive. */
function demuxTo(channel: ServerChannel): (d: Buffer) => void {
  let buf: Buffer = Buffer.alloc(0);
  return (d) => {
    buf = buf.length ? Buffer.concat([buf, d]) : d;
    while (buf.length >= 8) {
      const size = buf.readUInt32BE(4);
      if (buf.length < 8 + size) break;
      const data = buf.subarray(8, 8 + size);
      if (buf[0] === 2) channel.stderr.write(data);
      else channel.write(data);
      buf = buf.subarray(8 + size);
    }
  };
}

interface Pty {
  term: string;
  cols: number;
  rows: number;
}

async function runExec(
  o: ContainerSshOptions,
  channel: ServerChannel,
  cmd: string[],
  pty: Pty | null,
  env: Record<string, string>,
  onExec: (execId: string) => void,
): Promise<void> {
  let execId: string;
  let socket;
  try {
    const envList = Object.entries({ ...env, ...(pty ? { TERM: pty.term || 'xterm' } : {}) }).map(
      ([k, v]) => `${k}=${v}`,
    );
    ({ execId, socket } = await o.engine.exec(o.container, {
      cmd,
      tty: pty !== null,
      env: envList,
      user: '0',
    }));
  } catch (err) {
    channel.stderr.write(`openrig: ${(err as Error).message}\n`);
    channel.exit(255);
    channel.end();
    return;
  }
  onExec(execId);
  if (pty) void o.engine.execResize(execId, pty.rows, pty.cols);
  socket.on('data', pty ? (d: Buffer) => channel.write(d) : demuxTo(channel));
  channel.on('data', (d: Buffer) => socket.write(d));
  // The client's EOF closes the command's stdin; a terminal has no half-close (as with sshd, EOF
  // on a pty session is ignored: closing the stream would hang the terminal up mid-output).
  if (!pty) channel.on('end', () => socket.end());
  channel.on('close', () => socket.destroy());
  socket.on('error', () => {});
  let finished = false;
  const finish = async () => {
    if (finished) return;
    finished = true;
    let code: number | null = null;
    for (let i = 0; i < 20 && code === null; i++) {
      code = await o.engine.execExitCode(execId).catch(() => 255);
      if (code === null) await new Promise((r) => setTimeout(r, 50));
    }
    channel.exit(code ?? 255);
    channel.end();
  };
  socket.on('end', () => void finish());
  socket.on('close', () => void finish());
}

/** The channel's data as a ByteReader: read on demand, so the SSH window holds the client back. */
function channelReader(ch: ServerChannel): ByteReader {
  // Not destroyed at the client's EOF: the exit status and the close still go out after it.
  return new ByteReader(
    (ch as unknown as Readable).iterator({ destroyOnReturn: false }) as AsyncIterator<Buffer>,
  );
}

/** Writes to the channel and waits while its buffer is full (or until it closes). */
async function sendData(ch: ServerChannel, data: Buffer): Promise<void> {
  if (ch.write(data)) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      ch.off('drain', done);
      ch.off('close', done);
      resolve();
    };
    ch.once('drain', done);
    ch.once('close', done);
  });
}

/**
 * `scp -t DEST` / `scp -f SRC` (the legacy protocol, `scp -O`), with `-r` for directories: the
 * client sends or reads `C` (file), `D` (enter a directory) and `E` (leave it) records.
 */
export function parseScp(
  command: string,
): { mode: 'to' | 'from'; target: string; recursive: boolean } | null {
  const t = shellWords(command);
  if (t === null || t[0] !== 'scp') return null;
  let mode: 'to' | 'from' | null = null;
  let target: string | null = null;
  let recursive = false;
  let options = true;
  for (const a of t.slice(1)) {
    if (options && a === '--') {
      options = false;
      continue;
    }
    if (options && a.startsWith('-')) {
      if (a.includes('t')) mode = 'to';
      if (a.includes('f')) mode = 'from';
      if (a.includes('r')) recursive = true;
      continue;
    }
    target = a;
  }
  return mode && target ? { mode, target, recursive } : null;
}

/** Splits a command line into words as sh does for quotes and backslashes; null when unbalanced. */
export function shellWords(line: string): string[] | null {
  const words: string[] = [];
  let cur: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) return null;
      cur = (cur ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      let j = i + 1;
      let w = '';
      for (; j < line.length && line[j] !== '"'; j++) {
        if (line[j] === '\\' && j + 1 < line.length && '"\\$`'.includes(line[j + 1]!)) j++;
        w += line[j];
      }
      if (j >= line.length) return null;
      cur = (cur ?? '') + w;
      i = j;
    } else if (c === '\\') {
      if (i + 1 >= line.length) return null;
      cur = (cur ?? '') + line[++i];
    } else if (/\s/.test(c)) {
      if (cur !== null) words.push(cur);
      cur = null;
    } else cur = (cur ?? '') + c;
  }
  if (cur !== null) words.push(cur);
  return words;
}

const isDir = (st: PathStat | null) => st !== null && (st.mode & (2 ** 31)) !== 0;
const octal = (mode: number) => (mode & 0o777).toString(8).padStart(4, '0');

/** A record's name is one path component: never `..`, `.`, empty or with a slash. */
const safeName = (n: string) => n !== '' && n !== '.' && n !== '..' && !n.includes('/');

async function scpSession(
  o: ContainerSshOptions,
  ch: ServerChannel,
  scp: { mode: 'to' | 'from'; target: string; recursive: boolean },
) {
  const r = channelReader(ch);
  const fail = (msg: string) => {
    ch.write(Buffer.from(`\x01scp: ${msg}\n`));
    ch.exit(1);
    ch.end();
  };
  const ack = () => ch.write(Buffer.from([0]));
  const p = resolvePath(scp.target);
  try {
    if (scp.mode === 'to') {
      const intoDir = isDir(await o.engine.statPath(o.container, p));
      // The directories entered with D records; a record's path is its name inside the last one,
      // or at the top the target itself (or a name inside it when the target is a directory).
      const dirs: string[] = [];
      const dest = (name: string) =>
        dirs.length > 0
          ? path.posix.join(dirs[dirs.length - 1]!, name)
          : intoDir
            ? path.posix.join(p, name)
            : p;
      ack();
      for (;;) {
        const l = await r.line();
        if (l === null) break;
        if (l.startsWith('T')) {
          ack();
          continue;
        }
        if (l === 'E') {
          if (dirs.pop() === undefined) return fail('E record outside a directory');
          ack();
          continue;
        }
        const m = /^([CD])([0-7]{4}) (\d+) (.+)$/.exec(l);
        if (!m || !safeName(m[4]!)) return fail(`unexpected record: ${l.slice(0, 80)}`);
        const target = dest(m[4]!);
        if (m[1] === 'D') {
          if (!scp.recursive) return fail('a directory needs -r');
          const made = await runInContainer(o.engine, o.container, ['mkdir', '-p', '-m', m[2]!, target]);
          if (made.code !== 0) return fail(made.stderr.trim() || `cannot create ${target}`);
          dirs.push(target);
          ack();
          continue;
        }
        const size = Number(m[3]);
        if (size > MAX_FILE) return fail('file too large for scp; use rsync');
        ack();
        // Streamed into the container as it arrives: no more than a chunk is held here.
        await o.engine.writeFileFrom(
          o.container,
          path.posix.dirname(target),
          path.posix.basename(target),
          size,
          parseInt(m[2]!, 8),
          r.limited(size),
        );
        if ((await r.exactly(1)) === null) return fail('connection ended mid-file');
        ack();
      }
      ch.exit(0);
      ch.end();
      return;
    }
    if ((await r.exactly(1)) === null) return fail('no acknowledgement');
    const st = await o.engine.statPath(o.container, p);
    if (!st) return fail(`${scp.target}: no such file or directory`);
    if (isDir(st) && !scp.recursive) return fail(`${scp.target}: not a regular file`);
    // Each record waits for the client's acknowledgement; a non-zero one ends the session.
    const acked = async () => {
      const b = await r.exactly(1);
      if (b === null || b[0] !== 0) throw new Error('the client refused a record');
    };
    const send = async (full: string, fst: PathStat): Promise<void> => {
      const name = path.posix.basename(full);
      if (isDir(fst)) {
        ch.write(Buffer.from(`D${octal(fst.mode)} 0 ${name}\n`));
        await acked();
        const ls = await runInContainer(o.engine, o.container, ['ls', '-1A', full]);
        if (ls.code !== 0) throw new Error(ls.stderr.trim() || `cannot list ${full}`);
        for (const n of ls.stdout.split('\n').filter(Boolean)) {
          const child = path.posix.join(full, n);
          const cst = await o.engine.statPath(o.container, child);
          // Symbolic links and special files are left out, as OpenSSH's scp leaves sockets out.
          if (cst && (isDir(cst) || (cst.mode & ((2 ** 27) | (2 ** 26) | (2 ** 25) | (2 ** 24))) === 0))
            await send(child, cst);
        }
        ch.write(Buffer.from('E\n'));
        await acked();
        return;
      }
      // Streamed from the container as the channel takes it: no more than a chunk is held here.
      const f = await o.engine.openFile(o.container, full);
      try {
        ch.write(Buffer.from(`C${octal(fst.mode)} ${f.size} ${name}\n`));
        await acked();
        let sent = 0;
        for await (const chunk of f.body.limited(f.size)) {
          sent += chunk.length;
          await sendData(ch, chunk);
        }
        if (sent !== f.size) throw new Error(`${full} changed while it was sent`);
      } finally {
        f.close();
      }
      ch.write(Buffer.from([0]));
      await acked();
    };
    await send(p, st);
    ch.exit(0);
    ch.end();
  } catch (err) {
    fail((err as Error).message);
  }
}

type OpenFile = Awaited<ReturnType<DockerEngine['openFile']>>;

/**
 * A file open for reading streams from the container: reads in order are served from the stream
 * (skipping forward when a read leaves a gap), an earlier offset reopens it. A file open for
 * writing is spooled to a file on the host at the written offsets, then streamed into the
 * container at close. Neither holds more than a read or write request's bytes in memory.
 */
type Handle =
  | {
      kind: 'read';
      path: string;
      st: PathStat;
      /** The stream, open while reads go on (none before the first and after the last). */
      file: OpenFile | null;
      pos: number;
      size: number;
      queue: Promise<void>;
    }
  | {
      kind: 'write';
      path: string;
      mode: number;
      spool: string;
      fh: FileHandle;
      size: number;
      queue: Promise<void>;
      failed: Error | null;
    }
  | { kind: 'dir'; path: string; done: boolean };

/** The most one SFTP READ answers (OpenSSH asks for 32 KiB to 255 KiB). */
const MAX_READ = 256 * 1024;

function sftpSession(o: ContainerSshOptions, sftp: SFTPWrapper): void {
  const handles = new Map<number, Handle>();
  const release = (h: Handle) => {
    if (h.kind === 'read') h.file?.close();
    if (h.kind === 'write')
      void h.queue
        .then(() => h.fh.close())
        .catch(() => {})
        .then(() => rm(h.spool, { recursive: true, force: true }))
        .catch(() => {});
  };
  // A session that ends with files still open leaves nothing behind (spools, engine connections).
  sftp.on('close', () => {
    for (const h of handles.values()) release(h);
    handles.clear();
  });
  let next = 1;
  const newHandle = (h: Handle) => {
    const n = next++;
    handles.set(n, h);
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  const get = (b: Buffer) => (b.length === 4 ? handles.get(b.readUInt32BE(0)) : undefined);
  const failWith = (id: number, err: unknown) => sftp.status(id, STATUS_CODE.FAILURE, (err as Error).message);
  const sh = async (id: number, cmd: string[]) => {
    try {
      const r = await runInContainer(o.engine, o.container, cmd);
      if (r.code === 0) sftp.status(id, STATUS_CODE.OK);
      else sftp.status(id, STATUS_CODE.FAILURE, r.stderr.trim() || `exit ${r.code}`);
    } catch (err) {
      failWith(id, err);
    }
  };

  // The client's EOF ends the session like sftp-server exiting: exit status 0, then close (scp
  // and sftp report a failure when the channel closes without one).
  sftp.on('end', () => {
    const s = sftp as unknown as {
      _protocol: { exitStatus(ch: number, code: number): void };
      outgoing: { id: number; state: string };
    };
    if (s.outgoing.state === 'open') s._protocol.exitStatus(s.outgoing.id, 0);
    sftp.end();
  });
  sftp.on('REALPATH', (id, p) => {
    const full = resolvePath(p);
    sftp.name(id, [{ filename: full, longname: full, attrs: {} as Attributes }]);
  });
  const stat = async (id: number, p: string) => {
    try {
      const st = await o.engine.statPath(o.container, resolvePath(p));
      if (!st) return sftp.status(id, STATUS_CODE.NO_SUCH_FILE);
      sftp.attrs(id, attrsOf(st));
    } catch (err) {
      failWith(id, err);
    }
  };
  sftp.on('STAT', (id, p) => void stat(id, p));
  sftp.on('LSTAT', (id, p) => void stat(id, p));
  sftp.on('FSTAT', (id, hb) => {
    const h = get(hb);
    if (!h) return sftp.status(id, STATUS_CODE.FAILURE);
    if (h.kind === 'read') return sftp.attrs(id, attrsOf(h.st));
    if (h.kind === 'write')
      return sftp.attrs(id, { mode: S_IFREG | h.mode, size: h.size, uid: 0, gid: 0, atime: 0, mtime: 0 });
    return void stat(id, h.path);
  });
  sftp.on('OPEN', (id, filename, flags, attrs) => {
    const p = resolvePath(filename);
    void (async () => {
      try {
        if (flags & OPEN_MODE.WRITE) {
          const target = await o.engine.statPath(o.container, p);
          if (isDir(target)) return sftp.status(id, STATUS_CODE.FAILURE, `${filename} is a directory`);
          const mode = attrs?.mode !== undefined ? attrs.mode & 0o7777 : 0o644;
          const dir = await mkdtemp(path.join(o.spoolDir ?? tmpdir(), 'sftp-'));
          const spool = path.join(dir, 'upload');
          const fh = await open(spool, 'w+', 0o600);
          const h: Handle = {
            kind: 'write',
            path: p,
            mode,
            spool: dir,
            fh,
            size: 0,
            queue: Promise.resolve(),
            failed: null,
          };
          return sftp.handle(id, newHandle(h));
        }
        const st = await o.engine.statPath(o.container, p);
        if (!st) return sftp.status(id, STATUS_CODE.NO_SUCH_FILE);
        if (isDir(st)) return sftp.status(id, STATUS_CODE.FAILURE, `${filename} is a directory`);
        sftp.handle(
          id,
          newHandle({
            kind: 'read',
            path: p,
            st,
            file: null,
            pos: 0,
            size: st.size,
            queue: Promise.resolve(),
          }),
        );
      } catch (err) {
        failWith(id, err);
      }
    })();
  });
  sftp.on('READ', (id, hb, offset, len) => {
    const h = get(hb);
    if (!h || h.kind !== 'read') return sftp.status(id, STATUS_CODE.FAILURE);
    // Requests are served one after the other, in the order they came.
    h.queue = h.queue.then(async () => {
      try {
        if (h.file && offset < h.pos) {
          h.file.close();
          h.file = null;
        }
        if (!h.file) {
          if (offset >= h.size) return sftp.status(id, STATUS_CODE.EOF);
          h.file = await o.engine.openFile(o.container, h.path);
          h.pos = 0;
          h.size = h.file.size;
        }
        if (offset >= h.file.size) return sftp.status(id, STATUS_CODE.EOF);
        if (offset > h.pos) {
          if (!(await h.file.body.skip(offset - h.pos))) return sftp.status(id, STATUS_CODE.EOF);
          h.pos = offset;
        }
        const want = Math.min(len, MAX_READ, h.file.size - offset);
        const data = await h.file.body.exactly(want);
        if (data === null) return sftp.status(id, STATUS_CODE.EOF);
        h.pos += data.length;
        sftp.data(id, data);
        // Read to its end: the engine's connection goes back at once, not at the client's CLOSE.
        if (h.pos >= h.file.size) {
          h.file.close();
          h.file = null;
        }
      } catch (err) {
        failWith(id, err);
      }
    });
  });
  sftp.on('WRITE', (id, hb, offset, data) => {
    const h = get(hb);
    if (!h || h.kind !== 'write') return sftp.status(id, STATUS_CODE.FAILURE);
    if (offset + data.length > MAX_FILE)
      return sftp.status(id, STATUS_CODE.FAILURE, 'file too large; use rsync');
    const copy = Buffer.from(data);
    h.queue = h.queue.then(async () => {
      try {
        await h.fh.write(copy, 0, copy.length, offset);
        h.size = Math.max(h.size, offset + copy.length);
        sftp.status(id, STATUS_CODE.OK);
      } catch (err) {
        h.failed ??= err as Error;
        failWith(id, err);
      }
    });
  });
  const setstat = (id: number, h: Handle | undefined, attrs: Attributes) => {
    if (h?.kind === 'write' && attrs.mode !== undefined) h.mode = attrs.mode & 0o7777;
    sftp.status(id, STATUS_CODE.OK);
  };
  sftp.on('FSETSTAT', (id, hb, attrs) => setstat(id, get(hb), attrs));
  sftp.on('SETSTAT', (id, p, attrs) => {
    if (attrs.mode !== undefined) void sh(id, ['chmod', (attrs.mode & 0o7777).toString(8), resolvePath(p)]);
    else sftp.status(id, STATUS_CODE.OK);
  });
  sftp.on('CLOSE', (id, hb) => {
    const h = get(hb);
    if (!h) return sftp.status(id, STATUS_CODE.FAILURE);
    handles.delete(hb.readUInt32BE(0));
    if (h.kind !== 'write') {
      release(h);
      return sftp.status(id, STATUS_CODE.OK);
    }
    // The spooled file goes into the container as a stream, then the spool is removed.
    h.queue = h.queue.then(async () => {
      try {
        if (h.failed) throw h.failed;
        const stream = h.fh.createReadStream({ start: 0, autoClose: false, highWaterMark: 256 * 1024 });
        await o.engine.writeFileFrom(
          o.container,
          path.posix.dirname(h.path),
          path.posix.basename(h.path),
          h.size,
          h.mode,
          stream,
        );
        sftp.status(id, STATUS_CODE.OK);
      } catch (err) {
        failWith(id, err);
      }
    });
    release(h);
  });
  sftp.on('OPENDIR', (id, p) => {
    const full = resolvePath(p);
    void (async () => {
      const st = await o.engine.statPath(o.container, full).catch(() => null);
      if (!st) return sftp.status(id, STATUS_CODE.NO_SUCH_FILE);
      sftp.handle(id, newHandle({ kind: 'dir', path: full, done: false }));
    })();
  });
  sftp.on('READDIR', (id, hb) => {
    const h = get(hb);
    if (!h || h.kind !== 'dir') return sftp.status(id, STATUS_CODE.FAILURE);
    if (h.done) return sftp.status(id, STATUS_CODE.EOF);
    h.done = true;
    void (async () => {
      try {
        const r = await runInContainer(o.engine, o.container, ['ls', '-1A', h.path]);
        const names = r.stdout.split('\n').filter(Boolean);
        if (names.length === 0) return sftp.status(id, STATUS_CODE.EOF);
        const entries = [];
        for (const n of names) {
          const st = await o.engine.statPath(o.container, path.posix.join(h.path, n)).catch(() => null);
          const attrs = st ? attrsOf(st) : ({} as Attributes);
          entries.push({ filename: n, longname: n, attrs });
        }
        sftp.name(id, entries);
      } catch (err) {
        failWith(id, err);
      }
    })();
  });
  sftp.on('MKDIR', (id, p) => void sh(id, ['mkdir', resolvePath(p)]));
  sftp.on('RMDIR', (id, p) => void sh(id, ['rmdir', resolvePath(p)]));
  sftp.on('REMOVE', (id, p) => void sh(id, ['rm', '-f', resolvePath(p)]));
  sftp.on('RENAME', (id, a, b) => void sh(id, ['mv', resolvePath(a), resolvePath(b)]));
  sftp.on('READLINK', (id) => sftp.status(id, STATUS_CODE.OP_UNSUPPORTED));
  sftp.on('SYMLINK', (id) => sftp.status(id, STATUS_CODE.OP_UNSUPPORTED));
}

function handleSession(session: Session, o: ContainerSshOptions): void {
  let pty: Pty | null = null;
  const env: Record<string, string> = {};
  let execId: string | null = null;
  session.on('pty', (accept, _reject, info) => {
    pty = { term: info.term, cols: info.cols, rows: info.rows };
    accept?.();
  });
  session.on('window-change', (accept, _reject, info) => {
    if (pty) Object.assign(pty, { cols: info.cols, rows: info.rows });
    if (execId) void o.engine.execResize(execId, info.rows, info.cols);
    accept?.();
  });
  session.on('env', (accept, _reject, info) => {
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(info.key) && info.key !== 'CONTAINER_API_KEY')
      env[info.key] = info.val;
    accept?.();
  });
  session.on('exec', (accept, _reject, info) => {
    const channel = accept();
    const scp = parseScp(info.command);
    if (scp) return void scpSession(o, channel, scp);
    void runExec(o, channel, ['/bin/sh', '-c', info.command], pty, env, (id) => (execId = id));
  });
  session.on('shell', (accept) => {
    const channel = accept();
    const cmd = [
      '/bin/sh',
      '-c',
      'cd "${HOME:-/root}" 2>/dev/null || cd /; if [ -x /bin/bash ]; then exec /bin/bash -l; fi; exec /bin/sh -l',
    ];
    void runExec(o, channel, cmd, pty, env, (id) => (execId = id));
  });
  session.on('sftp', (accept) => sftpSession(o, accept()));
  session.on('subsystem', (_accept, reject) => reject?.());
}

export function createContainerSshServer(o: ContainerSshOptions): InstanceType<typeof Ssh2.Server> {
  const allowed = keyAuthenticator(o.authorizedKeysFile, o.currentKeys);
  const id = o.instanceId;
  const rsyncLogin =
    id === undefined
      ? null
      : {
          modules: async (access: RsyncAccess) =>
            instanceModules(id, await containerRoot(o.engine, o.container), access),
          copyGrant: o.copyGrant,
        };
  const rsyncAllowed = rsyncLogin ? rsyncAuthenticator(allowed, rsyncLogin) : null;
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
    client.on('ready', () =>
      client.on('session', (accept) => {
        const access = rsync;
        if (access && rsyncLogin) handleRsyncSession(accept(), () => rsyncLogin.modules(access), o.log);
        else handleSession(accept(), o);
      }),
    );
    client.on('error', (err) => o.log(`ssh client error: ${err.message}`));
  });
}
