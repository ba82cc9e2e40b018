// A real `openrig agent` benchmarks its machine after registering: the run is posted to a real
// `serve`, listed by `search benchmarks` (GET /api/v0/benchmarks) with the agent's version, and
// its figures become the offer's (cpu_ghz, disk_bw, inet_up, inet_down), which the official
// client's offer filters then select on. The agent here simulates its GPUs, so the GPU part says
// so and fills no GPU figure.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  callApi,
  createUser,
  endInstanceGroups,
  processAgentArgs,
  startProc,
  startServe,
  waitFor,
  waitRegistered,
  type Proc,
} from '../helpers/process.js';

const ENV = { OPENRIG_SECRET_KEY: 'b7'.repeat(32), OPENRIG_RATE_LIMITS: 'off', OPENRIG_LOG_LEVEL: 'warn' };

describe("the agent's benchmarks at registration", () => {
  let dir: string;
  let stateDir: string;
  let serve: Proc & { url: string };
  let agent: Proc;
  let hostKey: string;
  let renterKey: string;
  let machineId: number;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-bench-e2e-'));
    stateDir = path.join(dir, 'agent-state');
    const data = path.join(dir, 'data');
    serve = await startServe(['--data', data, '--workers', '1'], ENV);
    const host = await createUser(data, ENV, 'bench-host@example.com');
    const renter = await createUser(data, ENV, 'bench-renter@example.com', ['--balance', '10']);
    hostKey = host.api_key;
    renterKey = renter.api_key;
    agent = startProc(processAgentArgs(serve.url, stateDir, { gpus: 'RTX 4090x1' }), {
      ...ENV,
      OPENRIG_API_KEY: host.api_key,
      OPENRIG_TEST_BENCHMARKS: '1',
    });
    [machineId] = (await waitRegistered(agent)) as [number];
  }, 120_000);

  afterAll(() => {
    agent?.child.kill('SIGKILL');
    serve?.child.kill('SIGTERM');
    if (stateDir) endInstanceGroups(stateDir);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('posts a run that search benchmarks lists and the offer carries, and says there is no GPU to measure', async () => {
    const rows = await waitFor(
      async () => {
        const r = await callApi(serve.url, 'GET', '/api/v0/benchmarks', renterKey);
        const mine = Array.isArray(r.body)
          ? (r.body as { machine_id: number; name: string; score: number }[]).filter(
              (b) => b.machine_id === machineId,
            )
          : [];
        return mine.length > 0 ? mine : null;
      },
      () => `a benchmark row for machine ${machineId}; the agent said: ${agent.stdout()}${agent.stderr()}`,
      90_000,
      500,
    );
    const names = rows.map((b) => b.name);
    expect(names).toEqual(expect.arrayContaining(['cpu_ghz', 'disk_bw', 'inet_up', 'inet_down']));
    for (const b of rows.filter((x) => ['disk_bw', 'inet_up', 'inet_down'].includes(x.name)))
      expect(b.score, b.name).toBeGreaterThan(0);
    // No GPU figure from a machine whose GPUs are simulated.
    expect(names.filter((n) => ['total_flops', 'gpu_mem_bw', 'dlperf'].includes(n))).toEqual([]);
    expect(names).toEqual(expect.arrayContaining(['cpu_score', 'mem_bw']));

    // The offer carries the measured figures, and the official client's filters select on them.
    const measured = Object.fromEntries(rows.map((b) => [b.name, b.score]));
    const search = await callApi(serve.url, 'POST', '/api/v0/bundles/', renterKey, {
      machine_id: { eq: machineId },
      disk_bw: { gt: 0 },
      inet_down: { gte: Math.floor(measured.inet_down! / 2) },
      verified: { eq: false },
      total_flops: { lte: 0 },
    });
    expect(search.status, JSON.stringify(search.body)).toBe(200);
    expect(search.body.offers).toHaveLength(1);
    expect(search.body.offers[0].disk_bw).toBeCloseTo(measured.disk_bw!, 0);

    // The host sees its machine's run in its verification view, and nobody else does.
    const own = await callApi(serve.url, 'GET', `/api/v0/machines/${machineId}/verification`, hostKey);
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    const other = await callApi(serve.url, 'GET', `/api/v0/machines/${machineId}/verification`, renterKey);
    expect(other.status).toBeGreaterThanOrEqual(400);
  }, 120_000);
});
