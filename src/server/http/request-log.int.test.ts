// Request logging: the access line of every request, and a request's own logger (req.log) for
// anything else it logs, both carrying the request id; the latter made only when used.
import { PassThrough } from 'node:stream';
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../test/helpers/db.js';
import { useTestApp } from '../../../test/helpers/app.js';
import { buildApp } from '../app.js';

describeEachDb('request log', (dialect) => {
  const t = useTestApp(dialect);

  /** The app on the test database with its log at `info`, every line it writes kept. */
  async function appLoggingAtInfo() {
    const lines: string[] = [];
    const stream = new PassThrough();
    stream.on('data', (d: Buffer) => lines.push(...d.toString().split('\n').filter(Boolean)));
    const deps = { ...t().deps, config: { ...t().deps.config, logLevel: 'info' } };
    return { app: await buildApp(deps, { logStream: stream }), lines };
  }

  it('one access line per request, with reqId right after the base fields; errors carry reqId too', async () => {
    const u = await t().user();
    const { app, lines } = await appLoggingAtInfo();
    app.get('/boom', { config: { auth: 'none' }, schema: { hide: true } }, () => {
      throw new Error('boom');
    });
    try {
      const ok = await app.inject({
        method: 'GET',
        url: '/api/v0/users/current/',
        headers: { authorization: `Bearer ${u.apiKey}` },
      });
      expect(ok.statusCode).toBe(200);
      const failed = await app.inject({ method: 'GET', url: '/boom' });
      expect(failed.statusCode).toBe(500);
      await new Promise((r) => setImmediate(r));
      const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      const access = parsed.filter((l) => l.msg === 'request');
      expect(access).toHaveLength(2);
      expect(Object.keys(access[0]!)).toEqual([
        'level',
        'time',
        'pid',
        'hostname',
        'reqId',
        'method',
        'route',
        'url',
        'status',
        'ms',
        'user',
        'msg',
      ]);
      expect(access[0]).toMatchObject({
        level: 30,
        method: 'GET',
        route: '/api/v0/users/current',
        status: 200,
        user: u.id,
      });
      expect(access[1]).toMatchObject({ route: '/boom', status: 500, user: null });
      expect(new Set(access.map((l) => l.reqId)).size).toBe(2);
      // The failure's own line comes from the request's logger: the same reqId, as a binding.
      const error = parsed.find((l) => l.msg === 'request failed');
      expect(error).toMatchObject({ level: 50, reqId: access[1]!.reqId });
      expect(Object.keys(error!).indexOf('reqId')).toBe(4);
    } finally {
      await app.close();
    }
  });

  it('a log line never shows a secret path parameter, nor a key sent under a bracketed name', async () => {
    const u = await t().user();
    const { app, lines } = await appLoggingAtInfo();
    const token = 'Zq3xW7pLk9RmT2vB8nYc4Hd6Jf1Gs5Ae';
    try {
      const result = await app.inject({ method: 'GET', url: `/api/v0/instances/results/${token}/?tail=1` });
      expect(result.statusCode).toBe(404);
      const bracketed = await app.inject({
        method: 'GET',
        url: `/api/v0/users/current/?api_key[]=${u.apiKey}&api_key[0]=${u.apiKey}`,
      });
      expect(bracketed.statusCode).toBe(401);
      await new Promise((r) => setImmediate(r));
      const access = lines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.msg === 'request');
      expect(access.map((l) => l.url)).toEqual([
        '/api/v0/instances/results/[redacted]/?tail=1',
        '/api/v0/users/current/?api_key[]=[redacted]&api_key[0]=[redacted]',
      ]);
      expect(lines.join('\n')).not.toContain(token);
      expect(lines.join('\n')).not.toContain(u.apiKey);
    } finally {
      await app.close();
    }
  });
});
