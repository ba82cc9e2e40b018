// Earned reliability and renter reports against a real database: uptime sampled from the
// machines' heartbeat state, the published formula over the record, the number stored on the
// machine row and read by offer search (filter and value), the host's view of its parts; reports
// only by renters of the machine, one per renter per machine per day (a race fired at once keeps
// one), listed for the host and the operator only, and the official CLI's `reports ID` request.
import { expect, it } from 'vitest';
import { sql } from 'kysely';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { renter, runningInstance } from '../../../../test/helpers/market.js';
import { cli, expectOk } from '../../../../test/compat/official-cli.js';
import { insertMachines } from '../machines/machines.service.js';
import { reportInstanceStatus, sweepMachineInstances } from '../instances/instances.moves.js';
import { computeReliability, MAX_SAMPLE_GAP_MS, reliabilityScore, sampleUptime } from './trust.service.js';

const MIN = 60_000;
const HOUR = 3_600_000;

async function agentMachines(
  t: TestApp,
  n: number,
): Promise<{ host: Awaited<ReturnType<TestApp['user']>>; ids: number[] }> {
  const host = await t.user();
  const ids = await insertMachines(
    t.deps.db,
    Array.from({ length: n }, () => ({ hostId: host.id, gpuName: 'RTX 4090', numGpus: 1, priceGpu: 0.5 })),
    t.clock.now(),
  );
  // As if their agent had heartbeated: judged machines, online.
  await t.deps.db
    .updateTable('machines')
    .set({ last_heartbeat_at: t.clock.now(), online_state: 'online', verified: 1 })
    .where('id', 'in', ids)
    .execute();
  return { host, ids };
}

const setOnline = (t: TestApp, id: number, on: boolean) =>
  t.deps.db
    .updateTable('machines')
    .set({ online_state: on ? 'online' : 'offline' })
    .where('id', '=', id)
    .execute();

