// Prometheus metrics, on a Registry of this app's own (never prom-client's
// global one: tests build many apps in one process). Request rate and latency come from an
// onResponse hook; instance states, outbox backlog and heartbeat lag are read from the tables at
// scrape time, so every `serve` process reports the same, database-wide, values.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import type { Deps } from '../../deps.types.js';
import {
  heartbeatLag,
  instanceCountsByStatus,
  machineCountsByState,
  outboxBacklog,
  pingDb,
} from './platform.repo.js';

export interface Metrics {
  registry: Registry;
  /** Request counts and latencies (openrig_http_requests_total, …_duration_seconds). */
  requests: RequestSeries;
  rateLimited: Counter<'family'>;
  /** The worst event-loop delay each agent sync reports (openrig_agent_event_loop_delay_seconds). */
  agentLoopDelay: Histogram;
}

/** Upper bounds (seconds) of the latency histogram's buckets. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

interface RequestLabels {
  method: string;
  route: string;
  status: string;
}

interface Series {
  labels: RequestLabels;
  count: number;
  sum: number;
  /** Observations per bucket (not cumulative), the last one past every bound. */
  buckets: number[];
}

type Value = { labels: Record<string, string | number>; value: number; metricName?: string };

/**
 * The request counter and latency histogram, kept as plain numbers per (method, route, status)
 * and turned into prom-client's metric shape only when scraped. prom-client's own inc() and
 * observe() check and hash the label object on every call, a few microseconds per request; this
 * is a map lookup and three additions. The series are bounded like their labels (route patterns
 * × methods × statuses).
 */
export class RequestSeries {
  private readonly series = new Map<string, Series>();

  observe(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    let s = this.series.get(key);
    if (!s) {
      s = { labels: { method, route, status: String(status) }, count: 0, sum: 0, buckets: [] };
      for (let i = 0; i <= LATENCY_BUCKETS.length; i++) s.buckets.push(0);
      this.series.set(key, s);
    }
    s.count++;
    s.sum += seconds;
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i++;
    s.buckets[i]!++;
  }

  /** The two metrics, registered on `registry` (summed across a cluster's workers). */
  register(registry: Registry): void {
    const metric = (name: string, help: string, type: 'counter' | 'histogram', values: () => Value[]) => {
      const get = async () => ({ name, help, type, values: values(), aggregator: 'sum' as const });
      registry.registerMetric({
        name,
        help,
        type,
        aggregator: 'sum',
        get,
        // registry.resetMetrics(): both metrics read the same series, so both start again.
        reset: () => this.series.clear(),
      } as unknown as Metric);
    };
    metric('openrig_http_requests_total', 'HTTP requests by route pattern and status', 'counter', () =>
      [...this.series.values()].map((s) => ({ labels: { ...s.labels }, value: s.count })),
    );
    const latency = 'openrig_http_request_duration_seconds';
    metric(latency, 'HTTP request latency by route pattern and status', 'histogram', () => {
      const out: Value[] = [];
      for (const s of this.series.values()) {
        // Cumulative counts per bound, then +Inf, _sum and _count, as prom-client writes them.
        let acc = 0;
        LATENCY_BUCKETS.forEach((le, i) => {
          acc += s.buckets[i]!;
          out.push({ labels: { le, ...s.labels }, value: acc, metricName: `${latency}_bucket` });
        });
        out.push({ labels: { le: '+Inf', ...s.labels }, value: s.count, metricName: `${latency}_bucket` });
        out.push({ labels: { ...s.labels }, value: s.sum, metricName: `${latency}_sum` });
        out.push({ labels: { ...s.labels }, value: s.count, metricName: `${latency}_count` });
      }
      return out;
    });
  }
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
  const requests = new RequestSeries();
  requests.register(registry);
  const rateLimited = new Counter({
    name: 'openrig_rate_limited_total',
    help: 'Requests refused with 429 by route family',
    labelNames: ['family'],
    registers,
  });
  const agentLoopDelay = new Histogram({
    name: 'openrig_agent_event_loop_delay_seconds',
    help: "Worst delay of a host agent's event loop between two of its syncs (every renter on that host waited as long)",
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
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

  return { registry, requests, rateLimited, agentLoopDelay };
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
  const requests = deps.metrics.requests;
  return function observe(req: FastifyRequest, reply: FastifyReply, done: () => void): void {
    // A 404 from a wildcard route (the console's client-side routes refuse unknown /api/ paths)
    // matched no route of the API, so it is counted with the requests that matched none.
    const url = req.routeOptions.url;
    const route = url === undefined || (reply.statusCode === 404 && url.endsWith('*')) ? 'unmatched' : url;
    requests.observe(req.method, route, reply.statusCode, reply.elapsedTime / 1000);
    done();
  };
}
