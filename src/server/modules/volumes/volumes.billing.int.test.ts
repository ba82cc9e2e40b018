// Volume charges: storage_cost × GB per month (720 hours), charged to the owner every hour from
// creation to deletion, with or without an instance mounting it, each hour a ledger row of kind
// `volume`; settled up to the moment at deletion; a second meter charges no hour twice. An owner
// whose balance runs out is e-mailed once and the volume is kept.
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { cliCreateBody } from '../../../../test/compat/official-cli.js';
import { agentMachine, renter } from '../../../../test/helpers/market.js';
import { runVolumeMeter } from './volumes.billing.js';
import { chargeMicros, diskDph } from '../billing/billing.meter.js';

const HOUR = 3_600_000;

describeEachDb('volume billing', (dialect) => {
  const t = useTestApp(dialect);
  let host: { id: number; apiKey: string };
  let machine: number;
  let askId: number;

  beforeAll(async () => {
    host = await t().user();
    const reg = await t().request('POST', '/api/agent/v1/register', {
      key: host.apiKey,
      body: { agent_uid: 'agent-volbill-0001', machines: [agentMachine(0)], price_gpu: 0.4 },
    });
    machine = reg.body.machines[0].machine_id;
    const l = await t().request('POST', '/api/v0/volumes/', {
      key: host.apiKey,
      body: { size: 400, machine, price_disk: 0.36 },
    });
    expect(l.status, l.raw).toBe(200);
    askId = l.body.volume_asks[0].id;
  });

  const ledger = (userId: number) =>
    t()
      .deps.db.selectFrom('billing_ledger')
      .select(['kind', 'amount_micros', 'period_start', 'period_end'])
      .where('user_id', '=', userId)
      .where('kind', '=', 'volume')
      .orderBy('id')
      .execute();
  const balance = async (userId: number) =>
    Number(
      (
        await t()
          .deps.db.selectFrom('users')
          .select('balance_micros')
          .where('id', '=', userId)
          .executeTakeFirstOrThrow()
      ).balance_micros,
    );
  const meter = () => runVolumeMeter(t().deps);

  it('charges every hour, with and without an instance mounting it, and at deletion', async () => {
    const u = await renter(t());
    const before = await balance(u.id);
    const start = t().clock.now();
    const c = await t().request('PUT', '/api/v0/volumes/', { key: u.apiKey, body: { size: 100, id: askId } });
    expect(c.status, c.raw).toBe(200);
    const vol = c.body.volume_id as number;
    // $0.36/GB-month × 100 GB = $36 a month = $0.05 an hour.
    const hourly = chargeMicros(diskDph(0.36, 100), start, start + HOUR);
    expect(hourly).toBe(50_000);

    // Less than an hour: nothing yet.
    t().clock.advance(HOUR - 1000);
    await meter();
    expect(await ledger(u.id)).toEqual([]);
    t().clock.advance(1000);
    expect((await meter()).settled).toBe(1);
    // Two meters at once (two serve processes): the hour is charged once.
    t().clock.advance(HOUR);
    await Promise.all([meter(), meter()]);
    expect((await ledger(u.id)).map((r) => Number(r.amount_micros))).toEqual([hourly, hourly]);

    // Mounted by an instance: still charged the same, besides the instance.
    const r = await t().request('PUT', `/api/v0/asks/${machine}/`, {
      key: u.apiKey,
      body: cliCreateBody({ volume_info: { mount_path: '/data', create_new: false, volume_id: vol } }),
    });
    expect(r.status, r.raw).toBe(200);
    t().clock.advance(HOUR);
    await meter();
    expect((await ledger(u.id)).length).toBe(3);
    expect(
      (await t().request('DELETE', `/api/v0/instances/${r.body.new_contract}/`, { key: u.apiKey, body: {} }))
        .status,
    ).toBe(200);

    // Deleted half an hour later: charged up to the moment, then never again.
    t().clock.advance(HOUR / 2);
    expect((await t().request('DELETE', `/api/v0/volumes/?id=${vol}`, { key: u.apiKey })).status).toBe(200);
    t().clock.advance(2 * HOUR);
    await meter();
    const rows = await ledger(u.id);
    expect(rows.length).toBe(4);
    expect(Number(rows[3]!.amount_micros)).toBe(hourly / 2);
    expect(Number(rows[3]!.period_end)).toBe(start + 3.5 * HOUR);
    const total = rows.reduce((s, x) => s + Number(x.amount_micros), 0);
    expect(total).toBe(3.5 * hourly);
    // The account's charges page lists them, kind volume.
    const page = await t().request('GET', '/api/v0/billing/charges/?limit=100', { key: u.apiKey });
    expect(page.status, page.raw).toBe(200);
    const vols = page.body.charges.filter((x: { kind: string }) => x.kind === 'volume');
    expect(vols.map((x: { amount_micros: number }) => x.amount_micros).sort()).toEqual(
      rows.map((x) => Number(x.amount_micros)).sort(),
    );
    // show invoices-v1 -c (GET /charges/): the volume is a contract of its own, type volume,
    // its storage the one item.
    const day = (ms: number) => Math.floor(ms / 1000);
    const q = (filters: object) =>
      t().request('GET', `/api/v0/charges/?select_filters=${encodeURIComponent(JSON.stringify(filters))}`, {
        key: u.apiKey,
      });
    const range = { day: { gte: day(start) - 86_400, lte: day(t().clock.now()) + 86_400 } };
    const all = await q(range);
    expect(all.status, all.raw).toBe(200);
    const line = all.body.results.find((x: { type: string }) => x.type === 'volume');
    expect(line).toMatchObject({
      type: 'volume',
      source: `volume-${vol}`,
      amount: total / 1e6,
      items: [{ type: 'storage', amount: total / 1e6 }],
    });
    expect(line.description).toContain(`Volume ${vol}`);
    expect(line.items[0].description).toContain('100 GB at $0.36/GB/month');
    expect(line.items[0].description).toContain('3.500 hours');
    const onlyVolumes = await q({ ...range, type: { in: ['volume'] } });
    expect(onlyVolumes.body.results.map((x: { source: string }) => x.source)).toEqual([`volume-${vol}`]);
    expect(onlyVolumes.body.total).toBe(1);
    // Periods follow one another without gap or overlap, from creation to deletion.
    expect(Number(rows[0]!.period_start)).toBe(start);
    for (let i = 1; i < rows.length; i++) expect(rows[i]!.period_start).toBe(rows[i - 1]!.period_end);
    // The volume's charges left the balance (the instance's too: only the volume's are counted here).
    const instanceCharges = await t()
      .deps.db.selectFrom('billing_ledger')
      .select((eb) => eb.fn.sum<number>('amount_micros').as('s'))
      .where('user_id', '=', u.id)
      .where('kind', 'in', ['compute', 'disk'])
      .executeTakeFirstOrThrow();
    expect(await balance(u.id)).toBe(before - total - Number(instanceCharges.s ?? 0));
  });

  it('keeps the volume of an owner out of credit, e-mails them once, and keeps charging', async () => {
    const u = await renter(t(), { balanceUsd: 0.06 });
    const c = await t().request('PUT', '/api/v0/volumes/', { key: u.apiKey, body: { size: 100, id: askId } });
    expect(c.status, c.raw).toBe(200);
    const vol = c.body.volume_id as number;
    t().clock.advance(HOUR);
    expect((await meter()).unpaid).toEqual([]);
    t().clock.advance(HOUR);
    // $0.06 less two hours at $0.05: the balance is below zero.
    expect((await meter()).unpaid).toEqual([vol]);
    expect(await balance(u.id)).toBe(60_000 - 100_000);
    t().clock.advance(HOUR);
    expect((await meter()).unpaid).toEqual([]);
    const mails = await t()
      .deps.db.selectFrom('email_outbox')
      .select(['to_addr', 'subject', 'text_body'])
      .where('idempotency_key', 'like', `volume:unpaid:${vol}:%`)
      .execute();
    expect(mails.length).toBe(1);
    expect(mails[0]!.subject).toContain(`Volume ${vol}`);
    expect(mails[0]!.text_body).toContain('14 days');
    const shown = await t().request('GET', '/api/v0/volumes?owner=me', { key: u.apiKey });
    expect(shown.body.volumes.map((v: { id: number }) => v.id)).toEqual([vol]);
    expect((await ledger(u.id)).length).toBe(3);
  });
});
