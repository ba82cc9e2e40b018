// The copies whose source is on this agent's machines (docs/data.md). The server lists them
// (POST copies) with a one-time key each; the agent pushes each with the host's rsync over SSH to
// the destination instance's SSH server, as `vastai_kaalia` with that key, into the instance's
// module at the destination path. The destination's SSH server runs the rsync daemon chrooted in
// the destination instance, so nothing is written outside it; here the source path is resolved
// inside the source instance's file system as a chroot would (a symbolic link on the way is read
// against the instance's own root, `..` stops at it), rsync copies the links it meets in the
// tree as links, never following them, and (as root) it runs in a sandbox whose root holds the
// source and no other file of the host (copy-sandbox.ts), so not even a link swapped in during
// the copy leads it out. Progress and the end are reported at the next call, made
// every couple of seconds while copies run; a copy the server no longer lists was canceled: its
// rsync is stopped.
// Into a volume (docs/volumes.md): a volume of this same agent is written on the host, rsync from
// the source's directory into the volume's (made first if nothing made it yet); a volume clone
// into another agent's volume is pushed as into an instance, to the SSH server that agent opened
// for it. This agent opens one for each clone the server lists in `receives` (a volume of its
// machines cloned from another agent's): made on a free port, the volume made first, serving the
// volume's directory as the clone's one module to the clone's one-time key only (write only, the
// server confirming the key); its port goes to the server at the next call, and it is closed once
// the clone is no longer listed.
import { spawn, type ChildProcess } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AgentCopy, CopyReceive, CopyReport } from '../contract/agent-protocol.js';
import { ed25519KeyPair } from '../contract/ssh-keygen.js';
import type { AgentClient } from './agent-client.js';
import type { AgentLog } from './agent-log.js';
import { sandboxUnavailable, sourceOnHost, spawnSandboxed, type SandboxBind } from './copy-sandbox.js';
import type { Runtime } from './runtime.js';
import { RSYNC_USER } from './rsync-daemon.js';
import { createSshServer } from './ssh-server.js';

/** How often progress goes to the server while copies run. */
const REPORT_EVERY_MS = 2000;
const MAX_LINKS = 40;

/**
 * `p` (an absolute path inside an instance) as a host path under `root`, resolved as if `root`
 * were `/`: each symbolic link met is followed inside `root` (an absolute target from `root`, a
 * relative one from its directory) and `..` never climbs above `root`. A missing component ends
 * the walk (the rest is appended as given). The trailing slash of `p` is kept.
 */
export function resolveInRoot(root: string, p: string): string {
  const rest = p.split('/').filter((c) => c !== '' && c !== '.');
  const cur: string[] = [];
  let links = 0;
  while (rest.length > 0) {
    const c = rest.shift()!;
    if (c === '..') {
      cur.pop();
      continue;
    }
    const host = path.join(root, ...cur, c);
    let st;
    try {
      st = lstatSync(host);
    } catch {
      cur.push(c, ...rest.filter((x) => x !== '..'));
      rest.length = 0;
      break;
    }
    if (!st.isSymbolicLink()) {
      cur.push(c);
      continue;
    }
    if (++links > MAX_LINKS) throw new Error(`${p}: too many levels of symbolic links`);
    const target = readlinkSync(host);
    if (target.startsWith('/')) cur.length = 0;
    rest.unshift(...target.split('/').filter((x) => x !== '' && x !== '.'));
  }
  const out = path.join(root, ...cur);
  return p.endsWith('/') && out !== root ? `${out}/` : p.endsWith('/') ? `${root}/` : out;
}

/** rsync --info=progress2 lines: `  1,234,567  45%   12.34MB/s    0:00:03 (xfr#3, to-chk=2/9)`. */
export function parseProgress(line: string): { bytes: number; percent: number; rate: string } | null {
  const m = /^\s*([\d,]+)\s+(\d{1,3})%\s+(\S+\/s)/.exec(line);
  if (!m) return null;
  return { bytes: Number(m[1]!.replace(/,/g, '')), percent: Number(m[2]), rate: m[3]! };
}

function human(n: number): string {
  const u = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let x = n;
  while (x >= 1000 && i < u.length - 1) {
    x /= 1000;
    i++;
  }
  return `${i === 0 ? x : x.toFixed(1)} ${u[i]}`;
}

interface Running {
  child: ChildProcess | null;
  report: CopyReport;
  canceled: boolean;
}

