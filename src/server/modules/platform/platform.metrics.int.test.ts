// GET /metrics (Prometheus text, its own registry) and /readyz (503 while the database is
// unreachable), on both databases.
import { afterAll, beforeAll, expect, it } from 'vitest';
import pino from 'pino';
import { createTestDb, describeEachDb, PG_URL } from '../../../../test/helpers/db.js';
import { startServer } from '../../main.js';
import { createUser } from '../accounts/accounts.service.js';
import { makeTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { Kysely, SqliteDialect } from 'kysely';
import { openStore, type Store } from '../../db/connection.js';
import { sqlite } from '../../db/dialect.js';
import type { DB } from '../../db/schema.js';
import { makeDeps } from '../../deps.js';
import { ManualClock } from '../../clock.js';
import { loadConfig } from '../../config.js';
import { buildApp } from '../../app.js';
import { enqueueEmails } from '../notifications/notifications.outbox.js';

/** The value of one sample line, e.g. `openrig_instances{state="running"}`. */
function sample(text: string, line: string): number | undefined {
  const row = text.split('\n').find((l) => l.startsWith(line + ' '));
  return row === undefined ? undefined : Number(row.slice(line.length + 1));
}

describeEachDb('metrics', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeTestApp(dialect, { OPENRIG_METRICS_TOKEN: 'm-token' });
  });
  afterAll(async () => {
    await t.app.close();
    await t.db.cleanup();
  });

  it('counts requests and latency by route pattern and status', async () => {
    const u = await t.user();
    await t.request('GET', '/api/v0/users/current', { key: u.apiKey });
    await t.request('GET', '/api/v0/users/current/', { key: u.apiKey });
    await t.request('GET', '/api/v0/users/current', { key: 'or_wrong' });
    await t.request('GET', '/api/v0/no/such/route');
    const r = await t.request('GET', '/metrics', { key: 'm-token' });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = r.raw;
    expect(
      sample(text, 'openrig_http_requests_total{method="GET",route="/api/v0/users/current",status="200"}'),
    ).toBe(2);
    expect(
      sample(text, 'openrig_http_requests_total{method="GET",route="/api/v0/users/current",status="401"}'),
    ).toBe(1);
    expect(sample(text, 'openrig_http_requests_total{method="GET",route="unmatched",status="404"}')).toBe(1);
    expect(
      sample(
        text,
        'openrig_http_request_duration_seconds_count{method="GET",route="/api/v0/users/current",status="200"}',
      ),
    ).toBe(2);
    expect(text).toContain(
      'openrig_http_request_duration_seconds_bucket{le="0.015",method="GET",route="/api/v0/users/current",status="200"}',
    );
    expect(sample(text, 'openrig_db_up')).toBe(1);
    expect(text).toContain('openrig_process_resident_memory_bytes');
  });

  it('reads instance states, outbox backlog and heartbeat lag from the tables at scrape time', async () => {
    const host = await t.user();
    const renter = await t.user();
    const now = t.clock.now();
    const machine = (id: number, hb: number | null) => ({
      host_id: host.id,
      gpu_name: 'RTX 4090',
      num_gpus: 1,
      online_state: hb === null ? 'offline' : 'online',
      last_heartbeat_at: hb,
      created_at: now,
      listed: 1,
      hostname: `m${id}`,
    });
    const ms = await t.db.store.db
      .insertInto('machines')
      .values([machine(1, now - 5_000), machine(2, now - 30_000), machine(3, null)] as never)
      .returning('id')
      .execute();
    const inst = (machineId: number, status: string | null, destroyed: number | null) => ({
      machine_id: machineId,
      user_id: renter.id,
      image: 'ubuntu',
      disk: 10,
      dph_compute: 1,
      dph_disk: 0.01,
      actual_status: status,
      created_at: now,
      billed_until: now,
      destroyed_at: destroyed,
    });
    await t.db.store.db
      .insertInto('instances')
      .values([
        inst(ms[0]!.id, 'running', null),
        inst(ms[1]!.id, null, null),
        inst(ms[2]!.id, 'running', now),
      ] as never)
      .execute();
    t.clock.advance(0);
    await enqueueEmails(t.db.store.db, now - 12_000, [
      { key: 'metrics-test-1', to: 'a@example.com', subject: 's', text: 't', category: 'test' },
      { key: 'metrics-test-2', to: 'b@example.com', subject: 's', text: 't', category: 'test' },
    ]);
    const text = (await t.request('GET', '/metrics', { key: 'm-token' })).raw;
    expect(sample(text, 'openrig_instances{state="running"}')).toBe(1);
    expect(sample(text, 'openrig_instances{state="provisioning"}')).toBe(1);
    expect(sample(text, 'openrig_email_outbox_backlog{state="pending"}')).toBe(2);
    expect(sample(text, 'openrig_email_outbox_oldest_age_seconds')).toBe(12);
    expect(sample(text, 'openrig_heartbeat_lag_seconds{stat="max"}')).toBe(30);
    expect(sample(text, 'openrig_heartbeat_lag_seconds{stat="avg"}')).toBe(17.5);
    expect(sample(text, 'openrig_machines_heartbeat_overdue')).toBe(1); // 30 s > 2 × 10 s
    expect(sample(text, 'openrig_machines{state="online"}')).toBe(2);
    expect(sample(text, 'openrig_machines{state="offline"}')).toBe(1);
  });
});

