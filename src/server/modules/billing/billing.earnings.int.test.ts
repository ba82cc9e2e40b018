// A host's earnings (GET /users/me/machine-earnings) against a real database: what renters paid
// for the host's machines, per machine and per UTC day, a charge counted on the day its billed
// period ended; other hosts' machines never counted; bad ranges and ids refused.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { scopedKey, useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { renter, runningInstance } from '../../../../test/helpers/market.js';
import { insertMachines } from '../machines/machines.service.js';
import { runMeter } from './billing.service.js';

const DAY = 86_400_000;
// 3.6 $/h compute = 1000 µ$/s; disk 0.1 $/GB-month × 72 GB / 720 h = 0.01 $/h.
const computeUsd = (s: number) => (1000 * s) / 1e6;
const diskUsd = (s: number) => Math.round((0.01 * 1e6 * s) / 3600) / 1e6;

const earnings = (t: TestApp, key: string | null, query: string) =>
  t.request('GET', `/api/v0/users/me/machine-earnings?owner=me&${query}`, { key });

describeEachDb('host earnings', (dialect) => {
  const t = useTestApp(dialect);

  it('per machine and per UTC day, split at midnight by where each billed period ended', async () => {
    const day0 = 20_000;
    t().clock.set(day0 * DAY + 23 * 3_600_000);
    const host = await t().user();
    const other = await t().user();
    const spec = { gpuName: 'RTX 4090', numGpus: 1, priceGpu: 3.6, priceDisk: 0.1 };
    const [a, b] = await insertMachines(
      t().deps.db,
      [
        { hostId: host.id, ...spec },
        { hostId: host.id, ...spec },
      ],
      t().clock.now(),
    );
    const [c] = await insertMachines(t().deps.db, [{ hostId: other.id, ...spec }], t().clock.now());
    const u = await renter(t(), { balanceUsd: 1000 });
    await runningInstance(t(), u.apiKey, a!);
    await runningInstance(t(), u.apiKey, c!);
    // An hour up to midnight, then half an hour into the next day.
    t().clock.advance(3_600_000);
    await runMeter(t().deps);
    t().clock.advance(1_800_000);
    await runMeter(t().deps);

    const r = await earnings(t(), host.apiKey, `sday=${day0}&eday=${day0 + 1}&machid=null`);
    expect(r.status).toBe(200);
    const first = computeUsd(3600) + diskUsd(3600);
    const second = computeUsd(1800) + diskUsd(1800);
    expect(r.body).toMatchObject({
      success: true,
      sday: day0,
      eday: day0 + 1,
      start: (day0 * DAY) / 1000,
      end: ((day0 + 2) * DAY) / 1000,
    });
    expect(r.body.summary.total_gpu).toBeCloseTo(computeUsd(5400), 6);
    expect(r.body.summary.total_stor).toBeCloseTo(diskUsd(3600) + diskUsd(1800), 6);
    expect(r.body.summary.total_earn).toBeCloseTo(first + second, 6);
    expect(r.body.summary).toMatchObject({ total_bwu: 0, total_bwd: 0 });
    expect(r.body.per_day.map((d: { day: number; date: string }) => [d.day, d.date])).toEqual([
      [day0, new Date(day0 * DAY).toISOString().slice(0, 10)],
      [day0 + 1, new Date((day0 + 1) * DAY).toISOString().slice(0, 10)],
    ]);
    expect(r.body.per_day[0].earn).toBeCloseTo(first, 6);
    expect(r.body.per_day[0].gpu_earn).toBeCloseTo(computeUsd(3600), 6);
    expect(r.body.per_day[1].earn).toBeCloseTo(second, 6);
    // Every machine of the host, in id order, an idle one at 0; the other host's never.
    expect(r.body.per_machine.map((m: { machine_id: number }) => m.machine_id)).toEqual([a, b]);
    expect(r.body.per_machine[0].earn).toBeCloseTo(first + second, 6);
    expect(r.body.per_machine[1]).toMatchObject({ gpu_earn: 0, sto_earn: 0, earn: 0 });

    // One day only; a fraction names the day it falls in.
    const d1 = await earnings(t(), host.apiKey, `sday=${day0 + 1.7}&eday=${day0 + 1.2}`);
    expect(d1.status).toBe(200);
    expect(d1.body.per_day).toHaveLength(1);
    expect(d1.body.summary.total_earn).toBeCloseTo(second, 6);
    // One machine.
    const onlyB = await earnings(t(), host.apiKey, `sday=${day0}&eday=${day0 + 1}&machid=${b}`);
    expect(onlyB.body.per_machine).toEqual([expect.objectContaining({ machine_id: b, earn: 0 })]);
    expect(onlyB.body.summary.total_earn).toBe(0);
    // The other host earns from its own machine only.
    const theirs = await earnings(t(), other.apiKey, `sday=${day0}&eday=${day0 + 1}`);
    expect(theirs.body.per_machine.map((m: { machine_id: number }) => m.machine_id)).toEqual([c]);
    expect(theirs.body.summary.total_earn).toBeCloseTo(first + second, 6);
    // A renter with no machines earns nothing.
    const none = await earnings(t(), u.apiKey, `sday=${day0}&eday=${day0 + 1}`);
    expect(none.body).toMatchObject({ per_machine: [], summary: { total_earn: 0 } });
    // Without a range: the current period, this month through today (day0 + 1), today's
    // earnings included; a host who started today never sees an empty yesterday.
    const monthStart = 19_997; // 2024-10-01; day0 is 2024-10-04
    const dflt = await earnings(t(), host.apiKey, '');
    expect(dflt.body).toMatchObject({ sday: monthStart, eday: day0 + 1 });
    expect(dflt.body.summary.total_earn).toBeCloseTo(first + second, 6);
    // The official CLI without -s/-e sends now − 1 day as both ends: the same current period.
    const cliDefault = t().clock.now() / DAY - 1;
    const official = await earnings(t(), host.apiKey, `sday=${cliDefault}&eday=${cliDefault}&machid=null`);
    expect(official.status).toBe(200);
    expect(official.body).toMatchObject({ sday: monthStart, eday: day0 + 1 });
    // With -s today and no -e its end is that same "yesterday": not a 400, today's report.
    const fromToday = await earnings(t(), host.apiKey, `sday=${day0 + 1}&eday=${cliDefault}`);
    expect(fromToday.status).toBe(200);
    expect(fromToday.body).toMatchObject({ sday: day0 + 1, eday: day0 + 1 });
    expect(fromToday.body.summary.total_earn).toBeCloseTo(second, 6);
  });

  it('refuses bad ranges and ids with a 400, a machine not yours with a 404, and needs billing access', async () => {
    const host = await t().user();
    const [mine] = await insertMachines(
      t().deps.db,
      [{ hostId: host.id, gpuName: 'RTX 4090', numGpus: 1 }],
      t().clock.now(),
    );
    const stranger = await t().user();
    const [theirs] = await insertMachines(
      t().deps.db,
      [{ hostId: stranger.id, gpuName: 'RTX 4090', numGpus: 1 }],
      t().clock.now(),
    );
    for (const q of [
      'sday=x&eday=20000',
      'sday=-1&eday=20000',
      'sday=20001&eday=20000',
      'sday=20000&eday=20366',
      'sday=20000&eday=20000&machid=abc',
      'sday=20000&eday=20000&machid=0',
    ]) {
      const r = await earnings(t(), host.apiKey, q);
      expect(r.status, q).toBe(400);
      expect(r.body.error).toBe('bad_request');
      expect(typeof r.body.msg).toBe('string');
    }
    expect((await earnings(t(), host.apiKey, 'sday=20000&eday=20365')).status).toBe(200);
    expect((await earnings(t(), host.apiKey, `sday=20000&eday=20000&machid=${mine}`)).status).toBe(200);
    const notMine = await earnings(t(), host.apiKey, `sday=20000&eday=20000&machid=${theirs}`);
    expect(notMine.status).toBe(404);
    expect(notMine.body.error).toBe('not_found');
    expect((await earnings(t(), null, 'sday=20000&eday=20000')).status).toBe(401);
    const scoped = await scopedKey(t(), host.apiKey, { machines: 'write' }, 'machines only');
    expect((await earnings(t(), scoped, 'sday=20000&eday=20000')).status).toBe(403);
  });
});
