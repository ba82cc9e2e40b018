// Rate limits on both databases: counting is atomic, shared by several processes (two stores on
// one database stand for two `serve` processes), answers 429 with the `{error, msg}` body and the
// RateLimit / RateLimit-Policy / Retry-After headers, and is switched off by OPENRIG_RATE_LIMITS=off.
import { afterAll, beforeAll, expect, it } from 'vitest';
import Fastify, { type FastifyInstance } from 'fastify';
import pino from 'pino';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { createTestDb, type TestDb } from '../../../../test/helpers/db.js';
import { makeTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { openStore, type Store } from '../../db/connection.js';
import { makeDeps } from '../../deps.js';
import type { Deps } from '../../deps.types.js';
import { ManualClock } from '../../clock.js';
import { loadConfig } from '../../config.js';
import { installErrorHandling } from '../../http/error-handler.js';
import { makeCounters, rateLimitHook } from './platform.rate-limit.js';

const T0 = Date.UTC(2026, 10, 22, 12, 0, 0); // on a minute boundary

/** A small app: a fake authentication (x-user header) then the real limiter, on `store`. */
async function limitedApp(
  store: Store,
  clock: ManualClock,
  env: Record<string, string> = {},
): Promise<{ app: FastifyInstance; deps: Deps }> {
  const config = loadConfig(
    {
      OPENRIG_SECRET_KEY: 'ab'.repeat(32),
      OPENRIG_RATE_LIMIT_SEARCH: '3/60',
      OPENRIG_RATE_LIMIT_LOGINS: '2/60',
      ...env,
    },
    { dataDir: '/tmp/openrig-rl-test' },
  );
  const deps = makeDeps({ store, clock, config, log: pino({ level: 'silent' }) });
  const app = Fastify({ logger: false, routerOptions: { ignoreTrailingSlash: true } });
  installErrorHandling(app);
  app.decorateRequest('auth', null);
  app.addHook('onRequest', async (req) => {
    const id = req.headers['x-user'];
    req.auth = id ? ({ user: { id: Number(id) } } as unknown as NonNullable<typeof req.auth>) : null;
  });
  app.addHook('onRequest', rateLimitHook(deps));
  app.post('/api/v0/bundles/', async () => ({ offers: [] }));
  app.post('/api/v0/users/login/', async () => ({ ok: true }));
  app.get('/api/v0/instances/:id/', async () => ({ instances: null }));
  await app.ready();
  return { app, deps };
}

describeEachDb('rate limits', (dialect) => {
  let db: TestDb;
  let second: Store;
  const clock = new ManualClock(T0);
  let a: FastifyInstance;
  let b: FastifyInstance;
  let off: FastifyInstance;

  beforeAll(async () => {
    db = await createTestDb(dialect);
    second = openStore(db.url); // a second "serve process": its own connection(s), same database
    a = (await limitedApp(db.store, clock)).app;
    b = (await limitedApp(second, clock)).app;
    off = (await limitedApp(db.store, clock, { OPENRIG_RATE_LIMITS: 'off' })).app;
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close(), off.close()]);
    await second.destroy();
    await db.cleanup();
  });

  const search = (app: FastifyInstance, user: string | null) =>
    app.inject({ method: 'POST', url: '/api/v0/bundles/', headers: user ? { 'x-user': user } : {} });

  it('counts one window per account across two processes, then answers 429 with the headers', async () => {
    clock.set(T0 + 18_000);
    const r1 = await search(a, '1');
    expect(r1.statusCode).toBe(200);
    expect(r1.headers['ratelimit-policy']).toBe('"search";q=3;w=60');
    expect(r1.headers.ratelimit).toBe('"search";r=2;t=42');
    expect((await search(b, '1')).headers.ratelimit).toBe('"search";r=1;t=42');
    expect((await search(a, '1')).statusCode).toBe(200);
    const r4 = await search(b, '1');
    expect(r4.statusCode).toBe(429);
    expect(r4.headers['retry-after']).toBe('42');
    expect(r4.headers.ratelimit).toBe('"search";r=0;t=42');
    expect(JSON.parse(r4.body)).toEqual({
      error: 'rate_limited',
      msg: 'Too many offer searches; retry in 42 seconds',
    });
    // Another account has its own budget; the next window starts afresh.
    expect((await search(a, '2')).statusCode).toBe(200);
    clock.set(T0 + 60_000);
    expect((await search(a, '1')).statusCode).toBe(200);
  });

  it('limits anonymous callers per IP, per family, and leaves other routes alone', async () => {
    clock.set(T0 + 120_000);
    const login = () => a.inject({ method: 'POST', url: '/api/v0/users/login', remoteAddress: '10.1.2.3' });
    expect((await login()).statusCode).toBe(200);
    expect((await login()).statusCode).toBe(200);
    const r = await login();
    expect(r.statusCode).toBe(429);
    expect(JSON.parse(r.body).error).toBe('rate_limited');
    expect(r.headers['retry-after']).toBe('60');
    const other = await a.inject({ method: 'POST', url: '/api/v0/users/login', remoteAddress: '10.9.9.9' });
    expect(other.statusCode).toBe(200);
    // The search family of the same IP is untouched, and polling is never limited.
    expect(
      (await a.inject({ method: 'POST', url: '/api/v0/bundles', remoteAddress: '10.1.2.3' })).statusCode,
    ).toBe(200);
    for (let i = 0; i < 10; i++) {
      const g = await a.inject({ method: 'GET', url: '/api/v0/instances/5/', remoteAddress: '10.1.2.3' });
      expect(g.statusCode).toBe(200);
      expect(g.headers.ratelimit).toBeUndefined();
    }
  });

  it('is switched off by OPENRIG_RATE_LIMITS=off', async () => {
    clock.set(T0 + 180_000);
    for (let i = 0; i < 6; i++) {
      const r = await search(off, '7');
      expect(r.statusCode).toBe(200);
      expect(r.headers.ratelimit).toBeUndefined();
    }
  });

  it('lets exactly `limit` of 40 concurrent requests through, from two processes', async () => {
    clock.set(T0 + 240_000);
    const replies = await Promise.all(Array.from({ length: 40 }, (_, i) => search(i % 2 ? a : b, '99')));
    expect(replies.filter((r) => r.statusCode === 200)).toHaveLength(3);
    expect(replies.filter((r) => r.statusCode === 429)).toHaveLength(37);
  });

  it('counts atomically: 50 concurrent upserts on one bucket return 1..50', async () => {
    const counters = [makeCounters(db.store), makeCounters(second)];
    const hits = await Promise.all(
      Array.from({ length: 50 }, (_, i) => counters[i % 2]!.hit('race:1', 0, 1)),
    );
    expect([...hits].sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });

  it('sweeps ended windows', async () => {
    const c = makeCounters(db.store);
    await c.hit('old:1', 0, 1000);
    await c.hit('new:1', 0, T0 + 10_000_000);
    expect(await c.sweep(T0)).toBeGreaterThanOrEqual(1);
    // The swept bucket starts again at 1; the live one goes on counting.
    expect(await c.hit('old:1', 0, 1000)).toBe(1);
    expect(await c.hit('new:1', 0, T0 + 10_000_000)).toBe(2);
  });

  it('keeps the counters of a SQLite deployment out of the main database (no fsync per limited request)', async () => {
    await search(a, '77');
    const inMain = await db.store.db
      .selectFrom('rate_limit_counters')
      .select('bucket')
      .where('bucket', '=', 'search:u:77')
      .execute();
    expect(inMain.length).toBe(dialect === 'sqlite' ? 0 : 1);
    expect(db.store.scratch.separate).toBe(dialect === 'sqlite');
  });
});

describeEachDb('rate limits in the real app', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeTestApp(dialect, { OPENRIG_RATE_LIMIT_LOGINS: '2/60' });
  });
  afterAll(async () => {
    await t.app.close();
    await t.db.cleanup();
  });

  it('limits POST /api/v0/users/login and documents the 429 in OpenAPI', async () => {
    const body = { email: 'nobody@example.com', password: 'wrong' };
    const first = await t.request('POST', '/api/v0/users/login', { body });
    expect(first.status).not.toBe(429);
    expect(first.headers['ratelimit-policy']).toBe('"logins";q=2;w=60');
    await t.request('POST', '/api/v0/users/login', { body });
    const third = await t.request('POST', '/api/v0/users/login/', { body });
    expect(third.status).toBe(429);
    expect(third.body).toEqual({
      error: 'rate_limited',
      msg: expect.stringMatching(/^Too many login attempts; retry in \d+ seconds$/),
    });
    expect(third.headers['content-type']).toBe('application/json');
    expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
    const doc = (await t.request('GET', '/api/v0/openapi.json')).body;
    const login = doc.paths['/api/v0/users/login']?.post ?? doc.paths['/api/v0/users/login/']?.post;
    expect(login.responses['429']).toBeDefined();
  });
});
