// The process runtime: an instance is a working directory under STATE_DIR/instances/ID and a
// process tree led by its main process (supervisor.ts), which runs detached in its own process
// group, serves SSH and runs `onstart` (under runtype `args`, the instance's program instead). Its
// pid is in main.pid (operator contract). The "image" is recorded, not pulled: processes run on
// the host itself.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  openSync,
  closeSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { ed25519KeyPair } from '../contract/ssh-keygen.js';
import {
  LOGS_MAX_BYTES,
  LOGS_MAX_LINES,
  type DiskUsage,
  type InstanceSpec,
  type ObservedState,
  type Runtime,
} from './runtime.js';
import { linkProcessVolumes, VolumeStore } from './volumes.js';
import { dirSize } from './usage.js';
import { FILES, type SupervisorSecrets, type SupervisorSpec } from './supervisor.js';
import type { KeyCheck } from './key-check.js';
import { textOf } from '../contract/text.js';
import { packageRoot } from '../contract/package-root.js';

// Always the built copy (a script of its own, run by `node`), also from the TypeScript sources (tests).
const SUPERVISOR = path.join(packageRoot(), 'dist/agent/supervisor.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ProcessRuntimeOptions {
  stateDir: string;
  /** Address the instances' SSH servers listen on. */
  sshBind: string;
  /** Called when a main process this agent started exits (so it can report at once). */
  onExit?: (id: number) => void;
  startTimeoutMs?: number;
  stopGraceMs?: number;
  /** Where instances' SSH servers confirm a key before accepting it (absent: the synced file only). */
  keyCheck?: KeyCheck;
}

function readInt(file: string): number | null {
  try {
    const n = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}

/**
 * Variables of the agent's environment a supervisor inherits: what Node and the shell need, never
 * the agent's own settings (OPENRIG_API_KEY is the host's key) nor anything else of its operator.
 */
const SUPERVISOR_ENV = [
  'PATH',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TZ',
  'TMPDIR',
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
];

export function supervisorEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of SUPERVISOR_ENV) if (env[k] !== undefined) out[k] = env[k]!;
  return out;
}

/**
 * The `unshare` flags that give an instance a mount namespace of its own, in which its files are
 * mounted at `/root` (so an onstart or a shell that writes to `/root`, as in an image, writes
 * into the instance and never into the host's own `/root`): a user namespace too where the agent
 * is not root. Null where the host allows neither (no `unshare`, user namespaces switched off):
 * the instance then sees the host's `/root`, which the agent says at start. Probed once.
 */
let privateRoot: string[] | null | undefined;
export function privateRootFlags(): string[] | null {
  if (privateRoot !== undefined) return privateRoot;
  const flags = [
    ...(process.getuid?.() === 0 ? [] : ['--user', '--map-root-user']),
    '--mount',
    '--propagation',
    'private',
  ];
  const probe = spawnSync('unshare', [...flags, '--', '/bin/sh', '-c', 'mount --bind -- / /root'], {
    stdio: 'ignore',
    timeout: 5_000,
  });
  privateRoot = probe.status === 0 ? flags : null;
  return privateRoot;
}

/**
 * The command that starts an instance's supervisor: in a namespace of its own with the
 * instance's files at `/root` when `flags` are given (the supervisor is told so by
 * OPENRIG_PRIVATE_ROOT, and keeps the process id the command starts with: every step execs).
 */
export function supervisorCommand(dir: string, flags: string[] | null): string[] {
  if (!flags) return [process.execPath, SUPERVISOR, dir];
  return [
    'unshare',
    ...flags,
    '--',
    '/bin/sh',
    '-c',
    'mount --bind -- "$1" /root && cd /root && OPENRIG_PRIVATE_ROOT=1 exec "$0" "$2" "$3"',
    process.execPath,
    path.join(dir, FILES.root),
    SUPERVISOR,
    dir,
  ];
}

/** True when `pid` is alive (not a zombie) and is the supervisor of `dir` (pids get reused). */
export function isMainProcess(pid: number, dir: string): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (process.platform !== 'linux') return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (/\) Z /.test(stat)) return false;
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    // Empty while the process is between one program and the next (the start's unshare and sh
    // exec the supervisor in turn): it is still the one started.
    if (cmdline === '') return true;
    return cmdline.split('\0').includes(dir);
  } catch {
    return false;
  }
}

function killGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig); // the whole process group: supervisor, onstart, SSH sessions
  } catch {
    try {
      process.kill(pid, sig);
    } catch {
      /* already gone */
    }
  }
}

