// The official CLI's host trust and payout commands, each request as the CLI builds it: `reports
// ID` (a GET with a JSON body), `set user --file F` with paypal_email, `show earnings` (its
// `current` block), and `show invoices-v1 --invoices -it payout_paypal` finding the host's payout.
import { expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { renter, runningInstance } from '../helpers/market.js';
import { insertMachines } from '../../src/server/modules/machines/machines.service.js';
import { runMeter } from '../../src/server/modules/billing/billing.service.js';
import { runPayouts } from '../../src/server/modules/billing/billing.payouts.js';
import { cli, expectOk } from './official-cli.js';

const DAY = 86_400_000;

describeEachDb(
  'official CLI: reports, set user payout e-mail, show earnings, invoices-v1 payouts',
  (dialect) => {
    const t = useTestApp(dialect, { OPENRIG_PAYOUT_MIN_USD: '1', OPENRIG_PLATFORM_FEE_PERCENT: '10' });

    it('reports ID lists renters\u2019 reports for the host; a third party gets 403', async () => {
      t().clock.set(20_199 * DAY + 3_600_000);
      const host = await t().user();
      const [m] = await insertMachines(
        t().deps.db,
        [{ hostId: host.id, gpuName: 'RTX 4090', numGpus: 1, priceGpu: 2 }],
        t().clock.now(),
      );
      const u = await renter(t(), { balanceUsd: 1000 });
      await runningInstance(t(), u.apiKey, m!);
      const made = await t().request('POST', `/api/v0/machines/${m}/reports/`, {
        key: u.apiKey,
        body: { problem: 'network', message: 'ssh drops every few minutes' },
      });
      expect(made.status, made.raw).toBe(200);
      const r = await cli(t(), {
        method: 'GET',
        path: `/machines/${m}/reports/`,
        key: host.apiKey,
        json: { machine_id: m },
      });
      expectOk(r);
      expect(r.body).toEqual([
        expect.objectContaining({
          problem: 'network',
          message: 'ssh drops every few minutes',
          created_at: expect.any(Number),
        }),
      ]);
      const other = await t().user();
      expect(
        (
          await cli(t(), {
            method: 'GET',
            path: `/machines/${m}/reports/`,
            key: other.apiKey,
            json: { machine_id: m },
          })
        ).status,
      ).toBe(403);

      // set user --file F with paypal_email: the host's payout destination.
      const set = await cli(t(), {
        method: 'PUT',
        path: '/users/',
        key: host.apiKey,
        json: { paypal_email: 'host@pay.example' },
      });
      expectOk(set);
      const bad = await cli(t(), {
        method: 'PUT',
        path: '/users/',
        key: host.apiKey,
        json: { wise_email: 'not-an-email' },
      });
      expect(bad.status).toBe(400);

      // A week of charges, then the payout run.
      t().clock.advance(6 * DAY);
      await runMeter(t().deps);
      t().clock.advance(DAY);
      await runMeter(t().deps);
      const payouts = await runPayouts(t().deps);
      expect(payouts).toHaveLength(1);
      expect(payouts[0]).toMatchObject({ method: 'paypal_manual', destination: 'host@pay.example' });

      // show earnings: summary, current, per_machine, per_day.
      const e = await cli(t(), {
        method: 'GET',
        path: '/users/me/machine-earnings',
        query: {
          owner: 'me',
          sday: t().clock.now() / DAY - 1,
          eday: t().clock.now() / DAY - 1,
          machid: null,
        },
        key: host.apiKey,
      });
      expectOk(e);
      expect(Object.keys(e.body)).toEqual(
        expect.arrayContaining(['summary', 'current', 'per_machine', 'per_day']),
      );
      expect(e.body.current).toMatchObject({
        service_fee: expect.any(Number),
        total: expect.any(Number),
        credit: 100,
      });
      // What is owed now: the pending payout plus what was earned since its period ended.
      expect(e.body.current.balance).toBeCloseTo(
        Number(payouts[0]!.net_micros) / 1e6 + e.body.current.total - e.body.current.service_fee,
        6,
      );

      // show invoices-v1 --invoices -it payout_paypal: the payout, with service paypal_manual.
      const when = Math.floor(t().clock.now() / 1000);
      const inv = await cli(t(), {
        method: 'GET',
        path: '/api/v1/invoices/',
        query: {
          select_filters: {
            when: { gte: when - 86400, lte: when + 86400 },
            service: { in: ['paypal_manual'] },
          },
          latest_first: 'True',
          limit: 20,
        },
        key: host.apiKey,
      });
      expectOk(inv);
      expect(inv.body.results).toEqual([
        expect.objectContaining({
          type: 'payout',
          source: 'paypal_manual',
          amount: Number(payouts[0]!.net_micros) / 1e6,
          metadata: expect.objectContaining({
            invoice_id: Number(payouts[0]!.id),
            service: 'paypal_manual',
            status: 'pending',
          }),
        }),
      ]);
    });
  },
);
