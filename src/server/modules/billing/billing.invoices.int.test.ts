// The billing history of `show invoices` (GET /users/me/invoices) against a real database, over a
// ledger written by the real meter (a row per instance and 10 s period) and by credits: charges
// summed per instance, UTC day and kind exactly as the ledger has them, credits one item each,
// only the caller's, ranges and bad values checked; and the label look-up of --instance_label.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { renter, runningInstance } from '../../../../test/helpers/market.js';
import { insertMachines } from '../machines/machines.service.js';
import { addCredit, runMeter } from './billing.service.js';

const DAY = 86_400_000;
const DAY0 = 20_000;
/** 23:50 UTC on DAY0: the instances run across midnight. */
const START = DAY0 * DAY + 23 * 3_600_000 + 50 * 60_000;

const invoices = (t: TestApp, key: string | null, query: string) =>
  t.request('GET', `/api/v0/users/me/invoices?owner=me&${query}`, { key });

/** The ledger's own sums per (instance, UTC day of period end, kind): what the items must show. */
async function ledgerSums(t: TestApp, userId: number) {
  const rows = await t.deps.db
    .selectFrom('billing_ledger')
    .selectAll()
    .where('user_id', '=', userId)
    .where('kind', '<>', 'credit')
    .execute();
  const sums = new Map<string, { micros: number; ms: number; rows: number }>();
  for (const r of rows) {
    const k = `${r.instance_id}/${Math.floor((r.period_end - 1) / DAY)}/${r.kind}`;
    const s = sums.get(k) ?? { micros: 0, ms: 0, rows: 0 };
    s.micros += r.amount_micros;
    s.ms += r.period_end - r.period_start;
    s.rows += 1;
    sums.set(k, s);
  }
  return sums;
}