/**
 * Processes of an instance that left its process group (setsid, daemons, pty sessions), found by
 * the OPENRIG_INSTANCE_DIR their environment inherited. Linux only (/proc); elsewhere none.
 */
export function instanceStragglers(dir: string): number[] {
  if (process.platform !== 'linux') return [];
  const marker = `OPENRIG_INSTANCE_DIR=${dir}`;
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, 'utf8').split('\0').includes(marker)) out.push(Number(name));
    } catch {
      /* gone, or not ours to read */
    }
  }
  return out;
}

/** Resolves once something on host:port speaks SSH (reads the identification banner). */
export function sshAccepts(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once('data', (d) => done(d.toString('latin1').startsWith('SSH-')));
    s.once('error', () => done(false));
  });
}

/**
 * `text` with the host path of an instance's working directory `root` shown as the instance's `/`:
 * `root/x` reads `/x` and `root` itself `/`, but a longer name that begins the same (`rootless`)
 * is left alone.
 */
export function instancePaths(text: string, root: string): string {
  const escaped = root.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return text.replace(new RegExp(`${escaped}(?:/|(?![\\w.-]))`, 'g'), '/');
}

/**
 * The last `lines` lines of a file, at most its last `maxBytes` bytes: only that end of the file
 * is read, so a log of any size costs the same. '' when the file does not exist.
 */
export async function tailFile(file: string, lines: number, maxBytes: number): Promise<string> {
  let fh: FileHandle;
  try {
    fh = await open(file, 'r');
  } catch {
    return '';
  }
  try {
    const size = (await fh.stat()).size;
    const len = Math.min(size, maxBytes);
    const buf = Buffer.alloc(len);
    await fh.read(buf, 0, len, size - len);
    let start = 0;
    // A cut file starts at its first whole line.
    if (len < size) start = buf.indexOf(10) + 1;
    let end = buf.length;
    if (end > start && buf[end - 1] === 10) end--;
    // Back from the end over `lines` newlines.
    let i = end;
    let n = 0;
    while (i > start && n < lines) {
      const nl = buf.lastIndexOf(10, i - 1);
      if (nl < start) {
        i = start;
        break;
      }
      n++;
      i = n < lines ? nl : nl + 1;
    }
    if (lines <= 0) i = buf.length;
    return buf.subarray(i, buf.length).toString('utf8');
  } finally {
    await fh.close();
  }
}

export class ProcessRuntime implements Runtime {
  readonly name = 'process' as const;
  private readonly exitMsgs = new Map<number, string>();
  private readonly children = new Map<number, ChildProcess>();

  /** Volumes here are plain directories: their size is not enforced (volumes.ts). */
  readonly volumes: VolumeStore;

  constructor(private readonly o: ProcessRuntimeOptions) {
    this.volumes = new VolumeStore(o.stateDir, 'directory', {
      info: () => {},
      warn: (m) => process.stderr.write(`openrig agent: ${m}\n`),
    });
  }

  dir(id: number): string {
    return path.join(path.resolve(this.o.stateDir), 'instances', String(id));
  }

  private file(id: number, f: string): string {
    return path.join(this.dir(id), f);
  }

  async prepare(spec: InstanceSpec): Promise<void> {
    const d = this.dir(spec.id);
    // A new instance's files are of its spec's generation; an existing one's change generation
    // only by recreate (a reboot of an outdated instance must not pass for the update).
    if (!existsSync(d)) {
      mkdirSync(d, { recursive: true, mode: 0o700 });
      writeFileSync(path.join(d, FILES.generation), `${spec.generation ?? 1}\n`);
    }
    mkdirSync(path.join(d, FILES.root), { recursive: true, mode: 0o700 });
    const hostKey = path.join(d, FILES.hostKey);
    if (!existsSync(hostKey)) {
      // One host key per instance, kept across stop/start so known_hosts stays valid.
      const kp = ed25519KeyPair();
      writeFileSync(hostKey, kp.private, { mode: 0o600 });
    }
    writeFileSync(path.join(d, FILES.onstart), spec.onstart, { mode: 0o700 });
    // Its volumes, linked at their mount paths under its root directory (volumes.ts).
    const volumeEnv = await linkProcessVolumes(this.volumes, path.join(d, FILES.root), spec.volumes);
    await this.updateKeys(spec.id, spec.authorizedKeys);
    const prev = readInt(path.join(d, `${FILES.port}.last`));
    const s: SupervisorSpec = {
      id: spec.id,
      env: { ...spec.env, ...volumeEnv },
      sshBind: this.o.sshBind,
      sshPortHint: prev,
      // Runtype `args`: no image brings an entrypoint here, so without one the first argument is
      // the program, as for an image that has none.
      main: spec.args ? (spec.entrypoint ? [spec.entrypoint, ...spec.args] : spec.args) : null,
    };
    // The env holds the instance's own CONTAINER_API_KEY; the host's key is never written here
    // (the supervisor gets it on its stdin, see start).
    writeFileSync(path.join(d, FILES.spec), JSON.stringify(s), { mode: 0o600 });
  }

