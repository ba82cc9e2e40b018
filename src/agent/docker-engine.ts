// A small client of the Docker Engine API (version 1.41, Docker 20.10 and later) over its Unix
// socket, with undici: JSON requests, the streamed pull, logs, the container archive (files in
// and out) and exec with a hijacked stream (the connection upgraded to raw TCP). docs/agent.md
// says why this rather than dockerode.
import type { Pool } from 'undici';
import type * as Undici from 'undici';
import { lazyRequire } from '../contract/lazy-require.js';
import { Readable, type Duplex } from 'node:stream';

// Loaded when a Docker engine is first used: every `serve` process loads this module (the demo's
// agents run in-process), and undici is a fifth of the bundle.
const undici = lazyRequire<typeof Undici>('undici');

export const ENGINE_API = '/v1.41';

export class EngineError extends Error {
  constructor(
    readonly status: number,
    msg: string,
  ) {
    super(msg);
  }
}

export interface RegistryAuth {
  username: string;
  password: string;
  serveraddress?: string;
}

export interface ExecOptions {
  cmd: string[];
  tty: boolean;
  env?: string[];
  user?: string;
  workingDir?: string;
}

/** The parts of a container's inspect document the agent reads. */
export interface ContainerInspect {
  Id: string;
  Config?: { Labels?: Record<string, string> };
  State?: {
    Status?: string;
    Running?: boolean;
    Paused?: boolean;
    Restarting?: boolean;
    OOMKilled?: boolean;
    Error?: string;
    ExitCode?: number;
    /** The container's main process as the host sees it (0 when it does not run). */
    Pid?: number;
  };
  NetworkSettings?: {
    Ports?: Record<string, { HostIp: string; HostPort: string }[] | null>;
    Networks?: Record<string, { IPAddress?: string }>;
  };
  HostConfig?: { PortBindings?: Record<string, { HostIp?: string; HostPort?: string }[] | null> };
  /** Bytes of its writable layer (only when inspected with `size`). */
  SizeRw?: number;
  Mounts?: { Type?: string; Name?: string; Source?: string; Destination?: string; Driver?: string }[];
}

/** A container as the engine lists it. */
export interface ContainerSummary {
  Id: string;
  Names: string[];
  Labels: Record<string, string>;
  /** created, running, paused, restarting, removing, exited or dead. */
  State: string;
  Ports?: { IP?: string; PrivatePort: number; PublicPort?: number; Type: string }[];
}

export interface PathStat {
  name: string;
  size: number;
  mode: number;
  mtime: string;
  linkTarget: string;
}

type Query = Record<string, string | number | boolean | undefined>;

function qs(q: Query | undefined): string {
  if (!q) return '';
  const parts = Object.entries(q)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  return parts.length ? `?${parts.join('&')}` : '';
}

/** The engine's reason from an error body ({"message": …}), else the HTTP status. */
function reason(status: number, text: string): string {
  try {
    const j = JSON.parse(text) as { message?: string };
    if (j.message) return j.message;
  } catch {
    /* not JSON */
  }
  return text.trim() || `HTTP ${status}`;
}

/**
 * Connections to the engine at most, per pool. A pull, a log or an archive holds one for as long
 * as it streams (minutes, for a large image or file), and renters start those at will, so they
 * go through a pool of their own (`bulk`): the agent's listing, inspecting and creating for its
 * heartbeat, and the execs of SSH sessions (`client`), never wait behind them, however many
 * transfers renters hold open.
 */
const ENGINE_CONNECTIONS = 32;
const BULK_CONNECTIONS = 64;

export class DockerEngine {
  private readonly client: Pool;
  private readonly bulk: Pool;

  constructor(readonly socketPath = '/var/run/docker.sock') {
    const pool = (connections: number) =>
      new (undici().Pool)('http://docker', {
        socketPath,
        connections,
        bodyTimeout: 0,
        headersTimeout: 60_000,
      });
    this.client = pool(ENGINE_CONNECTIONS);
    this.bulk = pool(BULK_CONNECTIONS);
  }

  async close(): Promise<void> {
    await Promise.all([this.client.close(), this.bulk.close()]);
  }