describeEachDb('metrics token', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeTestApp(dialect, { OPENRIG_METRICS_TOKEN: 'scrape-secret' });
  });
  afterAll(async () => {
    await t.app.close();
    await t.db.cleanup();
  });

  it('needs the token as Bearer when OPENRIG_METRICS_TOKEN is set', async () => {
    const none = await t.request('GET', '/metrics');
    expect(none.status).toBe(401);
    expect(none.body.error).toBe('auth_error');
    expect(none.headers['content-type']).toBe('application/json');
    expect((await t.request('GET', '/metrics', { key: 'scrape-secreT' })).status).toBe(401);
    expect((await t.request('GET', '/metrics', { key: 'scrape-secret' })).status).toBe(200);
  });
});

describeEachDb('metrics without a token', (dialect) => {
  it('the API port refuses /metrics to everyone; --metrics-port serves it on its own listener', async () => {
    const db = await createTestDb(dialect);
    const config = loadConfig(
      { OPENRIG_SECRET_KEY: 'ab'.repeat(32), OPENRIG_LOG_LEVEL: 'silent' },
      { dataDir: db.dataDir, databaseUrl: db.url, host: '127.0.0.1', port: 0, metricsPort: 0 },
    );
    const server = await startServer(config, { logger: false });
    try {
      const api = await fetch(`${server.url}/metrics`);
      expect(api.status).toBe(403);
      expect(await api.json()).toMatchObject({ error: 'forbidden' });
      const u = await createUser(server.deps, { email: 'm@example.com', emailVerified: true });
      const withKey = await fetch(`${server.url}/metrics`, {
        headers: { authorization: `Bearer ${u.api_key}` },
      });
      expect(withKey.status).toBe(403);
      expect(server.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const m = await fetch(server.metricsUrl!);
      expect(m.status).toBe(200);
      expect(await m.text()).toContain('openrig_http_requests_total');
      expect((await fetch(server.metricsUrl!.replace('/metrics', '/api/v0/users/current/'))).status).toBe(
        404,
      );
    } finally {
      await server.close();
      await db.cleanup();
    }
  });
});

describeEachDb('readyz', (dialect) => {
  it('answers 200 while the database answers and 503 {error, msg} once it is unreachable', async () => {
    const t = await makeTestApp(dialect);
    try {
      expect((await t.request('GET', '/readyz')).status).toBe(200);
      // A second app whose database cannot be reached: an SQLite file that cannot be opened (a
      // lost volume); PostgreSQL on a port where nothing listens.
      const url = dialect === 'sqlite' ? t.db.url : PG_URL.replace(/:\d+\//, ':1/');
      const store: Store =
        dialect === 'sqlite'
          ? (() => {
              const db = new Kysely<DB>({
                dialect: new SqliteDialect({
                  database: async () => {
                    throw new Error('unable to open database file');
                  },
                }),
              });
              const read = () => Promise.reject(new Error('unable to open database file'));
              return {
                db,
                dialect: sqlite,
                read,
                readCoalesced: read,
                scratch: { separate: false, ensure: () => {}, run: read },
                destroy: () => db.destroy(),
              };
            })()
          : openStore(url);
      const config = loadConfig(
        { OPENRIG_SECRET_KEY: 'ab'.repeat(32), OPENRIG_METRICS_TOKEN: 'm-token' },
        { dataDir: t.db.dataDir, databaseUrl: url },
      );
      const deps = makeDeps({ store, clock: new ManualClock(), config, log: pino({ level: 'silent' }) });
      const app = await buildApp(deps, { logger: false });
      const r = await app.inject({ method: 'GET', url: '/readyz' });
      expect(r.statusCode).toBe(503);
      expect(r.headers['content-type']).toBe('application/json');
      expect(JSON.parse(r.body)).toEqual({ error: 'service_unavailable', msg: 'database unreachable' });
      expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      const m = await app.inject({
        method: 'GET',
        url: '/metrics',
        headers: { authorization: 'Bearer m-token' },
      });
      expect(m.statusCode).toBe(200);
      expect(sample(m.body, 'openrig_db_up')).toBe(0);
      await app.close();
      await store.destroy().catch(() => {});
    } finally {
      await t.app.close();
      await t.db.cleanup();
    }
  });
});

// A test app of its own: the agent it registers would change the machine figures read above.
describeEachDb('metrics: host agents', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeTestApp(dialect, { OPENRIG_METRICS_TOKEN: 'm-token' });
  });
  afterAll(async () => {
    await t.app.close();
    await t.db.cleanup();
  });

  it("keeps each host agent's reported event-loop delay, and refuses a malformed one without taking the sync", async () => {
    const host = await t.user();
    const P = '/api/agent/v1';
    const machine = {
      slot: 0,
      hostname: 'h0',
      gpu_name: 'RTX 4090',
      num_gpus: 1,
      gpu_ram: 24564,
      cpu_ram: 64000,
      disk_space: 500,
    };
    const reg = await t.request('POST', `${P}/register`, {
      key: host.apiKey,
      body: { agent_uid: 'agent-loop-0001', machines: [machine] },
    });
    expect(reg.status).toBe(200);
    // The agent sends the delay only to a server that says it takes it.
    expect(reg.body.loop_delay_reports).toBe(true);
    const machine_ids = [reg.body.machines[0].machine_id];
    const sync = (event_loop_delay_ms: unknown) =>
      t.request('POST', `${P}/sync`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-loop-0001', machine_ids, instances: [], event_loop_delay_ms },
      });
    expect((await sync({ p50: 2, p99: 40, max: 30 })).status).toBe(200);
    expect((await sync({ p50: 5, p99: 900, max: 1600 })).status).toBe(200);
    const bad = await sync({ p50: -1, p99: 1, max: 1 });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('bad_request');
    const text = (await t.request('GET', '/metrics', { key: 'm-token' })).raw;
    expect(sample(text, 'openrig_agent_event_loop_delay_seconds_count')).toBe(2);
    expect(sample(text, 'openrig_agent_event_loop_delay_seconds_bucket{le="0.05"}')).toBe(1);
    expect(sample(text, 'openrig_agent_event_loop_delay_seconds_bucket{le="1"}')).toBe(1);
    expect(sample(text, 'openrig_agent_event_loop_delay_seconds_bucket{le="2.5"}')).toBe(2);
    expect(sample(text, 'openrig_agent_event_loop_delay_seconds_sum')).toBeCloseTo(1.63, 6);
  });
});