  async start(spec: InstanceSpec): Promise<{ sshPort: number }> {
    const cur = await this.inspect(spec.id);
    if (cur.state === 'running') return { sshPort: cur.sshPort };
    if (cur.state !== 'starting') {
      await this.prepare(spec);
      const d = this.dir(spec.id);
      rmSync(this.file(spec.id, FILES.port), { force: true });
      this.exitMsgs.delete(spec.id);
      const log = openSync(this.file(spec.id, FILES.log), 'a');
      const [cmd, ...argv] = supervisorCommand(d, privateRootFlags());
      const child = spawn(cmd!, argv, {
        detached: true,
        cwd: path.join(d, FILES.root),
        stdio: ['pipe', log, log],
        env: supervisorEnv(process.env),
      });
      closeSync(log);
      if (!child.pid) throw new Error('the main process could not be started');
      // The host's key reaches the supervisor through a pipe it reads once: it is in no file of
      // the instance and in no process environment a renter's shell could read (/proc/PID/environ).
      child.stdin!.on('error', () => {});
      child.stdin!.end(JSON.stringify({ keyCheck: this.o.keyCheck ?? null } satisfies SupervisorSecrets));
      writeFileSync(this.file(spec.id, FILES.pid), `${child.pid}\n`);
      this.children.set(spec.id, child);
      child.on('exit', (code, signal) => {
        this.children.delete(spec.id);
        this.exitMsgs.set(spec.id, `main process exited (${signal ? `signal ${signal}` : `code ${code}`})`);
        this.o.onExit?.(spec.id);
      });
      child.unref(); // the instance outlives the agent
    }
    const end = Date.now() + (this.o.startTimeoutMs ?? 30_000);
    for (;;) {
      const st = await this.inspect(spec.id);
      if (st.state === 'exited') throw new Error(st.msg);
      if (st.state === 'running' && (await sshAccepts(this.probeHost(), st.sshPort)))
        return { sshPort: st.sshPort };
      if (Date.now() > end) throw new Error('the SSH server did not come up in time');
      await sleep(100);
    }
  }

  private probeHost(): string {
    return this.o.sshBind === '0.0.0.0' || this.o.sshBind === '::' ? '127.0.0.1' : this.o.sshBind;
  }

  async stop(id: number, graceS?: number): Promise<void> {
    const pidFile = this.file(id, FILES.pid);
    const pid = readInt(pidFile);
    // main.pid goes first: from here on a dying main process is a stop, not an exit.
    rmSync(pidFile, { force: true });
    if (pid) {
      killGroup(pid, 'SIGTERM');
      const end = Date.now() + (graceS !== undefined ? graceS * 1000 : (this.o.stopGraceMs ?? 5000));
      while (isMainProcess(pid, this.dir(id)) && Date.now() < end) await sleep(50);
      killGroup(pid, 'SIGKILL'); // whatever is left of the tree
    }
    for (const p of instanceStragglers(this.dir(id))) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    const port = this.file(id, FILES.port);
    if (existsSync(port)) renameSync(port, `${port}.last`);
    this.exitMsgs.delete(id);
  }

  async destroy(id: number): Promise<void> {
    if (!existsSync(this.dir(id))) return;
    await this.stop(id);
    rmSync(this.dir(id), { recursive: true, force: true });
  }

  async inspect(id: number): Promise<ObservedState> {
    const d = this.dir(id);
    if (!existsSync(d)) return { state: 'absent' };
    const generation = readInt(this.file(id, FILES.generation)) ?? 1;
    const pid = readInt(this.file(id, FILES.pid));
    if (pid === null) return { state: 'stopped', generation };
    if (!isMainProcess(pid, d)) {
      const why = this.exitMsgs.get(id) ?? `main process (pid ${pid}) is gone`;
      const last = this.lastLogLine(id);
      return { state: 'exited', msg: last ? `${why}: ${last}` : why, generation };
    }
    const port = readInt(this.file(id, FILES.port));
    return port === null
      ? { state: 'starting', generation }
      : { state: 'running', sshPort: port, generation };
  }