  /** One JSON request; throws EngineError with the engine's message on a 4xx/5xx. */
  async call<T = unknown>(
    method: 'GET' | 'POST' | 'DELETE' | 'PUT' | 'HEAD',
    path: string,
    o: { query?: Query; body?: unknown; ok404?: boolean; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; body: T; headers: Record<string, string | string[] | undefined> }> {
    const res = await this.client.request({
      method,
      path: `${ENGINE_API}${path}${qs(o.query)}`,
      headers: {
        ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...o.headers,
      },
      body: o.body !== undefined ? JSON.stringify(o.body) : undefined,
    });
    const text = method === 'HEAD' ? '' : await res.body.text();
    if (res.statusCode >= 400 && !(o.ok404 && res.statusCode === 404))
      throw new EngineError(res.statusCode, reason(res.statusCode, text));
    let body: unknown = null;
    if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    return { status: res.statusCode, body: body as T, headers: res.headers };
  }

  async ping(): Promise<boolean> {
    try {
      const res = await this.client.request({ method: 'GET', path: '/_ping' });
      await res.body.text();
      return res.statusCode === 200;
    } catch {
      return false;
    }
  }

  info(): Promise<{
    Driver: string;
    DriverStatus: [string, string][] | null;
    NCPU: number;
    MemTotal: number;
  }> {
    return this.call<{
      Driver: string;
      DriverStatus: [string, string][] | null;
      NCPU: number;
      MemTotal: number;
    }>('GET', '/info').then((r) => r.body);
  }

  /** The local image's id (sha256:…) and tags, or null when there is none of that reference. */
  async image(ref: string): Promise<{ Id: string; RepoTags?: string[] | null } | null> {
    const r = await this.call<{ Id: string; RepoTags?: string[] | null }>(
      'GET',
      `/images/${encodeURIComponent(ref)}/json`,
      { ok404: true },
    );
    return r.status === 200 ? r.body : null;
  }

  /** The local image's id (sha256:…), or null when there is none of that reference. */
  async imageId(ref: string): Promise<string | null> {
    return (await this.image(ref))?.Id ?? null;
  }

  async imageExists(ref: string): Promise<boolean> {
    const r = await this.call('GET', `/images/${encodeURIComponent(ref)}/json`, { ok404: true });
    return r.status === 200;
  }

  /**
   * Pulls `ref`, calling `progress(done, total)` in bytes as layers download; throws the engine's
   * reason when the pull fails (the stream's error line, or the HTTP error).
   */
  async pull(
    ref: string,
    auth: RegistryAuth | null,
    progress: (done: number, total: number) => void,
  ): Promise<void> {
    const { name, tag } = splitRef(ref);
    const res = await this.bulk.request({
      method: 'POST',
      path: `${ENGINE_API}/images/create${qs({ fromImage: name, tag })}`,
      headers: auth ? { 'x-registry-auth': registryAuthHeader(auth) } : {},
    });
    if (res.statusCode >= 400) {
      const text = await res.body.text();
      throw new EngineError(res.statusCode, reason(res.statusCode, text));
    }
    const layers = new Map<string, { current: number; total: number }>();
    let buf = '';
    let failure: string | null = null;
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      buf += chunk.toString('utf8');
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        let ev: {
          id?: string;
          status?: string;
          error?: string;
          progressDetail?: { current?: number; total?: number };
        };
        try {
          ev = JSON.parse(line) as typeof ev;
        } catch {
          continue;
        }
        if (ev.error) failure = ev.error;
        else if (ev.id && ev.status === 'Downloading' && ev.progressDetail?.total) {
          layers.set(ev.id, { current: ev.progressDetail.current ?? 0, total: ev.progressDetail.total });
        } else if (ev.id && (ev.status === 'Download complete' || ev.status === 'Pull complete')) {
          const l = layers.get(ev.id);
          if (l) l.current = l.total;
        } else continue;
        let done = 0;
        let total = 0;
        for (const l of layers.values()) {
          done += l.current;
          total += l.total;
        }
        if (total > 0) progress(done, total);
      }
    }
    if (failure) throw new EngineError(500, failure);
  }

  /**
   * Containers (running or not) carrying every label given (`key` or `key=value`). The engine
   * answers from its snapshot of containers, without taking any container's lock (an inspect
   * waits while a copy into or out of the container holds it).
   */
  listByLabel(key: string | string[]): Promise<ContainerSummary[]> {
    return this.call<ContainerSummary[]>('GET', '/containers/json', {
      query: { all: 1, filters: JSON.stringify({ label: Array.isArray(key) ? key : [key] }) },
    }).then((r) => r.body);
  }

  /**
   * The container's inspect document, or null when there is none of that name or id. With `size`
   * it carries SizeRw, which the engine computes by walking the layer (slow on a large one).
   */
  async inspect(nameOrId: string, o: { size?: boolean } = {}): Promise<ContainerInspect | null> {
    const r = await this.call<ContainerInspect>('GET', `/containers/${encodeURIComponent(nameOrId)}/json`, {
      ok404: true,
      query: o.size ? { size: 1 } : undefined,
    });
    return r.status === 404 ? null : r.body;
  }

  /** Creates the network `body` describes unless one of its name exists. */
  async ensureNetwork(body: { Name: string }): Promise<void> {
    const r = await this.call('GET', `/networks/${encodeURIComponent(body.Name)}`, { ok404: true });
    if (r.status === 200) return;
    try {
      await this.call('POST', '/networks/create', { body });
    } catch (err) {
      // Made meanwhile by another agent of this engine.
      if (!(err instanceof EngineError && err.status === 409)) throw err;
    }
  }

  async create(name: string, body: unknown): Promise<string> {
    const r = await this.call<{ Id: string }>('POST', '/containers/create', { query: { name }, body });
    return r.body.Id;
  }

  async start(id: string): Promise<void> {
    await this.call('POST', `/containers/${encodeURIComponent(id)}/start`);
  }

  async stop(id: string, graceS: number): Promise<void> {
    await this.call('POST', `/containers/${encodeURIComponent(id)}/stop`, { query: { t: graceS } });
  }

  async restart(id: string, graceS: number): Promise<void> {
    await this.call('POST', `/containers/${encodeURIComponent(id)}/restart`, { query: { t: graceS } });
  }

  /** Removes the container and its anonymous volumes; absent is fine. */
  async remove(id: string): Promise<void> {
    await this.call('DELETE', `/containers/${encodeURIComponent(id)}`, {
      query: { v: 1, force: 1 },
      ok404: true,
    });
  }

  /**
   * The container's stdout and stderr as text (demultiplexed unless it has a TTY): the last `tail`
   * lines (the engine picks them), and of those at most the last `maxBytes` bytes. Read as a stream
   * frame by frame, joined once: a log of any size costs constant memory and linear time.
   */
  async logs(id: string, tail: number, maxBytes: number): Promise<string> {
    const res = await this.bulk.request({
      method: 'GET',
      path: `${ENGINE_API}/containers/${encodeURIComponent(id)}/logs${qs({ stdout: 1, stderr: 1, tail })}`,
    });
    if (res.statusCode >= 400) {
      const text = await res.body.text();
      throw new EngineError(res.statusCode, reason(res.statusCode, text));
    }
    const keep = new TailBuffer(maxBytes);
    const frames = new Demuxer((_stream, data) => keep.push(data));
    for await (const chunk of res.body as AsyncIterable<Buffer>) frames.push(chunk);
    frames.end();
    return keep.text();
  }

  /** Stat of a path in the container (the archive endpoint's header), or null when absent. */
  async statPath(id: string, p: string): Promise<PathStat | null> {
    const r = await this.call('HEAD', `/containers/${encodeURIComponent(id)}/archive`, {
      query: { path: p },
      ok404: true,
    });
    if (r.status === 404) return null;
    const h = r.headers['x-docker-container-path-stat'];
    if (typeof h !== 'string') return null;
    return JSON.parse(Buffer.from(h, 'base64').toString('utf8')) as PathStat;
  }

  /** The contents of one regular file in the container. */
  async readFile(id: string, p: string): Promise<Buffer> {
    const res = await this.bulk.request({
      method: 'GET',
      path: `${ENGINE_API}/containers/${encodeURIComponent(id)}/archive${qs({ path: p })}`,
    });
    const raw = Buffer.from(await res.body.arrayBuffer());
    if (res.statusCode >= 400) throw new EngineError(res.statusCode, reason(res.statusCode, raw.toString()));
    return untarFirstFile(raw);
  }

  /**
   * One regular file of the container as a stream: its size and mode (from the archive's header)
   * and its bytes as they arrive from the engine, pulled as the caller consumes them (the engine's
   * connection applies backpressure). `close` ends the transfer early. Throws when `p` is no
   * regular file.
   */
  async openFile(
    id: string,
    p: string,
  ): Promise<{ size: number; mode: number; body: ByteReader; close: () => void }> {
    // Whatever the caller does with `body`, the engine's connection is freed by `close`.
    const res = await this.bulk.request({
      method: 'GET',
      path: `${ENGINE_API}/containers/${encodeURIComponent(id)}/archive${qs({ path: p })}`,
    });
    if (res.statusCode >= 400) {
      const text = await res.body.text();
      throw new EngineError(res.statusCode, reason(res.statusCode, text));
    }
    const close = () => res.body.destroy();
    const r = new ByteReader((res.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]());
    try {
      for (;;) {
        const h = await r.exactly(512);
        if (h === null || h.every((b) => b === 0)) throw new Error('not a regular file');
        const size = parseInt(h.subarray(124, 136).toString('latin1').replace(/\0.*$/, '').trim() || '0', 8);
        const mode = parseInt(h.subarray(100, 108).toString('latin1').replace(/\0.*$/, '').trim() || '0', 8);
        const type = String.fromCharCode(h[156]!);
        if (type === '0' || type === '\0')
          return { size, mode, body: new ByteReader(r.limited(size)), close };
        if (type === '5') throw new Error('is a directory');
        // Long names and extended headers: skipped with their data.
        if (!(await r.skip(Math.ceil(size / 512) * 512))) throw new Error('not a regular file');
      }
    } catch (err) {
      close();
      throw err;
    }
  }

  /**
   * Writes one file of `size` bytes (created or replaced) into directory `dir` of the container,
   * its bytes taken from `data` as the engine reads them: no more than a chunk is held at a time.
   * Throws when `data` ends short.
   */
  async writeFileFrom(
    id: string,
    dir: string,
    name: string,
    size: number,
    mode: number,
    data: AsyncIterable<Buffer>,
  ): Promise<void> {
    async function* body(): AsyncGenerator<Buffer> {
      yield tarHeader(name, size, mode);
      let n = 0;
      for await (const chunk of data) {
        n += chunk.length;
        yield chunk;
      }
      if (n !== size) throw new Error(`the file ended after ${n} of ${size} bytes`);
      yield Buffer.alloc(((512 - (size % 512)) % 512) + 1024);
    }
    const res = await this.bulk.request({
      method: 'PUT',
      path: `${ENGINE_API}/containers/${encodeURIComponent(id)}/archive${qs({ path: dir })}`,
      headers: { 'content-type': 'application/x-tar' },
      body: Readable.from(body(), { objectMode: false }),
    });
    const text = await res.body.text();
    if (res.statusCode >= 400) throw new EngineError(res.statusCode, reason(res.statusCode, text));
  }

  /** Writes one file (created or replaced) into directory `dir` of the container. */
  async writeFile(id: string, dir: string, name: string, data: Buffer, mode: number): Promise<void> {
    const res = await this.bulk.request({
      method: 'PUT',
      path: `${ENGINE_API}/containers/${encodeURIComponent(id)}/archive${qs({ path: dir })}`,
      headers: { 'content-type': 'application/x-tar' },
      body: tarOneFile(name, data, mode),
    });
    const text = await res.body.text();
    if (res.statusCode >= 400) throw new EngineError(res.statusCode, reason(res.statusCode, text));
  }

  /** Creates an exec and starts it with the connection hijacked: the returned socket is its stdio. */
  async exec(id: string, o: ExecOptions): Promise<{ execId: string; socket: Duplex }> {
    const created = await this.call<{ Id: string }>('POST', `/containers/${encodeURIComponent(id)}/exec`, {
      body: {
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: o.tty,
        Cmd: o.cmd,
        Env: o.env ?? [],
        User: o.user ?? '',
        WorkingDir: o.workingDir ?? '',
      },
    });
    const execId = created.body.Id;
    const { socket } = await this.client.upgrade({
      path: `${ENGINE_API}/exec/${execId}/start`,
      method: 'POST',
      protocol: 'tcp',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ Detach: false, Tty: o.tty }),
    } as Parameters<Pool['upgrade']>[0]);
    return { execId, socket };
  }

  async execExitCode(execId: string): Promise<number | null> {
    const r = await this.call<{ ExitCode: number | null; Running: boolean }>('GET', `/exec/${execId}/json`);
    return r.body.Running ? null : r.body.ExitCode;
  }

  async execResize(execId: string, rows: number, cols: number): Promise<void> {
    await this.call('POST', `/exec/${execId}/resize`, { query: { h: rows, w: cols } }).catch(() => {});
  }
}

