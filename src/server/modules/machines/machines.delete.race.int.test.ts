// A host's deletion of a machine racing rents of its offer is decided by the database (the
// deletion's conditional UPDATE of the machine row against the rent's claim of it): each round
// ends either with the machine deleted and every rent refused, or with one rent made and the
// deletion refused with 409. Never a live client instance on a deleted machine, on SQLite and
// PostgreSQL.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { renter } from '../../../../test/helpers/market.js';
import { insertMachines } from './machines.service.js';

describeEachDb('deleting a machine while it is rented', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off' });

  it('40 rounds of a delete and 6 rents fired together: one side wins each round, nothing in between', async () => {
    const host = await t().user();
    const clients = await Promise.all(Array.from({ length: 6 }, () => renter(t())));
    const rounds = 40;
    const offers = await insertMachines(
      t().deps.db,
      Array.from({ length: rounds }, () => ({
        hostId: host.id,
        gpuName: 'RTX 4090',
        numGpus: 1,
        priceGpu: 0.5,
      })),
      t().clock.now(),
    );
    const outcomes = { deleted: 0, rented: 0 };
    for (const [round, offer] of offers.entries()) {
      const rents = clients.map((c) =>
        t().request('PUT', `/api/v0/asks/${offer}/`, {
          key: c.apiKey,
          body: { client_id: 'me', image: 'ubuntu:22.04', disk: 10, runtype: 'ssh' },
        }),
      );
      // The delete goes out after the rents, later by a few turns of the event loop each round,
      // so that on SQLite too (where each request runs to its transaction without waiting) it
      // wins some rounds and loses others.
      const deletion = (async () => {
        for (let i = 0; i < (round % 8) * 3; i++) await new Promise((r) => setImmediate(r));
        return t().request('POST', `/api/v0/machines/${offer}/force_delete/`, { key: host.apiKey, body: {} });
      })();
      const [d, ...r] = await Promise.all([deletion, ...rents]);
      const made = r.filter((x) => x.status === 200);
      expect(r.filter((x) => x.status >= 500)).toEqual([]);
      expect(d.status, d.raw).not.toBeGreaterThanOrEqual(500);
      if (d.status === 200) {
        outcomes.deleted++;
        expect(made).toEqual([]);
        // A rent that lost to the deletion finds no offer; one that lost to another rent (none
        // here) would be 409.
        for (const x of r) expect([x.status, x.body.error], x.raw).toEqual([404, 'not_found']);
      } else {
        outcomes.rented++;
        expect([d.status, d.body.error, d.body.live_client_instances]).toEqual([409, 'machine_in_use', 1]);
        expect(made).toHaveLength(1);
        for (const x of r.filter((y) => y.status !== 200)) expect(x.status).toBe(409);
      }
      const m = await t()
        .deps.db.selectFrom('machines')
        .select(['deleted_at', 'rented'])
        .where('id', '=', offer)
        .executeTakeFirstOrThrow();
      const live = await t()
        .deps.db.selectFrom('instances')
        .select('id')
        .where('machine_id', '=', offer)
        .where('destroyed_at', 'is', null)
        .execute();
      // The invariant: deleted and free, or live with exactly the one instance it holds.
      if (m.deleted_at !== null) expect([live.length, m.rented]).toEqual([0, 0]);
      else expect([live.length, m.rented]).toEqual([1, 1]);
      expect(m.deleted_at !== null).toBe(d.status === 200);
    }
    expect(outcomes.deleted + outcomes.rented).toBe(rounds);
  });
});
