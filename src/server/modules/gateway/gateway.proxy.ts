// Forwarding a gateway request to the instance (docs/gateway.md): served before the API's routing,
// straight on the HTTP server, so none of the API's rules apply to it (JSON content types, body
// limits, the API's own timeouts). An HTTP request becomes one tunnel stream carrying that one
// request and its response, both streamed as they come (a response that never ends is passed on
// for as long as it runs); an upgrade (WebSocket) becomes one tunnel stream carrying the request
// head, then the raw bytes either way. Nothing is cut after any time unless the operator sets
// OPENRIG_GATEWAY_IDLE_TIMEOUT_S, which closes a stream with no byte either way for that long.
// The instance never sees openrig's credentials: the link's token, the gateway and console
// cookies and an openrig Bearer key are taken out of what is passed on.
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Deps } from '../../deps.types.js';
import { SESSION_COOKIE } from '../../http/auth.js';
import {
  GATEWAY_COOKIE,
  GatewayAccess,
  openrigBearer,
  type Admitted,
  type Target,
} from './gateway.access.js';
import { GatewayError, type TunnelHub } from './gateway.tunnels.js';
import { gatewayPath } from './gateway.portal.js';

/** Request headers that belong to one hop (RFC 9110 7.6.1), not passed on. */
const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);

function errorBody(err: GatewayError): string {
  return JSON.stringify({ error: err.code, msg: err.message });
}

function asGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError(502, 'bad_gateway', `The gateway failed: ${(err as Error).message}`);
}

/** The cookie header without openrig's own cookies; undefined when nothing is left. */
function appCookies(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const kept = header
    .split(';')
    .map((p) => p.trim())
    .filter((p) => {
      const name = p.slice(0, Math.max(0, p.indexOf('='))).trim();
      return p !== '' && name !== GATEWAY_COOKIE && name !== SESSION_COOKIE;
    });
  return kept.length > 0 ? kept.join('; ') : undefined;
}

export class GatewayProxy {
  readonly access: GatewayAccess;
  /** Client connections being served, ended when the server stops. */
  private readonly active = new Set<Duplex>();

  constructor(
    private readonly deps: Deps,
    private readonly hub: TunnelHub,
  ) {
    this.access = new GatewayAccess(deps);
  }

  /** Ends every gateway connection (the server stops). */
  close(): void {
    for (const s of this.active) s.destroy();
    this.active.clear();
  }

  private scheme(req: IncomingMessage): 'http' | 'https' {
    if ((req.socket as { encrypted?: boolean }).encrypted) return 'https';
    return this.deps.config.accounts.publicUrl.startsWith('https:') ? 'https' : 'http';
  }

  /** The path the app is asked for: the rest after /i/ID/PORT, or the whole path (keep_prefix, host). */
  private upstreamPath(t: Target, a: Admitted, rest: string): string {
    const p = rest === '' || rest.startsWith('?') ? `/${rest}` : rest;
    if (t.mode === 'path' && a.entry.keep_prefix) return `/i/${t.instanceId}/${t.port}${p}`;
    return p;
  }