/**
 * The X-Registry-Auth header: the credentials' JSON in base64url with its `=` padding, as the
 * docker CLI sends it (Go's base64.URLEncoding). Docker 20.10 decodes it strictly: without the
 * padding, two of every three lengths of JSON fail to decode and the pull goes unauthenticated.
 */
export function registryAuthHeader(auth: RegistryAuth): string {
  return Buffer.from(JSON.stringify(auth)).toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
}

/** `registry:5000/a/b:tag` → name `registry:5000/a/b`, tag `tag` (default `latest`; digests kept). */
export function splitRef(ref: string): { name: string; tag: string | undefined } {
  if (ref.includes('@')) return { name: ref, tag: undefined };
  const slash = ref.lastIndexOf('/');
  const colon = ref.lastIndexOf(':');
  if (colon > slash) return { name: ref.slice(0, colon), tag: ref.slice(colon + 1) };
  return { name: ref, tag: 'latest' };
}

/** The last `max` bytes of what is pushed, as chunks joined once (cut at a line start when it can). */
export class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  truncated = false;
  constructor(private readonly max: number) {}
  push(b: Buffer): void {
    if (b.length === 0) return;
    this.chunks.push(b);
    this.size += b.length;
    while (this.size - this.chunks[0]!.length >= this.max) {
      this.size -= this.chunks.shift()!.length;
      this.truncated = true;
    }
  }
  text(): string {
    let all = Buffer.concat(this.chunks, this.size);
    if (all.length > this.max) {
      all = all.subarray(all.length - this.max);
      this.truncated = true;
    }
    if (this.truncated) {
      const nl = all.indexOf(10);
      if (nl >= 0 && nl < all.length - 1) all = all.subarray(nl + 1);
    }
    return all.toString('utf8');
  }
}