describeEachDb('trust', (dialect) => {
  const t = useTestApp(dialect);

  it('the formula: a machine without history is 0.95; each part lowers it as published', () => {
    const none = {
      listed_ms: 0,
      online_ms: 0,
      starts: 0,
      start_failures: 0,
      ended: 0,
      interrupted: 0,
      reporters: 0,
    };
    expect(reliabilityScore(none).score).toBe(0.95);
    // 30 days listed, online throughout.
    const up = reliabilityScore({ ...none, listed_ms: 720 * HOUR, online_ms: 720 * HOUR });
    expect(up.uptime).toBeCloseTo((720 + 24 * 0.95) / 744, 4);
    // Half of 30 days offline, one failed start of two, one interrupted end of one, two reporters.
    const bad = reliabilityScore({
      listed_ms: 720 * HOUR,
      online_ms: 360 * HOUR,
      starts: 2,
      start_failures: 1,
      ended: 1,
      interrupted: 1,
      reporters: 2,
    });
    const expected = ((360 + 22.8) / 744) * (6 / 7) * (5 / 6) * 0.95 ** 2;
    expect(bad.score).toBeCloseTo(expected, 4);
  });

  it('uptime from heartbeats lowers a machine that was offline, onto its row, and offer search reads it', async () => {
    const { host, ids } = await agentMachines(t(), 2);
    const [good, flaky] = ids as [number, number];
    await sampleUptime(t().deps); // the sampler's first run counts nothing
    // Two hours in one-minute samples; the flaky machine is offline for half of them.
    for (let i = 0; i < 120; i++) {
      t().clock.advance(MIN);
      if (i % 12 === 0) await setOnline(t(), flaky, i % 24 !== 0);
      await sampleUptime(t().deps);
    }
    await setOnline(t(), flaky, true);
    // A gap with no sampler (no server ran) counts at most MAX_SAMPLE_GAP_MS.
    t().clock.advance(10 * HOUR);
    expect(await sampleUptime(t().deps)).toBe(MAX_SAMPLE_GAP_MS);
    await computeReliability(t().deps);

    const rel = async (id: number, key = host.apiKey) =>
      t().request('GET', `/api/v0/machines/${id}/reliability/`, { key });
    const g = await rel(good);
    expect(g.status, g.raw).toBe(200);
    expect(g.body.listed_hours).toBeCloseTo(2 + 5 / 60, 6);
    expect(g.body.online_hours).toBeCloseTo(2 + 5 / 60, 6);
    expect(g.body.judged).toBe(true);
    const f = await rel(flaky);
    expect(f.body.listed_hours).toBeCloseTo(2 + 5 / 60, 6);
    expect(f.body.online_hours).toBeCloseTo(1 + 5 / 60, 6);
    const expectFlaky = reliabilityScore({
      listed_ms: (2 * 60 + 5) * MIN,
      online_ms: (60 + 5) * MIN,
      starts: 0,
      start_failures: 0,
      ended: 0,
      interrupted: 0,
      reporters: 0,
    }).score;
    expect(f.body.reliability).toBe(expectFlaky);
    expect(f.body.factors.uptime).toBeLessThan(g.body.factors.uptime);
    expect(g.body.reliability).toBeGreaterThan(0.95);
    // Stored on the machine row.
    const row = await t()
      .deps.db.selectFrom('machines')
      .select(['id', 'reliability'])
      .where('id', 'in', ids)
      .orderBy('id')
      .execute();
    expect(row.map((r) => Number(r.reliability))).toEqual([g.body.reliability, expectFlaky]);

    // Offers carry the computed number as reliability and reliability2, and filter on it.
    const u = await renter(t());
    const search = (q: Record<string, unknown>) =>
      t().request('POST', '/api/v0/bundles/', { key: u.apiKey, body: { id: { in: ids }, ...q } });
    const all = await search({});
    expect(all.status, all.raw).toBe(200);
    const byId = new Map(all.body.offers.map((o: { id: number }) => [o.id, o]));
    expect(byId.get(good)).toMatchObject({
      reliability: g.body.reliability,
      reliability2: g.body.reliability,
    });
    expect(byId.get(flaky)).toMatchObject({ reliability2: expectFlaky });
    const reliable = await search({ reliability2: { gt: 0.93 } });
    expect(reliable.body.offers.map((o: { id: number }) => o.id)).toEqual([good]);

    // Someone else's machine: 403; no such machine: 404.
    const other = await t().user();
    expect((await rel(good, other.apiKey)).status).toBe(403);
    expect((await rel(999_999)).status).toBe(404);
  });

  it('failed starts and interrupted endings count against the machine', async () => {
    const { host, ids } = await agentMachines(t(), 1);
    const m = ids[0]!;
    const u = await renter(t(), { balanceUsd: 1000 });
    // A start that exits before ever running.
    const r1 = await t().request('PUT', `/api/v0/asks/${m}/`, {
      key: u.apiKey,
      body: { image: 'x', disk: 10 },
    });
    expect(r1.status, r1.raw).toBe(200);
    await reportInstanceStatus(t().deps, r1.body.new_contract, 'loading');
    await reportInstanceStatus(t().deps, r1.body.new_contract, 'exited');
    expect(
      (await t().request('DELETE', `/api/v0/instances/${r1.body.new_contract}/`, { key: u.apiKey })).status,
    ).toBe(200);
    // One that ran, lost its host (the sweep) and was destroyed so.
    const i2 = await runningInstance(t(), u.apiKey, m);
    await sweepMachineInstances(t().deps, m, 'offline');
    expect((await t().request('DELETE', `/api/v0/instances/${i2}/`, { key: u.apiKey })).status).toBe(200);
    await computeReliability(t().deps, m);
    const r = await t().request('GET', `/api/v0/machines/${m}/reliability/`, { key: host.apiKey });
    expect(r.body).toMatchObject({ starts: 2, start_failures: 1, ended: 1, interrupted: 1 });
    expect(r.body.factors).toMatchObject({
      starts: Math.round((6 / 7) * 1e4) / 1e4,
      endings: Math.round((5 / 6) * 1e4) / 1e4,
    });
    expect(r.body.reliability).toBeLessThan(0.95 * (6 / 7) * (5 / 6) + 1e-4);
  });

  it('reports: renters of the machine only, one a day (a race keeps one), seen by the host and the operator', async () => {
    const { host, ids } = await agentMachines(t(), 1);
    const m = ids[0]!;
    const u = await renter(t(), { balanceUsd: 1000 });
    const stranger = await t().user();
    const operator = await t().user({ admin: true });
    const report = (key: string, body: unknown) =>
      t().request('POST', `/api/v0/machines/${m}/reports/`, { key, body });
    // Not a renter of it: refused.
    const s = await report(stranger.apiKey, { problem: 'slow', message: 'x' });
    expect(s.status).toBe(403);
    expect(s.body.error).toBe('not_a_renter');
    await runningInstance(t(), u.apiKey, m);
    // Bad input: 400, nothing written.
    expect((await report(u.apiKey, { problem: 'bad', message: 'x' })).status).toBe(400);
    expect((await report(u.apiKey, { problem: 'gpu', message: 'a\nb' })).status).toBe(400);
    expect((await report(u.apiKey, { problem: 'gpu', message: 'x'.repeat(1001) })).status).toBe(400);
    // Five at once: one wins, the others are told it is done already.
    const race = await Promise.all(
      Array.from({ length: 5 }, () => report(u.apiKey, { problem: 'network', message: 'packet loss' })),
    );
    expect(race.filter((r) => r.status === 200)).toHaveLength(1);
    expect(race.filter((r) => r.status === 409 && r.body.error === 'already_reported')).toHaveLength(4);
    // The next day, another.
    t().clock.advance(24 * HOUR);
    const next = await report(u.apiKey, { problem: 'gpu', message: 'Xid 79' });
    expect(next.status, next.raw).toBe(200);
    expect(next.body.report).toMatchObject({ machine_id: m, problem: 'gpu', message: 'Xid 79' });
    const n = await t()
      .deps.db.selectFrom('machine_reports')
      .select(sql<number>`count(*)`.as('n'))
      .where('machine_id', '=', m)
      .executeTakeFirstOrThrow();
    expect(Number(n.n)).toBe(2);

    // The report fed the reliability at once: one distinct reporter.
    const rel = await t().request('GET', `/api/v0/machines/${m}/reliability/`, { key: host.apiKey });
    expect(rel.body.reporters).toBe(1);
    expect(rel.body.factors.reports).toBe(0.95);

    // The host, as the official CLI asks (a JSON body on the GET): newest first, no reporter.
    const list = await cli(t(), {
      method: 'GET',
      path: `/machines/${m}/reports/`,
      key: host.apiKey,
      json: { machine_id: m },
    });
    expectOk(list);
    expect(list.body.map((r: { problem: string }) => r.problem)).toEqual(['gpu', 'network']);
    expect(list.body[0]).toMatchObject({ problem: 'gpu', message: 'Xid 79', created_at: expect.any(Number) });
    expect(list.body[0].reporter_id).toBeUndefined();
    // The operator sees who reported.
    const op = await t().request('GET', `/api/v0/machines/${m}/reports/`, { key: operator.apiKey });
    expect(op.status).toBe(200);
    expect(op.body[0].reporter_id).toBe(u.id);
    // The renter who reported, and anyone else: 403; a missing machine: 404.
    expect((await t().request('GET', `/api/v0/machines/${m}/reports/`, { key: u.apiKey })).status).toBe(403);
    expect(
      (await t().request('GET', `/api/v0/machines/${m}/reports/`, { key: stranger.apiKey })).status,
    ).toBe(403);
    expect((await t().request('GET', `/api/v0/machines/999999/reports/`, { key: host.apiKey })).status).toBe(
      404,
    );

    // The host's trust page: the machine with its parts and its report count.
    const page = await t().request('GET', '/api/v0/trust/machines/', { key: host.apiKey });
    expect(page.status).toBe(200);
    expect(page.body.machines).toEqual([
      expect.objectContaining({ machine_id: m, reports: 2, reporters: 1 }),
    ]);
  });
});
