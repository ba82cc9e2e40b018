// The agent's side of the wire (contract/agent-protocol.ts): JSON over HTTP with the host's key.
import {
  AGENT_API_PREFIX,
  type AuthorizedKeysResponse,
  type RegisterRequest,
  type RegisterResponse,
  type ResultsRequest,
  type ShutdownRequest,
  type SyncRequest,
  type SyncResponse,
  type WaitRequest,
  type WaitResponse,
  type CopiesRequest,
  type CopiesResponse,
} from '../contract/agent-protocol.js';
import { textOf } from '../contract/text.js';
import type { BenchmarkReply, BenchmarkReport } from '../contract/benchmarks.js';

/** An answer the agent cannot fix by retrying (a wrong or revoked key, a refused body). */
export class AgentFatalError extends Error {
  constructor(
    msg: string,
    /** The HTTP status of the refusal. */
    readonly status?: number,
  ) {
    super(msg);
  }
}

/** An error answer the agent may get past by retrying, with its HTTP status. */
export class AgentHttpError extends Error {
  constructor(
    readonly status: number,
    msg: string,
  ) {
    super(msg);
  }
}

export class AgentClient {
  constructor(
    private readonly server: string,
    private readonly apiKey: string,
    private readonly timeoutMs = 10_000,
  ) {}

  get serverUrl(): string {
    return this.server.replace(/\/+$/, '');
  }

  private async post<T>(
    path: string,
    body: unknown,
    timeoutMs = this.timeoutMs,
    signal?: AbortSignal,
  ): Promise<T> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const res = await fetch(`${this.serverUrl}${AGENT_API_PREFIX}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: signal ? AbortSignal.any([timeout, signal]) : timeout,
    });
    const text = await res.text();
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    if (res.ok) return json as T;
    const said = (json as { msg?: unknown } | null)?.msg;
    const msg = `${path}: HTTP ${res.status}${said ? `: ${textOf(said)}` : ''}`;
    // A refused key is final; so is a refused registration (bad hardware, foreign agent_uid).
    // 429, 5xx and a refused sync are passing: the next heartbeat tries again.
    if (
      res.status === 401 ||
      res.status === 403 ||
      (path === '/register' && (res.status === 400 || res.status === 409))
    )
      throw new AgentFatalError(msg, res.status);
    throw new AgentHttpError(res.status, msg);
  }

  register(body: RegisterRequest): Promise<RegisterResponse> {
    return this.post('/register', body);
  }

  sync(body: SyncRequest): Promise<SyncResponse> {
    return this.post('/sync', body);
  }

  results(body: ResultsRequest): Promise<unknown> {
    return this.post('/results', body);
  }

  /** The keys the server holds now for an instance (asked before an SSH login is accepted). */
  authorizedKeys(instanceId: number, timeoutMs = 2000): Promise<AuthorizedKeysResponse> {
    return this.post('/authorized-keys', { instance_id: instanceId }, timeoutMs);
  }

  /** The long poll: held by the server up to `timeout_s` (a little longer here, for the way back). */
  wait(body: WaitRequest & { timeout_s: number }, signal: AbortSignal): Promise<WaitResponse> {
    return this.post('/wait', body, (body.timeout_s + 10) * 1000, signal);
  }

  /** A source agent's copies: its reports in, the copies it is to carry out back (copy-runner.ts). */
  copies(body: CopiesRequest): Promise<CopiesResponse> {
    return this.post('/copies', body);
  }

  /**
   * Whether a key is the one-time key of a copy into an instance (a number), or of a clone into a
   * volume (`{ volume }`); `consume` takes it.
   */
  copyAuth(dst: number | { volume: number }, publicKey: string, consume: boolean): Promise<{ ok: boolean }> {
    const to = typeof dst === 'number' ? { instance_id: dst } : { volume_id: dst.volume };
    return this.post('/copy_auth', { ...to, public_key: publicKey, consume }, 5000);
  }

  /** One benchmark run of a machine (benchmarks/index.ts), when the server takes them. */
  benchmarks(body: BenchmarkReport): Promise<BenchmarkReply> {
    return this.post('/benchmarks', body, 30_000);
  }

  /** Uploads `bytes` characters; resolves with the seconds it took (inet_up). */
  async netUpload(bytes: number): Promise<number> {
    const t = performance.now();
    await this.post('/benchmarks/upload', { data: 'x'.repeat(bytes) }, 30_000);
    return (performance.now() - t) / 1000;
  }

  /** Downloads `bytes` characters; resolves with the seconds it took (inet_down). */
  async netDownload(bytes: number): Promise<number> {
    const t = performance.now();
    const res = await fetch(`${this.serverUrl}${AGENT_API_PREFIX}/benchmarks/download?bytes=${bytes}`, {
      headers: { authorization: `Bearer ${this.apiKey}` },
      signal: AbortSignal.timeout(30_000),
    });
    const body = await res.arrayBuffer();
    if (!res.ok) throw new AgentHttpError(res.status, `/benchmarks/download: HTTP ${res.status}`);
    if (body.byteLength < bytes)
      throw new Error(`/benchmarks/download: ${body.byteLength} bytes of ${bytes}`);
    return (performance.now() - t) / 1000;
  }

  shutdown(body: ShutdownRequest): Promise<unknown> {
    return this.post('/shutdown', body, 3000);
  }
}
