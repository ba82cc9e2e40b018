// The access log of a real `serve` at the default level: one line per request with method, route,
// status, duration, request id and user id, never a key, and every line written before the
// process exits on SIGTERM, however many were still queued.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCli, startServe } from '../helpers/process.js';

const ENV = { OPENRIG_SECRET_KEY: 'a1'.repeat(32), OPENRIG_LOG_LEVEL: '', OPENRIG_RATE_LIMITS: 'off' };

interface Line {
  msg: string;
  level: number;
  reqId?: string;
  method?: string;
  route?: string | null;
  url?: string;
  status?: number;
  ms?: number;
  user?: number | null;
}

describe('access log of `serve`', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-access-log-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes one line per request with its fields, no key, and loses none on SIGTERM', async () => {
    const created = await runCli(['admin', 'create-user', '--data', dir, '--email', 'log@example.com'], ENV);
    expect(created.code).toBe(0);
    const user = JSON.parse(created.stdout) as { id: number; api_key: string };
    // The default level (OPENRIG_LOG_LEVEL empty: info); one worker, so the lines are one process's.
    const s = await startServe(['--data', dir, '--workers', '1'], ENV);
    const statuses: number[] = [];
    const get = async (url: string, headers: Record<string, string> = {}) => {
      const r = await fetch(url, { headers });
      await r.arrayBuffer();
      statuses.push(r.status);
      return r.status;
    };
    expect(await get(`${s.url}/api/v0/users/current/?api_key=${user.api_key}`)).toBe(200);
    // The name as the query parser decodes it decides: a disguised api_key is redacted too.
    expect(await get(`${s.url}/api/v0/users/current/?api%5Fkey=${user.api_key}`)).toBe(200);
    expect(await get(`${s.url}/api/v0/no-such-route?api_key=${user.api_key}`)).toBe(404);
    // Thousands of replies in a burst while nothing reads the server's output: its log lines
    // (about 750 KB) fill the pipe, and the replies must come all the same (the log is written
    // asynchronously). SIGTERM as soon as the last reply arrives; the reader comes back a moment
    // later: every line still queued must be written before the process exits.
    s.child.stdout!.pause();
    const burst = Array.from({ length: 3000 }, () =>
      get(`${s.url}/api/v0/users/current/`, { authorization: `Bearer ${user.api_key}` }),
    );
    await Promise.all(burst);
    s.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    s.child.stdout!.resume();
    expect((await s.exited).code).toBe(0);

    const out = s.stdout();
    expect(out).not.toContain(user.api_key);
    expect(s.stderr()).not.toContain(user.api_key);
    const lines = out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Line);
    const access = lines.filter((l) => l.msg === 'request');
    // /healthz polls of startServe are requests too: every reply the clients saw has its line.
    const health = access.filter((l) => l.url === '/healthz');
    expect(access.length - health.length).toBe(statuses.length);
    expect(new Set(access.map((l) => l.reqId)).size).toBe(access.length);
    const current = access.filter((l) => l.route === '/api/v0/users/current' && l.status === 200);
    expect(current.length).toBe(3002);
    for (const l of current) {
      expect(l).toMatchObject({ level: 30, method: 'GET', user: user.id });
      expect(typeof l.ms).toBe('number');
      expect(l.reqId).toMatch(/^[0-9a-f-]{36}$/);
    }
    expect(current.map((l) => l.url)).toContain('/api/v0/users/current/?api_key=[redacted]');
    expect(current.map((l) => l.url)).toContain('/api/v0/users/current/?api%5Fkey=[redacted]');
    const miss = access.find((l) => l.status === 404)!;
    expect(miss).toMatchObject({ user: null, url: '/api/v0/no-such-route?api_key=[redacted]' });
    // Fastify's own per-request lines are off: the access line is the only one.
    expect(lines.filter((l) => l.msg === 'incoming request' || l.msg === 'request completed')).toEqual([]);
  });
});