export interface CopyHost {
  client: AgentClient;
  uid: string;
  machineIds(): number[];
  runtime: Runtime;
  log: AgentLog;
  /** Where the SSH servers of received clones listen (the instances' SSH address); default all. */
  sshBind?: string;
}

/** An SSH server this agent opened for a volume clone it receives. */
interface Receiver {
  volumeId: number;
  close(): void;
  port: Promise<number>;
  /** Set once listening. */
  listening: number | null;
}

export class CopyRunner {
  private readonly running = new Map<number, Running>();
  /** Ends not yet taken by the server. */
  private readonly ended = new Map<number, CopyReport>();
  /** Every copy this agent process started (a `running` one it did not was cut by a restart). */
  private readonly seen = new Set<number>();
  private timer: NodeJS.Timeout | null = null;
  private syncing: Promise<void> | null = null;
  private stopped = false;
  /** The SSH servers of the clones this agent receives, by copy id. */
  private readonly receivers = new Map<number, Receiver>();

  constructor(private readonly h: CopyHost) {}

  /** Reports, and starts or stops copies as the server lists them. One call at a time. */
  sync(): Promise<void> {
    if (this.syncing) return this.syncing;
    this.syncing = this.syncOnce().finally(() => {
      this.syncing = null;
    });
    return this.syncing;
  }

  private async syncOnce(): Promise<void> {
    if (this.h.machineIds().length === 0) return;
    const ends = [...this.ended.values()];
    const reports = [...ends, ...[...this.running.values()].map((r) => r.report)];
    const receiving = [...this.receivers.entries()]
      .filter(([, r]) => r.listening !== null)
      .map(([id, r]) => ({ id, port: r.listening! }));
    const res = await this.h.client.copies({
      agent_uid: this.h.uid,
      machine_ids: this.h.machineIds(),
      reports,
      ...(receiving.length > 0 ? { receiving } : {}),
    });
    for (const e of ends) this.ended.delete(e.id);
    await this.receive(res.receives ?? []);
    const listed = new Set(res.copies.map((c) => c.id));
    for (const [id, r] of this.running) {
      if (listed.has(id)) continue;
      r.canceled = true;
      r.child?.kill('SIGTERM');
      this.h.log.info(`copy ${id} canceled: rsync stopped`);
    }
    for (const c of res.copies) {
      if (this.running.has(c.id) || this.seen.has(c.id) || this.stopped) continue;
      this.seen.add(c.id);
      if (c.status !== 'queued') {
        this.finish(c.id, {
          id: c.id,
          state: 'failed',
          msg: "the source's agent restarted during the copy; run it again (what was copied is kept)",
        });
        continue;
      }
      void this.start(c);
    }
    this.schedule();
  }