/**
 * A multiplexed stream ([stream type, 0, 0, 0, size (4 bytes BE)] then data) split into frames
 * as it arrives; a stream that does not start with a frame header (a TTY's) is passed on as is.
 * Pending bytes are kept as a list and joined only when a header or frame straddles chunks.
 */
export class Demuxer {
  private pending: Buffer[] = [];
  private pendingSize = 0;
  private raw: boolean | null = null;
  private need = 8;
  private stream = 1;
  private inFrame = false;
  constructor(private readonly onFrame: (stream: number, data: Buffer) => void) {}

  push(chunk: Buffer): void {
    if (this.raw) return this.onFrame(1, chunk);
    this.pending.push(chunk);
    this.pendingSize += chunk.length;
    for (;;) {
      if (!this.inFrame) {
        if (this.pendingSize < 8) return;
        const h = this.take(8);
        if (this.raw === null) {
          this.raw = h[0]! > 2 || h[1] !== 0 || h[2] !== 0 || h[3] !== 0;
          if (this.raw) {
            const rest = this.take(this.pendingSize);
            this.onFrame(1, Buffer.concat([h, rest]));
            return;
          }
        }
        this.stream = h[0]!;
        this.need = h.readUInt32BE(4);
        this.inFrame = true;
      }
      // A frame's data is passed on piece by piece as it arrives.
      while (this.need > 0 && this.pendingSize > 0) {
        const first = this.pending[0]!;
        const n = Math.min(first.length, this.need);
        this.onFrame(this.stream, first.subarray(0, n));
        this.need -= n;
        this.pendingSize -= n;
        if (n === first.length) this.pending.shift();
        else this.pending[0] = first.subarray(n);
      }
      if (this.need > 0) return;
      this.inFrame = false;
    }
  }

