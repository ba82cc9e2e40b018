// Renters see maintenance windows on offers and on their instance rows (v0
// list, v1 list, single instance): current and upcoming windows, not cancelled or ended ones.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { PUB } from '../../../../test/helpers/market.js';
import { createMachines } from '../machines/machines.service.js';

describeEachDb('maintenance windows seen by renters', (dialect) => {
  const t = useTestApp(dialect);

  /** A host with three listed RTX 4090 machines. */
  const hostWithThreeMachines = async () => {
    const host = await t().user();
    const { machine_ids: ids } = await createMachines(t().deps, {
      ownerEmail: host.email,
      gpuName: 'RTX 4090',
      numGpus: 1,
      count: 3,
      priceGpu: 0.5,
    });
    const [a, b, c] = ids as [number, number, number];
    return { host, ids, a, b, c };
  };

  it('offers, v0 and v1 instance lists and the single instance show the machine windows; empty when none', async () => {
    const { host, a, b, c } = await hostWithThreeMachines();
    const now = Math.floor(t().clock.now() / 1000);
    const dn = (id: number, sdate: number, duration: number, cat: string) =>
      t().request('PUT', `/api/v0/machines/${id}/dnotify/`, {
        key: host.apiKey,
        body: { client_id: 'me', sdate, duration, maintenance_category: cat },
      });
    expect((await dn(a, now + 7200, 2, 'gpu')).status).toBe(200);
    expect((await dn(a, now + 86400, 1, 'power')).status).toBe(200);
    expect((await dn(b, now + 3600, 3, 'disk')).status).toBe(200);

    const search = await t().request('POST', '/api/v0/bundles/', {
      key: host.apiKey,
      body: { id: { in: [a, b, c] }, order: [['id', 'asc']] },
    });
    expect(search.status).toBe(200);
    const byId = new Map(search.body.offers.map((o: { id: number }) => [o.id, o]));
    const win = (
      machine_id: number,
      start_time: number,
      duration_hours: number,
      maintenance_category: string,
    ) => ({
      id: expect.any(Number),
      machine_id,
      start_time,
      end_time: start_time + duration_hours * 3600,
      duration_hours,
      maintenance_category,
    });
    expect((byId.get(a) as any).maintenances).toEqual([
      win(a, now + 7200, 2, 'gpu'),
      win(a, now + 86400, 1, 'power'),
    ]);
    expect((byId.get(b) as any).maintenances).toEqual([win(b, now + 3600, 3, 'disk')]);
    expect((byId.get(c) as any).maintenances).toEqual([]);

    const renter = await t().user();
    expect(
      (await t().request('POST', '/api/v0/ssh/', { key: renter.apiKey, body: { ssh_key: PUB } })).status,
    ).toBe(200);
    const ia = (await t().request('PUT', `/api/v0/asks/${a}/`, { key: renter.apiKey, body: { image: 'x' } }))
      .body.new_contract;
    const ic = (await t().request('PUT', `/api/v0/asks/${c}/`, { key: renter.apiKey, body: { image: 'x' } }))
      .body.new_contract;

    const v0 = (await t().request('GET', '/api/v0/instances/', { key: renter.apiKey })).body.instances;
    const v1 = (await t().request('GET', '/api/v1/instances/', { key: renter.apiKey })).body.instances;
    const one = (await t().request('GET', `/api/v0/instances/${ia}/`, { key: renter.apiKey })).body.instances;
    for (const rows of [v0, v1]) {
      expect(rows.find((r: { id: number }) => r.id === ia).maintenances).toEqual(
        (byId.get(a) as any).maintenances,
      );
      expect(rows.find((r: { id: number }) => r.id === ic).maintenances).toEqual([]);
    }
    expect(one.maintenances).toEqual((byId.get(a) as any).maintenances);

    // A cancelled window disappears; an ended one too.
    expect(
      (await t().request('PUT', `/api/v0/machines/${b}/cancel_maint/`, { key: host.apiKey, body: {} }))
        .status,
    ).toBe(200);
    t().clock.advance(5 * 3600 * 1000); // a's gpu window (now+2h..now+4h) has ended
    const later = await t().request('POST', '/api/v0/bundles/', {
      key: host.apiKey,
      body: { id: { in: [a, b] }, rented: { in: [true, false] } },
    });
    const later2 = new Map(later.body.offers.map((o: { id: number }) => [o.id, o]));
    expect((later2.get(b) as any).maintenances).toEqual([]);
    expect((later2.get(a) as any).maintenances).toEqual([win(a, now + 86400, 1, 'power')]);
    expect(
      (await t().request('GET', `/api/v0/instances/${ia}/`, { key: renter.apiKey })).body.instances
        .maintenances,
    ).toEqual([win(a, now + 86400, 1, 'power')]);
  });

  it('a search reads windows only for machines whose maint_until is ahead; schedule and cancel keep it', async () => {
    const { host, ids, a, b, c } = await hostWithThreeMachines();
    const untilOf = async () =>
      new Map(
        (
          await t()
            .db.store.db.selectFrom('machines')
            .select(['id', 'maint_until'])
            .where('id', 'in', ids)
            .execute()
        ).map((r) => [r.id, r.maint_until === null ? null : Number(r.maint_until)]),
      );
    // The statements search sends to Store.read, and the machine ids they ask windows for.
    const store = t().db.store;
    const read = store.read.bind(store);
    const windowReads: unknown[][] = [];
    store.read = (text: string, params: readonly unknown[]) => {
      if (text.includes('FROM maintenance_windows')) windowReads.push([...params]);
      return read(text, params);
    };
    const search = async () => {
      windowReads.length = 0;
      const r = await t().request('POST', '/api/v0/bundles/', {
        key: host.apiKey,
        body: { gpu_name: { eq: 'RTX 4090' }, host_id: { eq: host.id }, order: [['id', 'asc']] },
      });
      expect(r.status).toBe(200);
      return new Map<number, unknown[]>(
        r.body.offers.map((o: { id: number; maintenances: unknown[] }) => [o.id, o.maintenances]),
      );
    };
    try {
      expect(await untilOf()).toEqual(
        new Map([
          [a, null],
          [b, null],
          [c, null],
        ]),
      );
      let page = await search();
      expect([...page.keys()]).toEqual([a, b, c]);
      expect(windowReads).toEqual([]);

      const now = Math.floor(t().clock.now() / 1000);
      const dn = (id: number, sdate: number, duration: number) =>
        t().request('PUT', `/api/v0/machines/${id}/dnotify/`, {
          key: host.apiKey,
          body: { client_id: 'me', sdate, duration, maintenance_category: 'gpu' },
        });
      expect((await dn(a, now + 3600, 2)).status).toBe(200);
      expect((await dn(a, now + 86400, 1)).status).toBe(200);
      expect((await dn(b, now + 7200, 1)).status).toBe(200);
      expect(await untilOf()).toEqual(
        new Map([
          [a, (now + 86400 + 3600) * 1000],
          [b, (now + 7200 + 3600) * 1000],
          [c, null],
        ]),
      );
      page = await search();
      expect((page.get(a) as unknown[]).length).toBe(2);
      expect((page.get(b) as unknown[]).length).toBe(1);
      expect(page.get(c)).toEqual([]);
      expect(windowReads).toHaveLength(1);
      expect(JSON.stringify(windowReads[0]![0])).not.toContain(String(c));

      // Cancelling b's window: its maint_until falls back to none; the page asks only for a.
      expect(
        (await t().request('PUT', `/api/v0/machines/${b}/cancel_maint/`, { key: host.apiKey, body: {} }))
          .status,
      ).toBe(200);
      expect((await untilOf()).get(b)).toBeNull();
      page = await search();
      expect(page.get(b)).toEqual([]);
      expect((page.get(a) as unknown[]).length).toBe(2);
      expect(windowReads).toHaveLength(1);

      // Once a's last window has ended no window is read at all, though maint_until stays.
      t().clock.advance((86400 + 7200) * 1000);
      page = await search();
      expect(page.get(a)).toEqual([]);
      expect(windowReads).toEqual([]);
    } finally {
      store.read = read;
    }
  });
});
