// An app on a fresh test database, driven with app.inject() (the fastify/demo anchor).
import { afterAll, beforeAll, expect } from 'vitest';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import type { DialectName as Dialect } from '../../src/server/db/connection.js';
import { createTestDb, type TestDb } from './db.js';
import { makeDeps } from '../../src/server/deps.js';
import type { Deps } from '../../src/server/deps.types.js';
import { ManualClock } from '../../src/server/clock.js';
import { loadConfig, type Config } from '../../src/server/config.js';
import { buildApp } from '../../src/server/app.js';
import { createUser, type CreateUserInput } from '../../src/server/modules/accounts/accounts.service.js';

export interface Reply {
  status: number;
  body: any;
  headers: Record<string, string | string[] | number | undefined>;
  raw: string;
}

export interface TestApp {
  db: TestDb;
  deps: Deps;
  app: FastifyInstance;
  clock: ManualClock;
  config: Config;
  request(
    method: string,
    url: string,
    opts?: { key?: string | null; body?: unknown; headers?: Record<string, string>; rawBody?: string },
  ): Promise<Reply>;
  user(
    input?: Partial<CreateUserInput>,
  ): Promise<{ id: number; email: string; apiKey: string; teamApiKey?: string }>;
}

let counter = 0;

export async function makeTestApp(dialect: Dialect, env: Record<string, string> = {}): Promise<TestApp> {
  const db = await createTestDb(dialect);
  const config = loadConfig(
    {
      OPENRIG_SECRET_KEY: 'ab'.repeat(32),
      OPENRIG_LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      ...env,
    },
    { dataDir: db.dataDir, databaseUrl: db.url },
  );
  const clock = new ManualClock(Date.now());
  const deps = makeDeps({
    store: db.store,
    clock,
    config,
    log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
  });
  const app = await buildApp(deps, { logger: process.env.TEST_LOG_LEVEL ? undefined : false });
  await app.ready();
  return {
    db,
    deps,
    app,
    clock,
    config,
    async request(method, url, opts = {}) {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      if (opts.key) headers.authorization = `Bearer ${opts.key}`;
      let payload: string | undefined;
      if (opts.rawBody !== undefined) payload = opts.rawBody;
      else if (opts.body !== undefined) {
        payload = JSON.stringify(opts.body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await app.inject({ method: method, url, headers, payload });
      let body: any = undefined;
      try {
        body = res.body ? JSON.parse(res.body) : undefined;
      } catch {
        body = res.body;
      }
      return { status: res.statusCode, body, headers: res.headers, raw: res.body };
    },
    async user(input = {}) {
      const n = ++counter;
      const u = await createUser(deps, {
        email: `user${n}-${Date.now()}@example.com`,
        emailVerified: true,
        balanceUsd: 100,
        ...input,
      });
      return { id: u.id, email: u.email, apiKey: u.api_key, teamApiKey: u.team_api_key };
    },
  };
}

/** beforeAll/afterAll wiring: `const t = useTestApp(dialect)` then `t().request(...)`. */
export function useTestApp(dialect: Dialect, env: Record<string, string> = {}): () => TestApp {
  let t: TestApp | undefined;
  beforeAll(async () => {
    t = await makeTestApp(dialect, env);
  });
  afterAll(async () => {
    if (t) {
      await t.app.close();
      await t.db.cleanup();
    }
  });
  return () => {
    if (!t) throw new Error('test app not ready');
    return t;
  };
}

/** A new API key of the account of `apiKey` with only `permissions`, made through the API. */
export async function scopedKey(
  t: TestApp,
  apiKey: string,
  permissions: unknown,
  name = 's',
): Promise<string> {
  const r = await t.request('POST', '/api/v0/auth/apikeys/', { key: apiKey, body: { name, permissions } });
  expect(r.status, r.raw).toBe(200);
  return r.body.key as string;
}