  /** A stream shorter than one header: its bytes as they are. */
  end(): void {
    if (this.raw === null && this.pendingSize > 0) this.onFrame(1, this.take(this.pendingSize));
  }

  private take(n: number): Buffer {
    const all = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingSize);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.pending = rest.length ? [rest] : [];
    this.pendingSize = rest.length;
    return out;
  }
}

/** The frames of a multiplexed stream: [stream type, 0, 0, 0, size (4 bytes BE)] then data. */
export function demux(raw: Buffer): { stream: number; data: Buffer }[] {
  const out: { stream: number; data: Buffer }[] = [];
  let i = 0;
  while (i + 8 <= raw.length) {
    const type = raw[i]!;
    const size = raw.readUInt32BE(i + 4);
    if (type > 2 || raw[i + 1] !== 0) return [{ stream: 1, data: raw }]; // a TTY stream: not framed
    out.push({ stream: type, data: raw.subarray(i + 8, i + 8 + size) });
    i += 8 + size;
  }
  return out;
}

/** A ustar archive of one regular file. */
export function tarOneFile(name: string, data: Buffer, mode: number): Buffer {
  const h = tarHeader(name, data.length, mode);
  const pad = Buffer.alloc((512 - (data.length % 512)) % 512);
  return Buffer.concat([h, data, pad, Buffer.alloc(1024)]);
}

