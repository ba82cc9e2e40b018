// Host payouts over a simulated month on a real database: weekly payouts of each host's earnings
// less the platform fee, a host under the minimum rolling over, a failed payout going into the
// next run, concurrent runs making each payout once; and the ledger balances to the micro-dollar:
// what renters paid = the payouts' net + their cuts + what is not paid out yet. A renter's volume
// on a host's machine is charged hourly and is that host's earning, in the same balance.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { renter, runningInstance } from '../../../../test/helpers/market.js';
import { insertMachines } from '../machines/machines.service.js';
import { runMeter } from './billing.service.js';
import {
  markPayout,
  PAYOUT_SETTLE_MS,
  payoutCutoff,
  payoutsCsv,
  platformCut,
  runPayouts,
  setPayoutDestination,
} from './billing.payouts.js';
import { hostGross } from './billing.payouts.repo.js';
import { runVolumeMeter } from '../volumes/volumes.billing.js';

const DAY = 86_400_000;
// Day 20199 since the epoch is a Monday; start an hour into it.
const T0 = 20_199 * DAY + 3_600_000;

const sum = (xs: number[]) => xs.reduce((s, x) => s + x, 0);
const payoutsOf = (t: TestApp) => t.deps.db.selectFrom('payouts').selectAll().orderBy('id').execute();
const chargesUpTo = async (t: TestApp, to: number) =>
  Number(
    (
      await t.deps.db
        .selectFrom('billing_ledger')
        .select((eb) => eb.fn.sum<number>('amount_micros').as('s'))
        .where('kind', 'in', ['compute', 'disk', 'volume'])
        .where('period_end', '<=', to)
        .executeTakeFirstOrThrow()
    ).s ?? 0,
  );