  private schedule(): void {
    if (
      this.timer ||
      this.stopped ||
      (this.running.size === 0 && this.ended.size === 0 && this.receivers.size === 0)
    )
      return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.sync().catch((err: Error) => this.h.log.warn(`copies: ${err.message}`));
    }, REPORT_EVERY_MS);
    this.timer.unref();
  }

  private finish(id: number, report: CopyReport): void {
    this.running.delete(id);
    this.ended.set(id, report);
    this.schedule();
  }

  /**
   * Opens an SSH server for each clone listed that has none (the volume made first), and closes
   * those of clones no longer listed. A server whose port changed (opened again) is reported anew.
   */
  private async receive(list: readonly CopyReceive[]): Promise<void> {
    const listed = new Map(list.map((r) => [r.id, r]));
    for (const [id, r] of this.receivers) {
      if (listed.has(id)) continue;
      r.close();
      this.receivers.delete(id);
      this.h.log.info(`clone ${id} into volume ${r.volumeId}: no longer listed, its SSH server closed`);
    }
    if (this.stopped) return;
    let opened = false;
    for (const r of list) {
      if (this.receivers.has(r.id)) continue;
      const store = this.h.runtime.volumes;
      if (!store) {
        this.h.log.warn(`clone ${r.id}: this runtime keeps no volumes`);
        continue;
      }
      const rec = this.openReceiver(r, store.ensure(r.volume_id, r.size_gb));
      this.receivers.set(r.id, rec);
      opened = true;
      rec.port.then(
        (port) => {
          rec.listening = port;
          this.h.log.info(`clone ${r.id} into volume ${r.volume_id}: receiving on port ${port}`);
          // The source's agent waits for the port: it goes to the server now.
          void this.sync().catch(() => {});
        },
        (err: Error) => {
          this.h.log.warn(`clone ${r.id} into volume ${r.volume_id}: cannot receive (${err.message})`);
          if (this.receivers.get(r.id) === rec) this.receivers.delete(r.id);
        },
      );
    }
    if (opened) this.schedule();
  }

  private openReceiver(r: CopyReceive, data: Promise<string>): Receiver {
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-clone-'));
    let closed = false;
    const server = createSshServer({
      hostKey: Buffer.from(ed25519KeyPair('openrig-clone').private),
      // No renter's key logs in here: the one login is the clone's, with its one-time key.
      authorizedKeysFile: path.join(dir, 'authorized_keys'),
      cwd: dir,
      env: {},
      log: (msg) => this.h.log.info(`clone ${r.id}: ${msg}`),
      rsync: {
        modules: async (access) =>
          access === 'copy' ? [{ name: String(r.volume_id), path: await data, writeOnly: true }] : [],
        copyGrant: async (blob, consume) => {
          try {
            return (await this.h.client.copyAuth({ volume: r.volume_id }, blob.toString('base64'), consume))
              .ok;
          } catch (err) {
            this.h.log.warn(`clone ${r.id}: the server did not confirm its key (${(err as Error).message})`);
            return false;
          }
        },
      },
    });
    const close = () => {
      if (closed) return;
      closed = true;
      server.close();
      rmSync(dir, { recursive: true, force: true });
    };
    const port = data.then(
      () =>
        new Promise<number>((resolve, reject) => {
          if (closed) return reject(new Error('closed'));
          server.once('error', reject);
          server.listen(0, this.h.sshBind ?? '0.0.0.0', () =>
            resolve((server.address() as AddressInfo).port),
          );
        }),
    );
    port.catch(close);
    return { volumeId: r.volume_id, close, port, listening: null };
  }

  /** Why the sending rsync runs without its sandbox (copy-sandbox.ts); null: it has one. */
  private readonly noSandbox = sandboxUnavailable();
  /** The host directory each copy under way reads from, bound into its sandbox. */
  private readonly sourceMounts = new Map<number, string>();

  /**
   * The host path of the copy's source, resolved inside the instance or volume; with the sandbox,
   * where it is on the host (a container's files under its overlay or volume directory).
   */
  private async sourcePath(c: AgentCopy, tmp: () => string): Promise<string> {
    let root: string | null;
    if (c.src_kind === 'volume') {
      const store = this.h.runtime.volumes;
      if (!store) throw new Error('this runtime keeps no volumes');
      // A volume never made here was never written: it is copied as the empty directory it is.
      root = (await store.existing(c.src_id)) ?? tmp();
    } else root = (await this.h.runtime.fileRoot?.(c.src_id)) ?? null;
    if (!root) throw new Error(`the source ${c.src_kind} ${c.src_id} is not running on this host`);
    const resolved = resolveInRoot(root, c.src_path);
    if (this.noSandbox) {
      this.h.log.warn(`copy ${c.id}: its rsync runs without a sandbox (${this.noSandbox})`);
      return resolved;
    }
    const where = sourceOnHost(root, resolved);
    this.sourceMounts.set(c.id, where.mount);
    return where.path;
  }

  /** The copy's sandbox binds: its source (read-only), its key's directory, a local volume it writes. */
  private sandboxBinds(c: AgentCopy, keyDir: string | null): SandboxBind[] {
    const binds: SandboxBind[] = [{ path: this.sourceMounts.get(c.id)! }];
    if (keyDir) binds.push({ path: keyDir });
    const to = c as AgentCopy & { dst_kind?: string; dst_port?: number };
    const local = to.dst_kind === 'volume' && to.dst_port === 0 ? this.h.runtime.volumes : undefined;
    if (local) binds.push({ path: local.dataDir(c.dst_id), writable: true });
    return binds;
  }

  private async start(c: AgentCopy): Promise<void> {
    const r: Running = {
      child: null,
      report: { id: c.id, state: 'running', progress: 'starting' },
      canceled: false,
    };
    this.running.set(c.id, r);
    let dir: string | null = null;
    try {
      const src = await this.sourcePath(c, () => {
        dir ??= mkdtempSync(path.join(tmpdir(), 'openrig-copy-'));
        mkdirSync(path.join(dir, 'empty'), { recursive: true });
        return path.join(dir, 'empty');
      });
      const intoVolume = c.dst_kind === 'volume';
      const common = [
        '-a',
        '--partial',
        '--mkpath',
        '--info=progress2',
        '--no-inc-recursive',
        ...c.excludes.map((e) => `--exclude=${e}`),
      ];
      let args: string[];
      if (intoVolume && c.dst_port === 0) {
        // A volume of this agent: written on the host, from directory to directory, links as links.
        const store = this.h.runtime.volumes;
        if (!store) throw new Error('this runtime keeps no volumes');
        const root = await store.ensure(c.dst_id, c.dst_size_gb ?? 1);
        args = [...common, src, resolveInRoot(root, c.dst_path)];
      } else {
        if (!/^[A-Za-z0-9.:-]+$/.test(c.dst_host)) throw new Error(`bad destination address ${c.dst_host}`);
        dir ??= mkdtempSync(path.join(tmpdir(), 'openrig-copy-'));
        const keyFile = path.join(dir, 'key');
        writeFileSync(keyFile, c.key.endsWith('\n') ? c.key : `${c.key}\n`, { mode: 0o600 });
        const ssh = [
          'ssh',
          `-i ${keyFile}`,
          `-p ${c.dst_port}`,
          '-o StrictHostKeyChecking=no',
          '-o UserKnownHostsFile=/dev/null',
          '-o IdentitiesOnly=yes',
          '-o BatchMode=yes',
          '-o LogLevel=ERROR',
        ].join(' ');
        args = [
          ...common,
          ...(c.compress ? ['-z'] : []),
          '-e',
          ssh,
          src,
          `${RSYNC_USER}@${c.dst_host}::${c.dst_id}${c.dst_path}`,
        ];
      }
      this.h.log.info(
        `copy ${c.id}: ${c.src_kind} ${c.src_id}:${c.src_path} → ${intoVolume ? 'volume' : 'instance'} ${c.dst_id}:${c.dst_path}`,
      );
      const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir ?? tmpdir() };
      const child = this.noSandbox
        ? spawn('rsync', args, { stdio: ['ignore', 'pipe', 'pipe'], env })
        : spawnSandboxed('rsync', args, this.sandboxBinds(c, dir), env);
      r.child = child;
      let err = '';
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out = (out + d.toString('utf8')).slice(-4096);
        const lines = out.split(/[\r\n]/).filter((l) => l.trim() !== '');
        for (let i = lines.length - 1; i >= 0; i--) {
          const p = parseProgress(lines[i]!);
          if (p) {
            r.report = {
              id: c.id,
              state: 'running',
              progress: `${human(p.bytes)} ${p.percent}% ${p.rate}`,
              bytes: p.bytes,
            };
            break;
          }
        }
      });
      child.stderr.on('data', (d: Buffer) => {
        err = (err + d.toString('utf8')).slice(-4000);
      });
      this.schedule();
      const code = await new Promise<number | null>((resolve) => {
        child.once('error', (e) => {
          err += e.message;
          resolve(127);
        });
        child.once('close', (code) => resolve(code));
      });
      if (r.canceled) {
        this.running.delete(c.id);
        return;
      }
      if (code === 0) {
        this.h.log.info(`copy ${c.id} done`);
        this.finish(c.id, {
          id: c.id,
          state: 'done',
          ...(r.report.bytes !== undefined ? { bytes: r.report.bytes } : {}),
        });
      } else {
        const why =
          err.trim().split('\n').filter(Boolean).slice(-3).join('; ') || `rsync exited with ${code}`;
        this.h.log.warn(`copy ${c.id} failed: ${why}`);
        this.finish(c.id, { id: c.id, state: 'failed', msg: why.slice(0, 2000) });
      }
    } catch (e) {
      this.h.log.warn(`copy ${c.id} failed: ${(e as Error).message}`);
      this.finish(c.id, { id: c.id, state: 'failed', msg: (e as Error).message.slice(0, 2000) });
    } finally {
      this.sourceMounts.delete(c.id);
      if (dir) rmSync(dir, { recursive: true, force: true });
      void this.sync().catch(() => {});
    }
  }

  /** Stops every rsync this agent runs and closes its clones' SSH servers (the agent is stopping). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    for (const r of this.receivers.values()) r.close();
    this.receivers.clear();
    for (const r of this.running.values()) {
      r.canceled = true;
      r.child?.kill('SIGTERM');
    }
  }
}
