// The agent's end of the gateway's tunnels (docs/gateway.md, "The tunnel"). When the server wakes
// the agent (its long poll, agent-wait.ts), the agent also claims the tunnels serving processes
// asked of its machines and dials each process named: an HTTP upgrade to TUNNEL.path with its own
// API key, after which the connection speaks HTTP/2 with the agent as the server. Each CONNECT
// stream ("ID:PORT") is joined to that port of one of its instances, found by the runtime (a
// container's address, or the host's loopback for the process runtime), so no port of the host is
// opened for the gateway. A 421 answer means the dial reached another process than the one that
// asked (a cluster's worker, another node): the agent dials again, up to MAX_DIALS times.
import http from 'node:http';
import https from 'node:https';
import http2, { type ServerHttp2Session, type ServerHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { AgentLog } from './agent-log.js';
import { TUNNEL } from '../contract/schemas/gateway.js';
import { AGENT_API_PREFIX } from '../contract/agent-protocol.js';

/** Dials per tunnel asked before giving up (a cluster hands each new connection to the next worker). */
export const MAX_DIALS = 32;
const DIAL_TIMEOUT_MS = 10_000;

export interface TunnelHost {
  readonly server: string;
  readonly apiKey: string;
  readonly uid: string;
  readonly log: AgentLog;
  machineIds(): number[];
  /** Where a stream to `port` of instance `id` goes; null when it is not a running instance of this agent. */
  target(id: number, port: number): Promise<{ host: string; port: number } | null>;
}

type Dialled = 'ok' | 'misdirected' | 'failed';

export class TunnelClient {
  private readonly sessions = new Map<string, ServerHttp2Session>();
  private readonly dialling = new Set<string>();
  private stopped = false;

  constructor(private readonly host: TunnelHost) {}

  /** Tunnels open now (tests). */
  get count(): number {
    return this.sessions.size;
  }

  /** Claims the tunnels asked of this agent's machines and dials each; never throws. */
  async poll(): Promise<void> {
    const ids = this.host.machineIds();
    if (ids.length === 0 || this.stopped) return;
    let tunnels: { node: string; url: string | null }[] = [];
    try {
      const base = this.host.server.replace(/\/+$/, '');
      const res = await fetch(`${base}${AGENT_API_PREFIX}/tunnels`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.host.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ agent_uid: this.host.uid, machine_ids: ids }),
        signal: AbortSignal.timeout(DIAL_TIMEOUT_MS),
      });
      // A server without the gateway (404) asks for no tunnel.
      if (!res.ok) {
        await res.body?.cancel();
        return;
      }
      tunnels = ((await res.json()) as { tunnels?: typeof tunnels }).tunnels ?? [];
    } catch (err) {
      this.host.log.warn(`claiming the gateway's tunnels failed: ${(err as Error).message}`);
      return;
    }
    await Promise.all(tunnels.map((t) => this.dial(t.node, t.url ?? this.host.server)));
  }

  private async dial(node: string, base: string): Promise<void> {
    const held = this.sessions.get(node);
    // A tunnel to that node is open: it asked again because its end lost it, so this one is new.
    if (held && !held.closed && !held.destroyed) held.close();
    if (this.dialling.has(node)) return;
    this.dialling.add(node);
    try {
      for (let i = 0; i < MAX_DIALS && !this.stopped; i++) {
        const r = await this.dialOnce(node, base);
        if (r === 'ok') return;
        if (r === 'failed') return;
      }
      this.host.log.warn(
        `the gateway's tunnel to server process ${node} was not reached in ${MAX_DIALS} dials`,
      );
    } finally {
      this.dialling.delete(node);
    }
  }

  private dialOnce(node: string, base: string): Promise<Dialled> {
    return new Promise((resolve) => {
      let url: URL;
      try {
        url = new URL(TUNNEL.path, `${base.replace(/\/+$/, '')}/`);
      } catch {
        this.host.log.warn(`the gateway's tunnel address ${base} is not a URL`);
        return resolve('failed');
      }
      const mod = url.protocol === 'https:' ? https : http;
      const req = mod.request(url, {
        method: 'GET',
        agent: false,
        headers: {
          connection: 'Upgrade',
          upgrade: TUNNEL.protocol,
          authorization: `Bearer ${this.host.apiKey}`,
          [TUNNEL.agentHeader]: this.host.uid,
          [TUNNEL.nodeHeader]: node,
        },
      });
      req.setTimeout(DIAL_TIMEOUT_MS, () => req.destroy(new Error('timed out')));
      req.on('upgrade', (_res, socket, head) => {
        req.setTimeout(0);
        if (head.length > 0) socket.unshift(head);
        this.serve(node, socket);
        resolve('ok');
      });
      req.on('response', (res) => {
        res.resume();
        if (res.statusCode === 421) return resolve('misdirected');
        this.host.log.warn(`the server refused the gateway's tunnel: HTTP ${res.statusCode}`);
        resolve('failed');
      });
      req.on('error', (err) => {
        this.host.log.warn(`dialling the gateway's tunnel failed: ${err.message}`);
        resolve('failed');
      });
      req.end();
    });
  }

  private serve(node: string, socket: Duplex): void {
    if (this.stopped) {
      socket.destroy();
      return;
    }
    const session = http2.performServerHandshake(socket, {
      settings: { initialWindowSize: TUNNEL.streamWindow, enableConnectProtocol: false },
    });
    try {
      session.setLocalWindowSize(TUNNEL.sessionWindow);
    } catch {
      /* not ready: the default window holds */
    }
    this.sessions.set(node, session);
    session.on('stream', (stream, headers) => void this.stream(stream, headers));
    session.on('error', () => session.destroy());
    session.on('close', () => {
      if (this.sessions.get(node) === session) this.sessions.delete(node);
    });
    socket.on('close', () => session.destroy());
  }

  private async stream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): Promise<void> {
    stream.on('error', () => stream.destroy());
    const refuse = (status: number, why: string) => {
      if (!stream.destroyed && !stream.headersSent)
        stream.respond({ ':status': status, [TUNNEL.reasonHeader]: why }, { endStream: true });
    };
    const m = /^(\d{1,12}):(\d{1,5})$/.exec(String(headers[':authority'] ?? ''));
    if (headers[':method'] !== 'CONNECT' || !m) return refuse(400, 'a stream is CONNECT ID:PORT');
    const id = Number(m[1]);
    const port = Number(m[2]);
    let to: { host: string; port: number } | null = null;
    try {
      to = await this.host.target(id, port);
    } catch (err) {
      return refuse(502, (err as Error).message);
    }
    if (!to) return refuse(404, `instance ${id} does not run on this host`);
    const sock = net.connect({ host: to.host, port: to.port });
    sock.setNoDelay(true);
    sock.once('connect', () => {
      if (stream.destroyed) return sock.destroy();
      stream.respond({ ':status': 200 });
      sock.pipe(stream);
      stream.pipe(sock);
    });
    sock.on('error', (err: NodeJS.ErrnoException) => {
      if (!stream.headersSent) refuse(502, `port ${port}: ${err.code ?? err.message}`);
      else stream.destroy();
    });
    sock.on('close', () => {
      if (!stream.destroyed && stream.headersSent && !stream.writableEnded) stream.end();
    });
    stream.on('close', () => sock.destroy());
  }

  /** Closes every tunnel (the agent stops). */
  stop(): void {
    this.stopped = true;
    for (const s of this.sessions.values()) s.destroy();
    this.sessions.clear();
  }
}