describeEachDb('host payouts', (dialect) => {
  const t = useTestApp(dialect, {
    OPENRIG_PLATFORM_FEE_PERCENT: '12.5',
    OPENRIG_PAYOUT_MIN_USD: '50',
  });

  it('periods end at Monday 00:00 UTC, weekly by default; the fee rounds to the micro-dollar', () => {
    expect(payoutCutoff(T0, 7)).toBe(20_199 * DAY);
    expect(payoutCutoff(20_199 * DAY - 1, 7)).toBe(20_192 * DAY);
    expect(new Date(payoutCutoff(T0 + 5 * DAY, 7)).getUTCDay()).toBe(1);
    expect(payoutCutoff(T0 + DAY, 1)).toBe(20_200 * DAY);
    // A fraction of a day: hourly periods, and 10-second ones, still counted from Monday 00:00 UTC.
    expect(payoutCutoff(T0 + 59 * 60_000, 1 / 24)).toBe(T0);
    expect(payoutCutoff(T0 + 60 * 60_000, 1 / 24)).toBe(T0 + 3_600_000);
    expect(payoutCutoff(T0 + 12_345, 10 / 86_400)).toBe(T0 + 10_000);
    expect(platformCut(1_000_003, 12.5)).toBe(125_000);
    expect(platformCut(1_000_004, 12.5)).toBe(125_001);
  });

  it('a simulated month: weekly payouts reconcile exactly with what renters paid', async () => {
    t().clock.set(T0);
    const hostA = await t().user();
    const hostB = await t().user();
    await setPayoutDestination(t().deps, hostA.id, 'paypal_manual', 'a@hosts.example');
    await setPayoutDestination(t().deps, hostB.id, 'internal', 'Physics dept, cost centre 4711');
    const [a1, a2] = await insertMachines(
      t().deps.db,
      [0, 1].map(() => ({
        hostId: hostA.id,
        gpuName: 'RTX 4090',
        numGpus: 1,
        priceGpu: 0.7,
        priceDisk: 0.2,
      })),
      t().clock.now(),
    );
    // Host B earns about 0.06 $/h: under the 50 $ minimum all month, so it rolls over.
    const [b1] = await insertMachines(
      t().deps.db,
      [{ hostId: hostB.id, gpuName: 'RTX 3090', numGpus: 1, priceGpu: 0.05, priceDisk: 0.1 }],
      t().clock.now(),
    );
    const r1 = await renter(t(), { balanceUsd: 5000 });
    const r2 = await renter(t(), { balanceUsd: 5000 });
    const r3 = await renter(t(), { balanceUsd: 5000 });
    let i1 = await runningInstance(t(), r1.apiKey, a1!);
    const i2 = await runningInstance(t(), r2.apiKey, a2!);
    const i3 = await runningInstance(t(), r3.apiKey, b1!);
    // A prepaid instance: its charges are paid from the deposit at a discount.
    expect(
      (await t().request('PUT', `/api/v0/instances/prepay/${i2}/`, { key: r2.apiKey, body: { amount: 600 } }))
        .status,
    ).toBe(200);

    // Host A lists disk for volumes on a1; renter 3 keeps a 50 GB volume there all month.
    const listed = await t().request('POST', '/api/v0/volumes/', {
      key: hostA.apiKey,
      body: { size: 200, machine: a1, price_disk: 0.5 },
    });
    expect(listed.status, listed.raw).toBe(200);
    const ask = await t()
      .deps.db.selectFrom('volume_asks')
      .select('id')
      .where('machine_id', '=', a1!)
      .executeTakeFirstOrThrow();
    const vol = await t().request('PUT', '/api/v0/volumes/', {
      key: r3.apiKey,
      body: { size: 50, id: Number(ask.id), name: 'data' },
    });
    expect(vol.status, vol.raw).toBe(200);

    const failed: number[] = [];
    for (let hour = 0; hour < 31 * 24; hour += 6) {
      t().clock.advance(6 * 3_600_000);
      await runMeter(t().deps);
      await runVolumeMeter(t().deps);
      const day = hour / 24;
      if (hour === 10 * 24)
        expect(
          (
            await t().request('PUT', `/api/v0/instances/${i2}/`, {
              key: r2.apiKey,
              body: { state: 'stopped' },
            })
          ).status,
        ).toBe(200);
      if (hour === 15 * 24)
        expect(
          (
            await t().request('PUT', `/api/v0/instances/${i2}/`, {
              key: r2.apiKey,
              body: { state: 'running' },
            })
          ).status,
        ).toBe(200);
      if (hour === 20 * 24) {
        expect(
          (await t().request('DELETE', `/api/v0/instances/${i1}/`, { key: r1.apiKey, body: {} })).status,
        ).toBe(200);
        i1 = await runningInstance(t(), r1.apiKey, a1!);
      }
      if (Number.isInteger(day)) {
        // Two processes' runs at once make each payout once.
        const made = (await Promise.all([runPayouts(t().deps), runPayouts(t().deps)])).flat();
        // The second week's payout fails; the next run pays its earnings again.
        for (const p of made)
          if (failed.length === 0 && Number(p.period_end) === 20_213 * DAY) {
            await markPayout(t().deps, Number(p.id), 'failed', 'PayPal returned it');
            failed.push(Number(p.id));
          }
      }
    }
    const cutoff = payoutCutoff(t().clock.now(), 7);
    const all = await payoutsOf(t());
    const live = all.filter((p) => p.status !== 'failed');
    // Host A: weeks ending on four Mondays; the failed one was made again by the next run.
    expect(live.map((p) => [Number(p.host_id), Number(p.period_end) / DAY])).toEqual([
      [hostA.id, 20_206],
      [hostA.id, 20_213],
      [hostA.id, 20_220],
      [hostA.id, 20_227],
    ]);
    const again = all.find((p) => p.status === 'failed')!;
    expect([live[1]!.period_start, live[1]!.gross_micros]).toEqual([again.period_start, again.gross_micros]);
    expect(all.filter((p) => p.status === 'failed').map((p) => Number(p.id))).toEqual(failed);
    expect(live[1]!.period_start).toBe(live[0]!.period_end);
    expect(live[0]!.period_start).toBe(0);
    expect(cutoff).toBe(20_227 * DAY);
    for (const p of all) {
      expect(Number(p.cut_micros)).toBe(platformCut(Number(p.gross_micros), 12.5));
      expect(Number(p.net_micros) + Number(p.cut_micros)).toBe(Number(p.gross_micros));
      expect(p).toMatchObject({ cut_percent: 12.5, method: 'paypal_manual', destination: 'a@hosts.example' });
    }
    // Each payout is exactly its host's charges over its period.
    for (const p of live)
      expect(Number(p.gross_micros)).toBe(
        await hostGross(t().deps.db, Number(p.host_id), Number(p.period_start), Number(p.period_end)),
      );
    // Host B rolled over: no payout, all its earnings still owed.
    const owedB = await hostGross(t().deps.db, hostB.id, 0, cutoff);
    expect(owedB).toBeGreaterThan(0);
    expect(owedB).toBeLessThan(50_000_000);
    // The volume's charges are in host A's payouts: 0.5 $/GB-month × 50 GB over 720 h a month.
    const volumeCharges = await t()
      .deps.db.selectFrom('billing_ledger')
      .select((eb) => eb.fn.sum<number>('amount_micros').as('s'))
      .where('kind', '=', 'volume')
      .where('volume_id', 'is not', null)
      .where('period_end', '<=', cutoff)
      .executeTakeFirstOrThrow();
    expect(Number(volumeCharges.s)).toBeGreaterThan(0);
    const paidOutA = sum(
      live.filter((p) => Number(p.host_id) === hostA.id).map((p) => Number(p.gross_micros)),
    );
    const instancesA = Number(
      (
        await t()
          .deps.db.selectFrom('billing_ledger as l')
          .innerJoin('instances as i', 'i.id', 'l.instance_id')
          .innerJoin('machines as m', 'm.id', 'i.machine_id')
          .select((eb) => eb.fn.sum<number>('l.amount_micros').as('s'))
          .where('m.host_id', '=', hostA.id)
          .where('l.kind', 'in', ['compute', 'disk'])
          .where('l.period_end', '<=', cutoff)
          .executeTakeFirstOrThrow()
      ).s,
    );
    expect(paidOutA).toBe(instancesA + Number(volumeCharges.s));
    // The ledger balances: renters' charges up to the last period's end = net + cuts + still owed.
    const charged = await chargesUpTo(t(), cutoff);
    const net = sum(live.map((p) => Number(p.net_micros)));
    const cuts = sum(live.map((p) => Number(p.cut_micros)));
    expect(charged).toBe(net + cuts + owedB);
    // And what renters paid is what left their balances and deposits.
    const balances = await t()
      .deps.db.selectFrom('users')
      .select(['id', 'balance_micros'])
      .where('id', 'in', [r1.id, r2.id, r3.id])
      .execute();
    const spent = sum(balances.map((b) => 5_000_000_000 - Number(b.balance_micros)));
    const deposit = await t()
      .deps.db.selectFrom('instance_deposits')
      .selectAll()
      .where('instance_id', '=', i2)
      .executeTakeFirstOrThrow();
    const allCharges = await chargesUpTo(t(), Number.MAX_SAFE_INTEGER);
    // The balances paid the prepaid deposit and every charge the deposit did not.
    expect(spent).toBe(allCharges - Number(deposit.drawn_micros) + Number(deposit.prepaid_micros));
    expect(i3).toBeGreaterThan(0);

    // Paying: a pending payout becomes paid once; the CSV lists what is pending.
    const csv = await payoutsCsv(t().deps.db, { status: 'pending' });
    expect(csv.split('\n')[0]).toBe(
      'id,host_id,status,method,destination,period_start,period_end,gross,cut_percent,cut_amount,amount,note',
    );
    expect(csv.trim().split('\n').length).toBe(1 + live.length);
    const paid = await markPayout(t().deps, Number(live[0]!.id), 'paid', 'PP-1234');
    expect(paid).toMatchObject({ status: 'paid', note: 'PP-1234' });
    await expect(markPayout(t().deps, Number(live[0]!.id), 'paid')).rejects.toMatchObject({ status: 409 });
    // The host heard of each payout made and of the one paid; no one else did.
    const events = await t()
      .deps.db.selectFrom('events')
      .select(['user_id', 'type'])
      .where('type', 'like', 'payout.%')
      .execute();
    expect(events.filter((e) => e.type === 'payout.created').length).toBe(all.length);
    expect(events.filter((e) => e.type === 'payout.paid').length).toBe(1);
    expect(new Set(events.map((e) => Number(e.user_id)))).toEqual(new Set([hostA.id]));
    // An earlier payout cannot fail once a later one exists (its earnings would be lost).
    await expect(markPayout(t().deps, Number(live[1]!.id), 'failed')).rejects.toMatchObject({ status: 409 });
  });

  it('a run closes a period only once its charges have had time to land', async () => {
    t().clock.set(T0);
    const host = await t().user();
    const [m] = await insertMachines(
      t().deps.db,
      [{ hostId: host.id, gpuName: 'RTX 4090', numGpus: 1, priceGpu: 100 }],
      t().clock.now(),
    );
    const r = await renter(t(), { balanceUsd: 5000 });
    await runningInstance(t(), r.apiKey, m!);
    // Charged up to the period's end (Tuesday 00:00 UTC with daily periods): a run a moment after
    // it leaves the period open; one PAYOUT_SETTLE_MS later closes it.
    const end = 20_200 * DAY;
    t().clock.set(end);
    await runMeter(t().deps);
    const deps = {
      ...t().deps,
      config: { ...t().deps.config, billing: { ...t().deps.config.billing, payoutPeriodDays: 1 } },
    };
    t().clock.set(end + PAYOUT_SETTLE_MS - 1);
    expect(await runPayouts(deps)).toEqual([]);
    t().clock.set(end + PAYOUT_SETTLE_MS);
    const made = await runPayouts(deps);
    expect(made.map((p) => [Number(p.host_id), Number(p.period_end)])).toEqual([[host.id, end]]);
    expect(Number(made[0]!.gross_micros)).toBe(await hostGross(t().deps.db, host.id, 0, end));
  });
});