  /** Headers passed on to the app. */
  private upstreamHeaders(
    req: IncomingMessage,
    t: Target,
    a: Admitted,
    upgrade: boolean,
  ): IncomingHttpHeaders {
    const out: IncomingHttpHeaders = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (v === undefined) continue;
      if (!upgrade && HOP.has(k)) continue;
      if (upgrade && (k === 'host' || k === 'proxy-authorization')) continue;
      out[k] = v;
    }
    const cookie = appCookies(req.headers.cookie);
    if (cookie === undefined) delete out.cookie;
    else out.cookie = cookie;
    if (openrigBearer(req) !== null) delete out.authorization;
    out.host = t.mode === 'host' ? String(req.headers.host ?? '') : `127.0.0.1:${t.port}`;
    const fwd = req.headers['x-forwarded-for'];
    out['x-forwarded-for'] = `${fwd ? `${String(fwd)}, ` : ''}${req.socket.remoteAddress ?? ''}`;
    out['x-forwarded-proto'] = this.scheme(req);
    out['x-forwarded-host'] = String(req.headers.host ?? '');
    if (t.mode === 'path' && !a.entry.keep_prefix) out['x-forwarded-prefix'] = `/i/${t.instanceId}/${t.port}`;
    else delete out['x-forwarded-prefix'];
    return out;
  }

  private cookieHeader(t: Target, value: string, req: IncomingMessage): string {
    const path = t.mode === 'path' ? `/i/${t.instanceId}/` : '/';
    const secure = this.scheme(req) === 'https' ? '; Secure' : '';
    return `${GATEWAY_COOKIE}=${encodeURIComponent(value)}; Path=${path}; Max-Age=${this.deps.config.gateway.cookieTtlS}; HttpOnly; SameSite=Lax${secure}`;
  }

  /** With a gateway domain, a path URL's owner or public visitor is sent to the port's own host. */
  private hostUrl(t: Target, rest: string, token: string | null): string {
    const p = rest === '' || rest.startsWith('?') ? `/${rest}` : rest;
    const proto = this.deps.config.accounts.publicUrl.startsWith('https:') ? 'https' : 'http';
    const sep = p.includes('?') ? '&' : '?';
    return `${proto}://${t.instanceId}-${t.port}.${this.deps.config.gateway.domain}${p}${token ? `${sep}openrig_token=${encodeURIComponent(token)}` : ''}`;
  }

  private idle(stream: Duplex & { setTimeout?(ms: number, cb: () => void): unknown }): void {
    const s = this.deps.config.gateway.idleTimeoutS;
    if (s > 0) stream.setTimeout?.(s * 1000, () => stream.destroy());
  }

  /** Serves an HTTP request that targetOf() matched. */
  async handle(req: IncomingMessage, res: ServerResponse, t: Target): Promise<void> {
    this.active.add(res.socket as Duplex);
    res.on('close', () => this.active.delete(res.socket as Duplex));
    try {
      // /i/ID/PORT without its slash: the app's relative links need it.
      if (t.mode === 'path' && (t.rest === '' || t.rest.startsWith('?'))) {
        res.writeHead(308, { location: `${gatewayPath(t.instanceId, t.port)}${t.rest}` }).end();
        return;
      }
      const a = await this.access.admit(req, t);
      const domain = this.deps.config.gateway.domain;
      if (t.mode === 'path' && domain !== null) {
        // One origin per instance port: the path URL only hands over to the host URL.
        const token = a.entry.public ? null : this.access.linkToken(a.inst).token;
        res.writeHead(307, { location: this.hostUrl(t, a.fromLink?.cleanRest ?? t.rest, token) }).end();
        return;
      }
      if (a.fromLink && (req.method === 'GET' || req.method === 'HEAD')) {
        const prefix = t.mode === 'path' ? `/i/${t.instanceId}/${t.port}` : '';
        res
          .writeHead(303, {
            location: `${prefix}${a.fromLink.cleanRest || '/'}`,
            'set-cookie': this.cookieHeader(t, a.fromLink.cookie, req),
            'cache-control': 'no-store',
          })
          .end();
        return;
      }
      await this.forward(req, res, t, a);
    } catch (err) {
      const e = asGatewayError(err);
      if (!res.headersSent)
        res
          .writeHead(e.status, { 'content-type': 'application/json', 'cache-control': 'no-store' })
          .end(errorBody(e));
      else res.destroy();
    }
  }

  private async forward(req: IncomingMessage, res: ServerResponse, t: Target, a: Admitted): Promise<void> {
    const rest = a.fromLink?.cleanRest ?? t.rest;
    const stream = await this.hub.open(a.inst.machine_id, t.instanceId, t.port);
    this.idle(stream);
    await new Promise<void>((resolve) => {
      const up = http.request({
        // No agent: the request goes on this stream, and asks the app to close it after.
        createConnection: () => stream,
        method: req.method,
        path: this.upstreamPath(t, a, rest),
        headers: this.upstreamHeaders(req, t, a, false),
      });
      const fail = (err: Error) => {
        if (!res.headersSent)
          res
            .writeHead(502, { 'content-type': 'application/json' })
            .end(
              errorBody(new GatewayError(502, 'bad_gateway', `The instance's app failed: ${err.message}`)),
            );
        else res.destroy();
        stream.destroy();
        resolve();
      };
      up.on('error', fail);
      up.on('response', (r) => {
        const headers: Record<string, string | string[]> = {};
        for (const [k, v] of Object.entries(r.headers)) {
          if (v === undefined || k === 'connection' || k === 'keep-alive' || k === 'transfer-encoding')
            continue;
          headers[k] = v;
        }
        // An app at the root that redirects to /x means /i/ID/PORT/x here.
        const loc = r.headers.location;
        if (t.mode === 'path' && !a.entry.keep_prefix && typeof loc === 'string' && /^\/(?!\/)/.test(loc))
          headers.location = `/i/${t.instanceId}/${t.port}${loc}`;
        res.writeHead(r.statusCode ?? 502, r.statusMessage, headers);
        res.flushHeaders();
        r.pipe(res);
        r.on('error', () => res.destroy());
        r.on('end', resolve);
        res.on('close', () => {
          if (!r.complete) stream.destroy();
          resolve();
        });
      });
      req.pipe(up);
      req.on('error', () => stream.destroy());
      res.on('close', () => {
        if (!res.writableFinished) stream.destroy();
      });
    });
  }

  /** Serves an upgrade (WebSocket) request that targetOf() matched. */
  async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, t: Target): Promise<void> {
    this.active.add(socket);
    socket.on('close', () => this.active.delete(socket));
    socket.on('error', () => socket.destroy());
    try {
      const a = await this.access.admit(req, t);
      const stream = await this.hub.open(a.inst.machine_id, t.instanceId, t.port);
      this.idle(stream);
      const headers = this.upstreamHeaders(req, t, a, true);
      const lines = [`${req.method} ${this.upstreamPath(t, a, a.fromLink?.cleanRest ?? t.rest)} HTTP/1.1`];
      for (const [k, v] of Object.entries(headers)) {
        for (const one of Array.isArray(v) ? v : [v]) if (one !== undefined) lines.push(`${k}: ${one}`);
      }
      stream.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length > 0) stream.write(head);
      stream.on('error', () => socket.destroy());
      stream.on('close', () => socket.destroy());
      socket.on('close', () => stream.destroy());
      stream.pipe(socket);
      socket.pipe(stream);
    } catch (err) {
      const e = asGatewayError(err);
      const body = errorBody(e);
      socket.end(
        `HTTP/1.1 ${e.status} ${http.STATUS_CODES[e.status] ?? 'Error'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    }
  }
}