  /** The supervisor's last error line (a crash, a failed listen), for status_msg. */
  private lastLogLine(id: number): string | null {
    try {
      const lines = readFileSync(this.file(id, FILES.log), 'utf8').trimEnd().split('\n');
      const errLine = lines
        .slice(-20)
        .reverse()
        .find((l) => /Error|failed/.test(l));
      return errLine ? errLine.trim().slice(0, 200) : null;
    } catch {
      return null;
    }
  }

  async updateKeys(id: number, keys: string[]): Promise<void> {
    const file = this.file(id, FILES.keys);
    const text = keys.map((k) => k.trim()).join('\n') + (keys.length ? '\n' : '');
    let cur: string | null = null;
    try {
      cur = readFileSync(file, 'utf8');
    } catch {
      /* first time */
    }
    if (cur === text) return;
    writeFileSync(`${file}.tmp`, text, { mode: 0o600 });
    renameSync(`${file}.tmp`, file); // the SSH server re-reads it at every login attempt
  }

  async logs(id: number, tail: number | null): Promise<string> {
    return tailFile(this.file(id, FILES.onstartLog), tail ?? LOGS_MAX_LINES, LOGS_MAX_BYTES);
  }

  async reboot(spec: InstanceSpec): Promise<void> {
    await this.stop(spec.id);
    await this.start(spec);
  }

  /**
   * The process runtime has no image: a recycle empties the working directory and starts afresh,
   * as a recreate from the same configuration does.
   */
  async recycle(spec: InstanceSpec): Promise<void> {
    await this.recreate(spec, { start: true });
  }

  /**
   * An update: the instance's processes end, its working directory (its disk) is emptied, and its
   * files are written from the new spec; the SSH host key and port stay. The generation is
   * written last, so an agent that dies part-way finds the old generation and does it again.
   */
  async recreate(spec: InstanceSpec, opts: { start: boolean }): Promise<void> {
    await this.stop(spec.id);
    const d = this.dir(spec.id);
    const root = path.join(d, FILES.root);
    rmSync(root, { recursive: true, force: true });
    rmSync(this.file(spec.id, FILES.onstartLog), { force: true });
    await this.prepare(spec);
    const gen = this.file(spec.id, FILES.generation);
    writeFileSync(`${gen}.tmp`, `${spec.generation ?? 1}\n`);
    renameSync(`${gen}.tmp`, gen);
    if (opts.start) await this.start(spec);
  }

  /**
   * Runs the command in the instance's working directory; path arguments are taken inside it (an
   * absolute path is relative to it) and may not leave it. The output shows paths as the instance
   * sees them: a relative path is passed as given, an absolute one is passed below the working
   * directory and the working directory's own path in the output reads `/` again.
   */
  async execute(id: number, argv: string[]): Promise<string> {
    const root = path.join(this.dir(id), FILES.root);
    const args = argv.slice(1).map((a) => {
      if (a.startsWith('-')) return a;
      const p = path.resolve(root, a.replace(/^\/+/, ''));
      if (p !== root && !p.startsWith(root + path.sep)) throw new Error(`${a} is outside the instance`);
      return a.startsWith('/') ? p : a;
    });
    const { execFile } = await import('node:child_process');
    const text = await new Promise<string>((resolve) => {
      execFile(argv[0]!, args, { cwd: root, encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) => {
        const code = err ? ((err as { code?: unknown }).code ?? 1) : 0;
        resolve(stdout + stderr + (code === 0 ? '' : `(exit code ${textOf(code)})\n`));
      });
    });
    return instancePaths(text, root);
  }

  /** Everything its directory holds: its files under `root/`, its output and the agent's files of it. */
  /** Its root directory (its `/`), while its main process runs. */
  async fileRoot(id: number): Promise<string | null> {
    return (await this.inspect(id)).state === 'running' ? path.join(this.dir(id), FILES.root) : null;
  }

  async diskUsage(id: number): Promise<DiskUsage | null> {
    return dirSize(this.dir(id));
  }

  async list(): Promise<number[]> {
    const base = path.join(path.resolve(this.o.stateDir), 'instances');
    if (!existsSync(base)) return [];
    return readdirSync(base)
      .filter((n) => /^[1-9]\d*$/.test(n))
      .map(Number)
      .sort((a, b) => a - b);
  }
}