describeEachDb('show invoices', (dialect) => {
  const t = useTestApp(dialect);

  it('charges per instance, UTC day and kind from the meter’s 10 s rows; credits one item each; only the caller’s', async () => {
    t().clock.set(START);
    const host = await t().user();
    const spec = { gpuName: 'RTX 4090', numGpus: 1, priceGpu: 3.6, priceDisk: 0.1 };
    const [a, b, c] = await insertMachines(
      t().deps.db,
      [
        { hostId: host.id, ...spec },
        { hostId: host.id, ...spec },
        { hostId: host.id, ...spec },
      ],
      t().clock.now(),
    );
    const u = await renter(t(), { balanceUsd: 1000 });
    const other = await renter(t(), { balanceUsd: 50 });
    const i1 = await runningInstance(t(), u.apiKey, a!, { label: 'train' });
    const i2 = await runningInstance(t(), u.apiKey, b!);
    const theirs = await runningInstance(t(), other.apiKey, c!);
    // The meter every 10 s for 20 minutes: 10 minutes before midnight, 10 after.
    for (let s = 0; s < 120; s++) {
      t().clock.advance(10_000);
      await runMeter(t().deps);
      if (s === 89) await addCredit(t().deps, u.id, 25.5); // 00:05:00
    }
    const now = t().clock.now();
    const sums = await ledgerSums(t(), u.id);
    // The meter wrote a row per instance, kind and 10 s period.
    expect(sums.get(`${i1}/${DAY0}/compute`)!.rows).toBe(60);

    const r = await invoices(
      t(),
      u.apiKey,
      `sdate=${START / 1000 - 60}&edate=${now / 1000}&inc_charges=true`,
    );
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    const items = r.body.invoices as Record<string, any>[];
    const charges = items.filter((x) => x.type === 'charge');
    // Two instances × two days × two kinds, none of the other renter's.
    expect(charges).toHaveLength(8);
    expect(charges.every((x) => x.instance_id === i1 || x.instance_id === i2)).toBe(true);
    expect(items.some((x) => x.instance_id === theirs)).toBe(false);
    for (const x of charges) {
      const day = Math.floor((x.timestamp * 1000 - 1) / DAY);
      const s = sums.get(`${x.instance_id}/${day}/${x.kind}`)!;
      expect(x.amount).toBe(s.micros / 1e6);
      expect(x.quantity).toBe(Math.round(s.ms / 3.6) / 1e6);
      expect(x.rate).toBe(x.kind === 'compute' ? 3.6 : 0.01);
      expect(x.description).toBe(
        x.kind === 'compute'
          ? `Instance ${x.instance_id} compute, ${new Date(day * DAY).toISOString().slice(0, 10)} (UTC)`
          : `Instance ${x.instance_id} disk (72 GB), ${new Date(day * DAY).toISOString().slice(0, 10)} (UTC)`,
      );
    }
    // Ten minutes of compute at 3.6 $/h on each side of midnight: $0.60, 1/6 hour.
    const i1day0 = charges.find(
      (x) => x.instance_id === i1 && x.kind === 'compute' && x.end <= DAY0 * 86400 + 86400,
    )!;
    expect(i1day0).toMatchObject({ amount: 0.6, quantity: 0.166667, timestamp: (DAY0 + 1) * 86400 });
    // Credits: the starting balance (when the account was made) and the top-up, one item each.
    const payments = items.filter((x) => x.type === 'payment');
    expect(payments.map((x) => [x.amount, x.timestamp, x.service])).toEqual([
      [1000, START / 1000, 'operator'],
      [25.5, (START + 900_000) / 1000, 'operator'],
    ]);
    expect(payments.every((x) => Number.isInteger(x.id) && x.instance_id === null)).toBe(true);
    // Oldest first.
    const times = items.map((x) => x.timestamp);
    expect(times).toEqual([...times].sort((p, q) => p - q));
    // Exact totals: the ledger's sums, not a float sum of the items.
    const charged = [...sums.values()].reduce((s, x) => s + x.micros, 0);
    expect(r.body.totals).toEqual({ charges: charged / 1e6, credits: 1025.5 });
    // Current: today's (UTC day DAY0 + 1) charges, and the balance.
    const today = [...sums.entries()]
      .filter(([k]) => k.split('/')[1] === String(DAY0 + 1))
      .reduce((s, [, x]) => s + x.micros, 0);
    const bal = await t().request('GET', '/api/v0/billing/', { key: u.apiKey });
    expect(r.body.current).toEqual({
      charges: today / 1e6,
      service_fee: 0,
      total: today / 1e6,
      credit: bal.body.balance,
    });
    expect(bal.body.balance).toBe((1_025_500_000 - charged) / 1e6);

    // inc_charges=false: the credits only.
    const credits = await invoices(
      t(),
      u.apiKey,
      `sdate=${START / 1000 - 60}&edate=${now / 1000}&inc_charges=false`,
    );
    expect(credits.body.invoices.map((x: { type: string }) => x.type)).toEqual(['payment', 'payment']);
    expect(credits.body.totals).toEqual({ charges: 0, credits: 1025.5 });
    // A range of the new day only (a fraction of a second allowed): its charges and the top-up.
    const day1 = await invoices(t(), u.apiKey, `sdate=${(DAY0 + 1) * 86400 + 0.25}&edate=${now / 1000}`);
    expect(day1.status).toBe(200);
    expect(day1.body.invoices.filter((x: { type: string }) => x.type === 'charge')).toHaveLength(4);
    expect(day1.body.invoices.filter((x: { type: string }) => x.type === 'payment')).toHaveLength(1);
    // Without dates: the 30 days up to now.
    const dflt = await invoices(t(), u.apiKey, '');
    expect(dflt.body.edate).toBe(now / 1000);
    expect(dflt.body.sdate).toBe(now / 1000 - 30 * 86400);
    expect(dflt.body.invoices).toHaveLength(10);
    // The other renter sees only their own.
    const mine = await invoices(t(), other.apiKey, `sdate=${START / 1000 - 60}&edate=${now / 1000}`);
    expect(mine.body.invoices.filter((x: { type: string }) => x.type === 'charge')).toHaveLength(4);
    expect(mine.body.invoices.every((x: { instance_id: number | null }) => x.instance_id !== i1)).toBe(true);
    expect(mine.body.totals.credits).toBe(50);

    // --instance_label: which of these instances carry the label (others' ids never answered).
    const f = await t().request('POST', '/api/v0/contracts/fetch/', {
      key: u.apiKey,
      body: { label: 'train', contract_ids: [i1, i2, theirs, i1] },
    });
    expect(f.status).toBe(200);
    expect(f.body.contracts).toEqual([{ id: i1, label: 'train' }]);
    // Destroyed instances keep their label: their charges are history too.
    expect((await t().request('DELETE', `/api/v0/instances/${i1}/`, { key: u.apiKey })).status).toBe(200);
    const after = await t().request('POST', '/api/v0/contracts/fetch/', {
      key: u.apiKey,
      body: { label: 'train', contract_ids: [i1] },
    });
    expect(after.body.contracts).toEqual([{ id: i1, label: 'train' }]);
    const theirLabel = await t().request('POST', '/api/v0/contracts/fetch/', {
      key: other.apiKey,
      body: { label: '', contract_ids: [i1, i2, theirs] },
    });
    expect(theirLabel.body.contracts).toEqual([{ id: theirs, label: '' }]);
  });

  it('refuses bad dates, ranges and flags with a 400 naming them; needs a key with billing read', async () => {
    const u = await t().user();
    for (const [q, field] of [
      ['sdate=x&edate=1767225600', 'sdate'],
      ['sdate=-1&edate=1767225600', 'sdate'],
      ['sdate=1767225600&edate=1e99', 'edate'],
      ['sdate=1767225600&edate=1767225599', 'sdate'],
      ['sdate=1700000000&edate=1767225600', '366 days'],
      ['sdate=1767225600&edate=1767225600&inc_charges=maybe', 'inc_charges'],
    ] as const) {
      const r = await invoices(t(), u.apiKey, q);
      expect(r.status, q).toBe(400);
      expect(r.body.error).toBe('bad_request');
      expect(r.body.msg).toContain(field);
    }
    // A range of exactly 366 days is allowed.
    expect((await invoices(t(), u.apiKey, `sdate=1736121600&edate=${1736121600 + 366 * 86400}`)).status).toBe(
      200,
    );
    expect((await invoices(t(), null, '')).status).toBe(401);
    const scoped = await t().request('POST', '/api/v0/auth/apikeys/', {
      key: u.apiKey,
      body: { name: 'instances only', permissions: { instances: 'write' } },
    });
    const r403 = await invoices(t(), scoped.body.key, '');
    expect(r403.status).toBe(403);
    expect(r403.body.error).toBe('forbidden');
    const billingRead = await t().request('POST', '/api/v0/auth/apikeys/', {
      key: u.apiKey,
      body: { name: 'billing read', permissions: { billing: 'read' } },
    });
    expect((await invoices(t(), billingRead.body.key, '')).status).toBe(200);
    // The label look-up reads instances: a billing-only key is refused, an instances-read key is not.
    const fetch = (key: string | null, body: unknown) =>
      t().request('POST', '/api/v0/contracts/fetch/', { key, body });
    expect((await fetch(billingRead.body.key, { label: 'x', contract_ids: [1] })).status).toBe(403);
    const readOnly = await t().request('POST', '/api/v0/auth/apikeys/', {
      key: u.apiKey,
      body: { name: 'read only', permissions: 'read_only' },
    });
    expect((await fetch(readOnly.body.key, { label: 'x', contract_ids: [1] })).status).toBe(200);
    expect((await fetch(null, { label: 'x', contract_ids: [1] })).status).toBe(401);
    for (const body of [
      { contract_ids: [1] },
      { label: 'x', contract_ids: ['a'] },
      { label: 'x', contract_ids: [0] },
    ]) {
      const r = await fetch(u.apiKey, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe('bad_request');
    }
  });
});
