// An instance's usage history: the agent's sync writes one sample a minute (the first report of
// the minute, a field left out taking what the server holds), the renter reads them oldest first
// (a stranger gets 404), two processes offering the same minute keep one row, and the job rolls
// minutes older than a day into hourly rows (mean utilisation, highest disk) and prunes old hours.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { agentMachine, renter } from '../../../../test/helpers/market.js';
import { UsageSampleMemory, recordUsageSamples, HOURS_KEPT_MS } from './usage-history.service.js';
import { usageHistoryPass, USAGE_HISTORY_PERIOD_MS } from '../../jobs/usage-history.js';

const P = '/api/agent/v1';
const GB = 1e9;
const MIN = 60_000;
const HOUR = 3_600_000;

describeEachDb('usage history', (dialect) => {
  const t = useTestApp(dialect);
  let n = 0;

  async function setup() {
    const uid = `agent-history-${String(++n).padStart(4, '0')}`;
    const host = await t().user();
    const reg = await t().request('POST', `${P}/register`, {
      key: host.apiKey,
      body: { agent_uid: uid, machines: [agentMachine(0)], price_gpu: 0.4 },
    });
    expect(reg.status).toBe(200);
    const mid = reg.body.machines[0].machine_id as number;
    const r = await renter(t());
    const created = await t().request('PUT', `/api/v0/asks/${mid}/`, {
      key: r.apiKey,
      body: { image: 'ubuntu', disk: 20 },
    });
    expect(created.status, created.raw).toBe(200);
    const id = created.body.new_contract as number;
    const sync = async (instances: unknown[]) => {
      const s = await t().request('POST', `${P}/sync`, {
        key: host.apiKey,
        body: { agent_uid: uid, machine_ids: [mid], instances },
      });
      expect(s.status, s.raw).toBe(200);
    };
    const history = async (key = r.apiKey, path = `/api/v0/instances/${id}/usage-history/`) =>
      t().request('GET', path, { key });
    return { id, sync, history, renterKey: r.apiKey };
  }

  const rowsOf = (id: number) =>
    t()
      .deps.db.selectFrom('usage_samples')
      .selectAll()
      .where('instance_id', '=', id)
      .orderBy('span_s')
      .orderBy('t')
      .execute();

  it('writes the first report of each minute, a left-out field taking what the server holds', async () => {
    const { id, sync, history } = await setup();
    const m0 = Math.ceil(t().clock.now() / MIN) * MIN + 5 * MIN;
    t().clock.set(m0 + 1000);
    await sync([{ id, state: 'running', ssh_port: 40022, disk_usage_bytes: 1 * GB, gpu_util: 10 }]);
    t().clock.set(m0 + 40_000);
    await sync([{ id, state: 'running', ssh_port: 40022, disk_usage_bytes: 3 * GB, gpu_util: 50 }]);
    t().clock.set(m0 + MIN + 2000);
    await sync([{ id, state: 'running', ssh_port: 40022, gpu_util: 70 }]);
    const h = await history();
    expect(h.status, h.raw).toBe(200);
    expect(h.body).toEqual({
      success: true,
      instance_id: id,
      samples: [
        { t: m0 / 1000, span_s: 60, gpu_util: 10, gpu_mem_bytes: null, disk_usage_bytes: 1 * GB },
        // The disk left out: the 3 GB the second report of the previous minute stored.
        { t: (m0 + MIN) / 1000, span_s: 60, gpu_util: 70, gpu_mem_bytes: null, disk_usage_bytes: 3 * GB },
      ],
    });
  });

  it('answers 404 to another account, 400 to a bad id, and an empty list before any report', async () => {
    const { id, history } = await setup();
    expect((await history()).body.samples).toEqual([]);
    const stranger = await t().user();
    const other = await history(stranger.apiKey);
    expect(other.status).toBe(404);
    expect(other.body.error).toBe('not_found');
    const bad = await history(undefined, '/api/v0/instances/abc/usage-history/');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('bad_request');
    expect((await history(undefined, `/api/v0/instances/${id + 1000}/usage-history/`)).status).toBe(404);
  });

  it('keeps one row when two processes offer the same minute at once', async () => {
    const { id } = await setup();
    const now = Math.floor(t().clock.now() / MIN) * MIN + 7 * MIN + 3000;
    const held = new Map([[id, { destroyed_at: null, gpu_util: null, disk_usage_bytes: null }]]);
    const proc = (gpu: number) =>
      recordUsageSamples(
        { db: t().deps.db, log: t().deps.log, usageSamples: new UsageSampleMemory() },
        now,
        [{ id, gpu_util: gpu, disk_usage_bytes: GB }],
        held,
      );
    await Promise.all([proc(1), proc(2), proc(3)]);
    const rows = await rowsOf(id);
    expect(rows).toHaveLength(1);
    expect([1, 2, 3]).toContain(Number(rows[0]!.gpu_util));
  });

  it('rolls minutes older than a day into hourly means and highest disk, once per turn; prunes hours past their keep', async () => {
    const { id } = await setup();
    const base = Math.floor(t().clock.now() / HOUR) * HOUR + 10 * HOUR;
    const db = t().deps.db;
    const minute = (at: number, gpu: number | null, disk: number | null) => ({
      instance_id: id,
      span_s: 60,
      t: at,
      gpu_util: gpu,
      gpu_mem_bytes: null,
      disk_usage_bytes: disk,
    });
    await db
      .insertInto('usage_samples')
      .values([
        // Hour A: three minutes, one without a GPU figure (left out of the mean).
        minute(base, 10, 1 * GB),
        minute(base + 5 * MIN, 30, 4 * GB),
        minute(base + 59 * MIN, null, 2 * GB),
        // Hour B: one minute.
        minute(base + HOUR + 30 * MIN, 80, 5 * GB),
        // Within the last day when the job runs: kept as it is.
        minute(base + 30 * HOUR, 55, 6 * GB),
        // An hourly row past its keep.
        { ...minute(base - HOURS_KEPT_MS - HOUR, 5, GB), span_s: 3600 },
      ])
      .execute();
    t().clock.set(base + 26 * HOUR + 10 * MIN);
    const r = await usageHistoryPass(t().deps);
    // Four of this instance's minutes (the earlier tests' minutes, in the same database, too).
    expect(r!.rolled).toBeGreaterThanOrEqual(4);
    expect(r!.pruned).toBe(1);
    const rows = (await rowsOf(id)).map((x) => ({
      span_s: Number(x.span_s),
      t: Number(x.t),
      gpu_util: x.gpu_util === null ? null : Number(x.gpu_util),
      disk: x.disk_usage_bytes === null ? null : Number(x.disk_usage_bytes),
    }));
    expect(rows).toEqual([
      { span_s: 60, t: base + 30 * HOUR, gpu_util: 55, disk: 6 * GB },
      { span_s: 3600, t: base, gpu_util: 20, disk: 4 * GB },
      { span_s: 3600, t: base + HOUR, gpu_util: 80, disk: 5 * GB },
    ]);
    // The turn is taken for an hour: a second pass in it does nothing.
    expect(await usageHistoryPass(t().deps)).toBeNull();
    t().clock.advance(USAGE_HISTORY_PERIOD_MS);
    expect(await usageHistoryPass(t().deps)).toEqual({ rolled: 0, pruned: 0 });
  });
});
