// The server's end of the agents' tunnels (docs/gateway.md, "The tunnel").
// An agent dials a serving process on demand: the process needs a stream to an instance of
// machine M and holds no tunnel from M's agent, so it writes a tunnel request naming itself (its
// random node id; gateway_tunnel_requests) and wakes the agent through the agent's long poll
// (agent-gateway.wake.ts, which reaches the process holding the wait, PostgreSQL or cluster IPC
// alike). The agent claims the request and dials back with an HTTP upgrade (`Upgrade:
// openrig-tunnel`, its own API key, the node id). A process that is not that node answers 421
// and the agent dials again: in a cluster the primary hands each new connection to the next
// worker, so the dial reaches the node within as many tries as there are workers; several nodes
// behind one address each set OPENRIG_GATEWAY_NODE_URL, which the agent dials directly.
// Over the upgraded connection the two speak HTTP/2, the server as its client: each gateway
// stream is one CONNECT stream ("ID:PORT"), which the agent joins to the instance's port, with
// HTTP/2's own per-stream flow control (a slow reader holds back its stream only). A tunnel
// stays for every later stream of that agent's machines here until either end closes it; a
// PING every PING_MS finds one whose connection died.
import http2, { type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { randomBytes, randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { Deps } from '../../deps.types.js';
import { askTunnel } from './gateway.repo.js';
import { TUNNEL } from '../../../contract/schemas/gateway.js';

/** The HTTP upgrade protocol name of a tunnel. */
export const TUNNEL_PROTOCOL = TUNNEL.protocol;
/** The path an agent dials. */
export const TUNNEL_PATH = TUNNEL.path;
/** Per-stream flow-control window: what one stream may have in flight before its reader reads. */
const STREAM_WINDOW = TUNNEL.streamWindow;
/** The whole connection's window. */
const SESSION_WINDOW = TUNNEL.sessionWindow;
const PING_MS = 30_000;
/** A process asks a machine's agent for a tunnel at most this often while none comes. */
const ASK_AGAIN_MS = 5_000;

export class GatewayError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    msg: string,
  ) {
    super(msg);
  }
}

interface Waiter {
  resolve(s: ClientHttp2Session): void;
}

export class TunnelHub {
  /** This process's id among the serving processes (random per start). */
  readonly node = randomBytes(8).toString('hex');
  private readonly sessions = new Map<number, Set<ClientHttp2Session>>();
  private readonly waiters = new Map<number, Set<Waiter>>();
  private readonly askedAt = new Map<number, number>();
  private closed = false;

  constructor(private readonly deps: Deps) {}

  /** Tunnels held now (tests, metrics). */
  get count(): number {
    const all = new Set<ClientHttp2Session>();
    for (const s of this.sessions.values()) for (const x of s) all.add(x);
    return all.size;
  }

  /** Takes an agent's upgraded connection as the tunnel of `machineIds`. */
  adopt(socket: Duplex, machineIds: number[]): void {
    if (this.closed) {
      socket.destroy();
      return;
    }
    const session = http2.connect('http://openrig-tunnel', {
      createConnection: () => socket,
      settings: { initialWindowSize: STREAM_WINDOW, enablePush: false },
    });
    session.on('connect', () => {
      try {
        session.setLocalWindowSize(SESSION_WINDOW);
      } catch {
        /* closed meanwhile */
      }
    });
    const ping = setInterval(() => {
      if (!session.closed && !session.destroyed)
        session.ping((err) => {
          if (err) session.destroy();
        });
    }, PING_MS);
    ping.unref();
    const drop = () => {
      clearInterval(ping);
      for (const id of machineIds) {
        const s = this.sessions.get(id);
        s?.delete(session);
        if (s?.size === 0) this.sessions.delete(id);
      }
    };
    session.on('close', drop);
    session.on('error', (err) => {
      this.deps.log.debug({ err }, 'a gateway tunnel ended');
      drop();
    });
    socket.on('close', () => session.destroy());
    for (const id of machineIds) {
      let s = this.sessions.get(id);
      if (!s) this.sessions.set(id, (s = new Set()));
      s.add(session);
      this.askedAt.delete(id);
      const ws = this.waiters.get(id);
      this.waiters.delete(id);
      for (const w of ws ?? []) w.resolve(session);
    }
  }

  private live(machineId: number): ClientHttp2Session | null {
    for (const s of this.sessions.get(machineId) ?? []) if (!s.closed && !s.destroyed) return s;
    return null;
  }

  /** A tunnel from the agent of `machineId`: one held here, or one asked for and waited for. */
  private async session(machineId: number, timeoutMs: number): Promise<ClientHttp2Session> {
    const held = this.live(machineId);
    if (held) return held;
    if (this.closed) throw new GatewayError(503, 'unavailable', 'The server is stopping');
    let waiter!: Waiter;
    let timer: NodeJS.Timeout | undefined;
    const got = new Promise<ClientHttp2Session>((resolve, reject) => {
      waiter = { resolve };
      timer = setTimeout(() => {
        this.waiters.get(machineId)?.delete(waiter);
        reject(
          new GatewayError(
            504,
            'tunnel_timeout',
            `The instance's host did not open its tunnel within ${Math.round(timeoutMs / 1000)} s (is its agent running and online?)`,
          ),
        );
      }, timeoutMs);
    });
    let ws = this.waiters.get(machineId);
    if (!ws) this.waiters.set(machineId, (ws = new Set()));
    ws.add(waiter);
    const now = this.deps.clock.now();
    if ((this.askedAt.get(machineId) ?? 0) + ASK_AGAIN_MS <= now) {
      this.askedAt.set(machineId, now);
      try {
        await askTunnel(
          this.deps.db,
          {
            id: randomUUID(),
            machine_id: machineId,
            node: this.node,
            node_url: this.deps.config.gateway.nodeUrl,
            created_at: now,
          },
          now - 60_000,
        );
        this.deps.agentWake.notify([machineId]);
      } catch (err) {
        this.askedAt.delete(machineId);
        ws.delete(waiter);
        clearTimeout(timer);
        throw err;
      }
    }
    try {
      return await got;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A stream to port `port` of instance `instanceId` on machine `machineId`, once the agent has
   * connected it; a GatewayError when the agent cannot (no tunnel in time, the port refuses).
   */
  async open(machineId: number, instanceId: number, port: number): Promise<ClientHttp2Stream> {
    const timeoutMs = this.deps.config.gateway.openTimeoutS * 1000;
    const session = await this.session(machineId, timeoutMs);
    const stream = session.request(
      { ':method': 'CONNECT', ':authority': `${instanceId}:${port}` },
      { endStream: false },
    );
    return new Promise((resolve, reject) => {
      const fail = (err: Error) =>
        reject(new GatewayError(502, 'bad_gateway', `The tunnel failed: ${err.message}`));
      stream.once('error', fail);
      stream.once('response', (headers) => {
        stream.off('error', fail);
        const status = Number(headers[':status']);
        if (status === 200) return resolve(stream);
        const why = String(headers[TUNNEL.reasonHeader] ?? '');
        stream.destroy();
        reject(
          new GatewayError(
            502,
            'bad_gateway',
            why
              ? `The instance did not take the connection: ${why}`
              : `The instance's port ${port} did not answer`,
          ),
        );
      });
    });
  }

  /** Ends every tunnel and wait (the server stops). */
  close(): void {
    this.closed = true;
    for (const s of this.sessions.values()) for (const x of s) x.destroy();
    this.sessions.clear();
  }
}