/** The ustar header of one regular file of `size` bytes. */
export function tarHeader(name: string, size: number, mode: number): Buffer {
  const h = Buffer.alloc(512);
  const put = (s: string, off: number, len: number) => h.write(s.slice(0, len), off, len, 'utf8');
  const oct = (n: number, len: number) => n.toString(8).padStart(len - 1, '0') + '\0';
  put(name, 0, 100);
  put(oct(mode & 0o7777, 8), 100, 8);
  put(oct(0, 8), 108, 8);
  put(oct(0, 8), 116, 8);
  put(oct(size, 12), 124, 12);
  put(oct(Math.floor(Date.now() / 1000), 12), 136, 12);
  h.fill(' ', 148, 156);
  put('0', 156, 1);
  put('ustar\0', 257, 6);
  put('00', 263, 2);
  let sum = 0;
  for (const b of h) sum += b;
  put(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8);
  return h;
}

/**
 * Reads a stream of chunks by byte counts, pulling the next chunk only when it needs one (so the
 * source's backpressure holds). Pending bytes are a list of chunks, never re-joined per chunk.
 */
export class ByteReader {
  private chunks: Buffer[] = [];
  private size = 0;
  private done = false;
  constructor(private readonly it: AsyncIterator<Buffer>) {}

  /** Bytes pending here (read from the source, not yet taken). */
  get buffered(): number {
    return this.size;
  }

  private async fill(): Promise<boolean> {
    if (this.done) return false;
    const r = await this.it.next();
    if (r.done) {
      this.done = true;
      return false;
    }
    const b = Buffer.isBuffer(r.value) ? r.value : Buffer.from(r.value);
    if (b.length) {
      this.chunks.push(b);
      this.size += b.length;
    }
    return true;
  }

  /** At most `max` bytes, as soon as any are there; null at the end. */
  async some(max: number): Promise<Buffer | null> {
    while (this.size === 0) if (!(await this.fill())) return null;
    const first = this.chunks[0]!;
    const n = Math.min(max, first.length);
    this.size -= n;
    if (n === first.length) this.chunks.shift();
    else this.chunks[0] = first.subarray(n);
    return first.subarray(0, n);
  }

  /** Exactly `n` bytes (a small count: a header), or null when the stream ends first. */
  async exactly(n: number): Promise<Buffer | null> {
    while (this.size < n) if (!(await this.fill())) return null;
    const parts: Buffer[] = [];
    let left = n;
    while (left > 0) {
      const b = (await this.some(left))!;
      parts.push(b);
      left -= b.length;
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts, n);
  }

  /** Up to the next newline (taken, not returned); null at the end. */
  async line(): Promise<string | null> {
    const parts: Buffer[] = [];
    for (;;) {
      while (this.size === 0) if (!(await this.fill())) return null;
      const first = this.chunks[0]!;
      const nl = first.indexOf(10);
      if (nl >= 0) {
        parts.push((await this.some(nl + 1))!.subarray(0, nl));
        return Buffer.concat(parts).toString('utf8');
      }
      parts.push((await this.some(first.length))!);
      if (parts.reduce((a, b) => a + b.length, 0) > 64 * 1024) throw new Error('line too long');
    }
  }

  /** Discards `n` bytes; false when the stream ends first. */
  async skip(n: number): Promise<boolean> {
    while (n > 0) {
      const b = await this.some(n);
      if (b === null) return false;
      n -= b.length;
    }
    return true;
  }

  /** The next `n` bytes as chunks (ending short when the stream does). */
  async *limited(n: number): AsyncGenerator<Buffer> {
    while (n > 0) {
      const b = await this.some(Math.min(n, 256 * 1024));
      if (b === null) return;
      n -= b.length;
      yield b;
    }
  }
}

/** The contents of the first regular file in a tar archive (GNU long names skipped over). */
export function untarFirstFile(tar: Buffer): Buffer {
  let i = 0;
  while (i + 512 <= tar.length) {
    const h = tar.subarray(i, i + 512);
    if (h.every((b) => b === 0)) break;
    const size = parseInt(h.subarray(124, 136).toString('latin1').replace(/\0.*$/, '').trim() || '0', 8);
    const type = String.fromCharCode(h[156]!);
    const start = i + 512;
    if (type === '0' || type === '\0') return tar.subarray(start, start + size);
    i = start + Math.ceil(size / 512) * 512;
  }
  throw new Error('not a regular file');
}
