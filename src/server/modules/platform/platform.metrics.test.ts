// The request series are written exactly as prom-client's own Counter and Histogram would write
// the same observations, in the text format and in the JSON a cluster's primary merges.
import { describe, expect, it } from 'vitest';
import { AggregatorRegistry, Counter, Histogram, Registry } from 'prom-client';
import { RequestSeries } from './platform.metrics.js';

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** prom-client's own metrics, with the names, labels and buckets of the request series. */
function reference() {
  const registry = new Registry();
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: 'openrig_http_requests_total',
    help: 'HTTP requests by route pattern and status',
    labelNames,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'openrig_http_request_duration_seconds',
    help: 'HTTP request latency by route pattern and status',
    labelNames,
    buckets: BUCKETS,
    registers: [registry],
  });
  return {
    registry,
    observe(method: string, route: string, status: number, seconds: number) {
      const labels = { method, route, status: String(status) };
      requests.inc(labels);
      latency.observe(labels, seconds);
    },
  };
}

function ours() {
  const registry = new Registry();
  const series = new RequestSeries();
  series.register(registry);
  return { registry, observe: series.observe.bind(series) };
}

// Every bucket, the bounds themselves (a value equal to a bound is in that bucket), past the last.
const OBSERVATIONS: [string, string, number, number][] = [
  ['GET', '/api/v0/instances/:id/', 200, 0.0004],
  ['GET', '/api/v0/instances/:id/', 200, 0.001],
  ['GET', '/api/v0/instances/:id/', 200, 0.0011],
  ['GET', '/api/v0/instances/:id/', 200, 0.003],
  ['GET', '/api/v0/instances/:id/', 404, 0.012],
  ['POST', '/api/v0/bundles/', 200, 0.02],
  ['POST', '/api/v0/bundles/', 200, 0.07],
  ['POST', '/api/v0/bundles/', 200, 0.3],
  ['POST', '/api/v0/bundles/', 400, 0.9],
  ['GET', 'unmatched', 404, 2.5],
  ['GET', 'unmatched', 404, 7],
  ['PUT', '/api/v0/instances/:id/', 200, 0.0049],
];

describe('request series (openrig_http_requests_total, openrig_http_request_duration_seconds)', () => {
  it('write the same exposition text as prom-client', async () => {
    const a = reference();
    const b = ours();
    for (const o of OBSERVATIONS) {
      a.observe(...o);
      b.observe(...o);
    }
    const want = await a.registry.metrics();
    expect(want).toContain('openrig_http_request_duration_seconds_bucket{le="0.001",method="GET"');
    expect(await b.registry.metrics()).toBe(want);
  });

  it('merge across workers like prom-client (the JSON a primary aggregates)', async () => {
    const [a1, a2, b1, b2] = [reference(), reference(), ours(), ours()];
    OBSERVATIONS.forEach((o, i) => {
      (i % 2 ? a1 : a2).observe(...o);
      (i % 2 ? b1 : b2).observe(...o);
    });
    const merged = async (x: Registry, y: Registry) =>
      AggregatorRegistry.aggregate([await x.getMetricsAsJSON(), await y.getMetricsAsJSON()]).metrics();
    const want = await merged(a1.registry, a2.registry);
    expect(want).toContain(
      'openrig_http_requests_total{method="POST",route="/api/v0/bundles/",status="200"} 3',
    );
    expect(await merged(b1.registry, b2.registry)).toBe(want);
  });

  it('reads nothing before the first request, nor after a reset', async () => {
    const b = ours();
    const empty = await reference().registry.metrics();
    expect(await b.registry.metrics()).toBe(empty);
    b.observe('GET', '/healthz', 200, 0.002);
    expect(await b.registry.metrics()).not.toBe(empty);
    b.registry.resetMetrics();
    expect(await b.registry.metrics()).toBe(empty);
  });
});
