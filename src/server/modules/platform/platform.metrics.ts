// Prometheus metrics, on a Registry of this app's own (never prom-client's
// global one: tests build many apps in one process). Request rate and latency come from an
// onResponse hook; instance states, outbox backlog and heartbeat lag are read from the tables at
// scrape time, so every `serve` process reports the same, database-wide, values.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Deps } from '../../deps.js';
import {
  heartbeatLag,
  instanceCountsByStatus,
  machineCountsByState,
  outboxBacklog,
  pingDb,
} from './platform.repo.js';

export interface Metrics {
  registry: Registry;
  requests: Counter<'method' | 'route' | 'status'>;
  latency: Histogram<'method' | 'route' | 'status'>;
  rateLimited: Counter<'family'>;
}

/** What the scrape-time queries read. */
type MetricsDeps = Pick<Deps, 'db' | 'clock' | 'config' | 'log'>;

/** Runs a scrape-time query; a table that does not exist yet (or a dead database) reports nothing. */
async function safely<T>(deps: MetricsDeps, what: string, fn: () => Promise<T>): Promise<T | null> {
  try {
    return await fn();
  } catch (err) {
    deps.log.debug({ err, what }, 'metrics query failed');
    return null;
  }
}

/** The metrics of one app, on a registry of its own (made once, deps.ts). */
export function makeMetrics(deps: MetricsDeps): Metrics {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry, prefix: 'openrig_' });
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: 'openrig_http_requests_total',
    help: 'HTTP requests by route pattern and status',
    labelNames,
    registers,
  });
  const latency = new Histogram({
    name: 'openrig_http_request_duration_seconds',
    help: 'HTTP request latency by route pattern and status',
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers,
  });
  const rateLimited = new Counter({
    name: 'openrig_rate_limited_total',
    help: 'Requests refused with 429 by route family',
    labelNames: ['family'],
    registers,
  });

  // One set of queries per scrape, shared by the gauges below (prom-client collects them in parallel).
  let pending: Promise<Snapshot> | null = null;
  const snap = (): Promise<Snapshot> => {
    pending ??= loadSnapshot(deps).finally(() => {
      pending = null;
    });
    return pending;
  };
  const gauge = (
    name: string,
    help: string,
    labelNames: string[],
    fill: (g: Gauge<string>, s: Snapshot) => void,
  ) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      // Database-wide values: every worker of a cluster reads the same, so merged once, not summed.
      aggregator: 'first',
      async collect() {
        const s = await snap();
        this.reset();
        fill(this, s);
      },
    });

  gauge('openrig_db_up', '1 when the database answers, else 0', [], (g, s) => g.set(s.dbUp ? 1 : 0));
  gauge(
    'openrig_instances',
    'Live (not destroyed) instances by actual_status; "provisioning" is the null status',
    ['state'],
    (g, s) => {
      for (const [state, n] of s.instances) g.set({ state }, n);
    },
  );
  gauge(
    'openrig_email_outbox_backlog',
    'E-mails in the outbox by state: pending (not yet delivered) or failed (gave up)',
    ['state'],
    (g, s) => {
      g.set({ state: 'pending' }, s.outboxPending);
      g.set({ state: 'failed' }, s.outboxFailed);
    },
  );
  gauge(
    'openrig_email_outbox_oldest_age_seconds',
    'Age of the oldest undelivered e-mail (0 when none)',
    [],
    (g, s) => g.set(s.outboxOldestAgeS),
  );
  gauge(
    'openrig_heartbeat_lag_seconds',
    'Time since the last heartbeat over online machines: max and average',
    ['stat'],
    (g, s) => {
      g.set({ stat: 'max' }, s.lagMaxS);
      g.set({ stat: 'avg' }, s.lagAvgS);
    },
  );
  gauge(
    'openrig_machines_heartbeat_overdue',
    'Machines marked online whose last heartbeat is older than twice the heartbeat interval',
    [],
    (g, s) => g.set(s.overdue),
  );
  gauge('openrig_machines', 'Machines (not deleted) by online_state', ['state'], (g, s) => {
    for (const [state, n] of s.machines) g.set({ state }, n);
  });

  return { registry, requests, latency, rateLimited };
}

interface Snapshot {
  dbUp: boolean;
  instances: [string, number][];
  outboxPending: number;
  outboxFailed: number;
  outboxOldestAgeS: number;
  lagMaxS: number;
  lagAvgS: number;
  overdue: number;
  machines: [string, number][];
}

async function loadSnapshot(deps: MetricsDeps): Promise<Snapshot> {
  const now = deps.clock.now();
  const dbUp = (await safely(deps, 'db_up', () => pingDb(deps.db))) !== null;
  const inst = await safely(deps, 'instances', () => instanceCountsByStatus(deps.db));
  const outbox = await safely(deps, 'outbox', () => outboxBacklog(deps.db));
  const overdueBefore = now - 2 * deps.config.agent.heartbeatS * 1000;
  const hb = await safely(deps, 'heartbeats', () => heartbeatLag(deps.db, overdueBefore));
  const states = await safely(deps, 'machines', () => machineCountsByState(deps.db));
  const ageS = (t: unknown) => (t != null ? Math.max(0, (now - Number(t)) / 1000) : 0);
  return {
    dbUp,
    instances: (inst ?? []).map((r) => [r.actual_status ?? 'provisioning', Number(r.n)]),
    outboxPending: Number(outbox?.pending ?? 0),
    outboxFailed: Number(outbox?.failed ?? 0),
    outboxOldestAgeS: ageS(outbox?.oldest),
    lagMaxS: ageS(hb?.oldest),
    lagAvgS: ageS(hb?.mean),
    overdue: Number(hb?.overdue ?? 0),
    machines: (states ?? []).map((r) => [r.online_state, Number(r.n)]),
  };
}

/** onResponse hook: one observation per request, labelled by route pattern (bounded cardinality). */
export function metricsHook(deps: Deps) {
  const m = deps.metrics;
  // The series of one (method, route, status), bound once: prom-client hashes a label object on
  // every call otherwise. Bounded like the labels themselves (route patterns × methods × statuses).
  const series = new Map<string, { count: { inc(): void }; time: { observe(v: number): void } }>();
  return function observe(req: FastifyRequest, reply: FastifyReply, done: () => void): void {
    // A 404 from a wildcard route (the console's client-side routes refuse unknown /api/ paths)
    // matched no route of the API, so it is counted with the requests that matched none.
    const url = req.routeOptions.url;
    const route = url === undefined || (reply.statusCode === 404 && url.endsWith('*')) ? 'unmatched' : url;
    const key = `${req.method} ${reply.statusCode} ${route}`;
    let s = series.get(key);
    if (!s) {
      const labels = { method: req.method, route, status: String(reply.statusCode) };
      s = { count: m.requests.labels(labels), time: m.latency.labels(labels) };
      series.set(key, s);
    }
    s.count.inc();
    s.time.observe(reply.elapsedTime / 1000);
    done();
  };
}
