// One delivery attempt over HTTP(S). A 2xx answer within the deadline is success; anything else
// (another status, a redirect, which is never followed, a timeout, a refused address) is a failure
// with a short reason. The connection goes to the address resolveAllowed checked; the TLS
// certificate is still verified against the URL's host name. At most MAX_RESPONSE_BYTES of the
// answer are read; a request body over MAX_REQUEST_BYTES is not sent.
import http from 'node:http';
import https from 'node:https';
import type { BlockList } from 'node:net';
import { resolveAllowed, type Resolved } from './webhooks.address.js';

export const SEND_TIMEOUT_MS = 10_000;
export const MAX_RESPONSE_BYTES = 64 * 1024;
export const MAX_REQUEST_BYTES = 256 * 1024;

export interface SendResult {
  success: boolean;
  status: number | null;
  latencyMs: number;
  error: string | null;
}

/** Keep-alive connections of one lane (one endpoint): reused between its deliveries. */
export interface LaneAgents {
  http: http.Agent;
  https: https.Agent;
  destroy(): void;
}

export function laneAgents(): LaneAgents {
  const h = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const s = new https.Agent({ keepAlive: true, maxSockets: 1 });
  return {
    http: h,
    https: s,
    destroy() {
      h.destroy();
      s.destroy();
    },
  };
}

export interface SendOptions {
  allowed: BlockList;
  agents: LaneAgents;
  timeoutMs?: number;
  resolve?: (host: string) => Promise<Resolved[]>;
  now?: () => number;
}

export async function sendOnce(
  url: string,
  headers: Record<string, string>,
  body: string,
  o: SendOptions,
): Promise<SendResult> {
  const now = o.now ?? (() => performance.now());
  const t0 = now();
  const fail = (error: string, status: number | null = null): SendResult => ({
    success: false,
    status,
    latencyMs: Math.round(now() - t0),
    error: error.slice(0, 500),
  });
  if (Buffer.byteLength(body) > MAX_REQUEST_BYTES) return fail('the event body is over the size cap');
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return fail('invalid url');
  }
  const isHttps = u.protocol === 'https:';
  const timeoutMs = o.timeoutMs ?? SEND_TIMEOUT_MS;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  try {
    const target = await Promise.race([
      resolveAllowed(u.hostname, o.allowed, o.resolve),
      new Promise<never>((_, rej) =>
        deadline.signal.addEventListener('abort', () => rej(new Error('timed out resolving'))),
      ),
    ]);
    const hostName = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
    const status = await new Promise<number>((resolve, reject) => {
      const req = (isHttps ? https : http).request(
        {
          protocol: u.protocol,
          host: hostName,
          port: u.port || (isHttps ? 443 : 80),
          path: `${u.pathname}${u.search}`,
          method: 'POST',
          agent: isHttps ? o.agents.https : o.agents.http,
          // Connect to the address that was checked, never to a fresh DNS answer.
          lookup: ((_h: string, opts: { all?: boolean }, cb: (...a: unknown[]) => void) => {
            if (opts?.all) cb(null, [{ address: target.address, family: target.family }]);
            else cb(null, target.address, target.family);
          }) as unknown as http.RequestOptions['lookup'],
          ...(isHttps ? { servername: hostName } : {}),
          headers: {
            ...headers,
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(body)),
            'user-agent': 'openrig-webhooks/1',
          },
          signal: deadline.signal,
        },
        (res) => {
          // The status decides; the body is drained (for keep-alive) up to the cap, and a body
          // that does not finish within a second is cut off.
          resolve(res.statusCode ?? 0);
          let read = 0;
          const cut = setTimeout(() => res.destroy(), 1000);
          res.on('data', (chunk: Buffer) => {
            read += chunk.length;
            if (read > MAX_RESPONSE_BYTES) res.destroy();
          });
          res.on('close', () => clearTimeout(cut));
          res.on('error', () => {});
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    if (status >= 200 && status < 300) {
      return { success: true, status, latencyMs: Math.round(now() - t0), error: null };
    }
    if (status >= 300 && status < 400) return fail(`redirect (${status}) not followed`, status);
    return fail(`HTTP ${status}`, status);
  } catch (err) {
    if (deadline.signal.aborted) return fail(`no answer within ${timeoutMs / 1000} s`);
    return fail((err as Error)?.message ?? String(err));
  } finally {
    clearTimeout(timer);
  }
}
