// Credits against a real database: a starting balance and each credit the operator adds are
// ledger rows of kind `credit` written with the balance, concurrent credits all count, a fired
// balance alert is re-armed, and bad amounts or unknown users change nothing.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { addCredit } from './billing.service.js';

const credits = (t: TestApp, userId: number) =>
  t.deps.db
    .selectFrom('billing_ledger')
    .select(['kind', 'amount_micros', 'instance_id', 'period_start', 'period_end', 'created_at'])
    .where('user_id', '=', userId)
    .orderBy('id')
    .execute();
const balance = async (t: TestApp, userId: number) =>
  Number(
    (
      await t.deps.db
        .selectFrom('users')
        .select('balance_micros')
        .where('id', '=', userId)
        .executeTakeFirstOrThrow()
    ).balance_micros,
  );

describeEachDb('credits', (dialect) => {
  const t = useTestApp(dialect);

  it('a starting balance is the first credit; none for an account that starts at zero', async () => {
    const at = t().clock.now();
    const u = await t().user({ balanceUsd: 12.345678 });
    expect(await credits(t(), u.id)).toEqual([
      {
        kind: 'credit',
        amount_micros: -12_345_678,
        instance_id: null,
        period_start: at,
        period_end: at,
        created_at: at,
      },
    ]);
    const zero = await t().user({ balanceUsd: 0 });
    expect(await credits(t(), zero.id)).toEqual([]);
  });

  it('adds to the balance and the ledger together; concurrent credits all count', async () => {
    const u = await t().user({ balanceUsd: 1 });
    const out = await addCredit(t().deps, u.id, 25.5);
    expect(out).toMatchObject({ user_id: u.id, amount: 25.5, balance: 26.5 });
    expect(Number.isInteger(out.ledger_id)).toBe(true);
    await Promise.all(Array.from({ length: 10 }, () => addCredit(t().deps, u.id, 0.1)));
    expect(await balance(t(), u.id)).toBe(27_500_000);
    const rows = await credits(t(), u.id);
    expect(rows).toHaveLength(12);
    expect(rows.reduce((s, r) => s - r.amount_micros, 0)).toBe(27_500_000);
  });

  it('re-arms a balance alert that had fired once the balance is back above it', async () => {
    const u = await t().user({ balanceUsd: 30 });
    const put = await t().request('PUT', '/api/v0/events/settings/', {
      key: u.apiKey,
      body: { balance_low_threshold: 20 },
    });
    expect(put.status).toBe(200);
    const armed = async () =>
      Number(
        (
          await t()
            .deps.db.selectFrom('balance_alerts')
            .select('armed')
            .where('user_id', '=', u.id)
            .executeTakeFirstOrThrow()
        ).armed,
      );
    // As if charges had taken the balance under the threshold and the alert had fired.
    await t()
      .deps.db.updateTable('users')
      .set({ balance_micros: 5_000_000 })
      .where('id', '=', u.id)
      .execute();
    await t().deps.db.updateTable('balance_alerts').set({ armed: 0 }).where('user_id', '=', u.id).execute();
    await addCredit(t().deps, u.id, 10);
    expect(await armed()).toBe(0); // $15: still under $20
    await addCredit(t().deps, u.id, 10);
    expect(await armed()).toBe(1);
  });

  it('refuses an amount that is not a positive number of USD, and an unknown user, changing nothing', async () => {
    const u = await t().user({ balanceUsd: 1 });
    for (const bad of [0, -5, Number.NaN, Number.POSITIVE_INFINITY, 2e9, 1e-7]) {
      await expect(addCredit(t().deps, u.id, bad), String(bad)).rejects.toMatchObject({
        status: 400,
        code: 'bad_request',
      });
    }
    await expect(addCredit(t().deps, 987_654_321, 5)).rejects.toMatchObject({ status: 404 });
    expect(await balance(t(), u.id)).toBe(1_000_000);
    expect(await credits(t(), u.id)).toHaveLength(1);
  });
});
