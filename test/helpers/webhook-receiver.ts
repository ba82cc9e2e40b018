// A webhook receiver for tests: a real HTTP server on 127.0.0.1 that records every request and
// answers as the test says (a status, a hang, a redirect, a huge body).
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
  status: number;
}

export type Answer = number | 'hang' | { status: number; body?: string; headers?: Record<string, string> };

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Decides the answer to each request (default 200). */
  answer: (r: Omit<Received, 'status'>, n: number) => Answer;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const hanging = new Set<http.ServerResponse>();
  const rec: Receiver = {
    url: '',
    port: 0,
    received,
    answer: () => 200,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      const base = {
        path: req.url ?? '',
        headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      const a = rec.answer(base, received.length);
      if (a === 'hang') {
        received.push({ ...base, status: 0 });
        hanging.add(res);
        return;
      }
      const o = typeof a === 'number' ? { status: a } : a;
      received.push({ ...base, status: o.status });
      res.writeHead(o.status, o.headers ?? {});
      res.end(o.body ?? '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  rec.port = (server.address() as AddressInfo).port;
  rec.url = `http://127.0.0.1:${rec.port}`;
  return rec;
}
