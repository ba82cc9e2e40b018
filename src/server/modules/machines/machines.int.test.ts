// Hosts' machines: GET /api/v0/machines/, list / unlist (and the CLI forms),
// and what the market shows as a result.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { createMachines } from './machines.service.js';
import { renter, runningInstance } from '../../../../test/helpers/market.js';

describeEachDb('machines', (dialect) => {
  const t = useTestApp(dialect);

  it("lists the caller's machines, and lists / unlists them as offers", async () => {
    const host = await t().user();
    const other = await t().user();
    const { machine_ids: ids } = await createMachines(t().deps, {
      ownerEmail: host.email,
      gpuName: 'RTX 4090',
      numGpus: 2,
      count: 3,
      priceGpu: 0.5,
    });
    expect(ids).toHaveLength(3);
    const mine = await t().request('GET', '/api/v0/machines/', { key: host.apiKey });
    expect(mine.status).toBe(200);
    expect(mine.body.machines.map((m: { id: number }) => m.id)).toEqual(ids);
    expect(mine.body.machines[0]).toMatchObject({
      gpu_name: 'RTX 4090',
      num_gpus: 2,
      listed: true,
      rented: false,
      online: false,
      listed_gpu_cost: 0.5,
      maintenances: [],
    });
    expect((await t().request('GET', '/api/v0/machines/', { key: other.apiKey })).body.machines).toEqual([]);

    const search = async () =>
      (
        await t().request('POST', '/api/v0/bundles/', { key: other.apiKey, body: { id: { in: ids } } })
      ).body.offers.map((o: { id: number }) => o.id);
    expect(await search()).toEqual(expect.arrayContaining(ids));

    const un = await t().request('PUT', `/api/v0/machines/${ids[0]}/unlist/`, { key: host.apiKey });
    expect(un.status).toBe(200);
    expect(un.body.machine.listed).toBe(false);
    expect(await search()).not.toContain(ids[0]);
    const cliUn = await t().request('DELETE', `/api/v0/machines/${ids[1]}/asks/`, {
      key: host.apiKey,
      body: {},
    });
    expect(cliUn.status).toBe(200);
    expect(await search()).toEqual([ids[2]]);

    const li = await t().request('PUT', `/api/v0/machines/${ids[0]}/list/`, {
      key: host.apiKey,
      body: { price_gpu: 0.9, price_disk: 0.2, min_bid: 0.3 },
    });
    expect(li.status).toBe(200);
    expect(li.body.machine).toMatchObject({
      listed: true,
      listed_gpu_cost: 0.9,
      listed_storage_cost: 0.2,
      min_bid: 0.3,
    });
    const cliLi = await t().request('PUT', '/api/v0/machines/create_asks/', {
      key: host.apiKey,
      body: { machine: ids[1], price_gpu: 0.7, price_inetu: 0.01 },
    });
    expect(cliLi.status).toBe(200);
    const offer = (
      await t().request('POST', '/api/v0/bundles/', {
        key: other.apiKey,
        body: { id: { eq: ids[0] }, allocated_storage: 0 },
      })
    ).body.offers[0];
    expect(offer.dph_total).toBeCloseTo(1.8, 9);
  });

  it('refuses foreign machines with 404 and bad prices with 400, changing nothing', async () => {
    const host = await t().user();
    const other = await t().user();
    const {
      machine_ids: [id],
    } = await createMachines(t().deps, { ownerEmail: host.email, gpuName: 'RTX 3090', numGpus: 1, count: 1 });
    expect((await t().request('PUT', `/api/v0/machines/${id}/unlist/`, { key: other.apiKey })).status).toBe(
      404,
    );
    expect(
      (
        await t().request('PUT', `/api/v0/machines/${id}/list/`, {
          key: other.apiKey,
          body: { price_gpu: 1 },
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await t().request('PUT', `/api/v0/machines/${id}/list/`, {
          key: host.apiKey,
          body: { price_gpu: -1 },
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await t().request('PUT', `/api/v0/machines/${id}/list/`, {
          key: host.apiKey,
          body: { price_gpu: '1' },
        })
      ).status,
    ).toBe(400);
    expect(
      (await t().request('PUT', `/api/v0/machines/${id}/list/`, { key: host.apiKey, body: { price: 1 } }))
        .status,
    ).toBe(400);
    expect(
      (await t().request('PUT', `/api/v0/machines/${id}/list/`, { key: host.apiKey, body: { end_date: 1 } }))
        .status,
    ).toBe(400);
    const m = await t()
      .deps.db.selectFrom('machines')
      .selectAll()
      .where('id', '=', id!)
      .executeTakeFirstOrThrow();
    expect(m).toMatchObject({ listed: 1, price_gpu_dph: 0.4 });
  });

  it('shows one machine as the list shows it, and counts running instances past the first 500 machines', async () => {
    const host = await t().user();
    const other = await t().user();
    const rentingUser = await renter(t());
    const { machine_ids: ids } = await createMachines(t().deps, {
      ownerEmail: host.email,
      gpuName: 'A40',
      numGpus: 1,
      count: 1100,
      priceGpu: 0.3,
    });
    // One rented machine in the first 500 of the host's machines, one past them.
    const rentedIds = [ids[3]!, ids[1050]!];
    for (const id of rentedIds) await runningInstance(t(), rentingUser.apiKey, id);
    const list = await t().request('GET', '/api/v0/machines/', { key: host.apiKey });
    expect(list.status).toBe(200);
    expect(list.body.machines).toHaveLength(1100);
    const running = list.body.machines
      .filter((m: { current_rentals_running: number }) => m.current_rentals_running > 0)
      .map((m: { id: number }) => m.id);
    expect(running).toEqual(rentedIds);

    for (const id of [ids[0]!, ...rentedIds]) {
      const one = await t().request('GET', `/api/v0/machines/${id}/`, { key: host.apiKey });
      expect(one.status).toBe(200);
      expect(one.body).toEqual([list.body.machines.find((m: { id: number }) => m.id === id)]);
    }
    // Another host's machine, and one that does not exist: 404, as for any other call.
    const foreign = await t().request('GET', `/api/v0/machines/${ids[3]}/`, { key: other.apiKey });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toMatchObject({ error: 'not_found' });
    expect(
      (await t().request('GET', `/api/v0/machines/${ids[1099]! + 1000}/`, { key: host.apiKey })).status,
    ).toBe(404);
  });

  it('ends a listing at end_date: the offer disappears and duration counts down', async () => {
    const host = await t().user();
    const {
      machine_ids: [id],
    } = await createMachines(t().deps, { ownerEmail: host.email, gpuName: 'L40S', numGpus: 1, count: 1 });
    const end = Math.floor(t().clock.now() / 1000) + 3600;
    expect(
      (
        await t().request('PUT', `/api/v0/machines/${id}/list/`, {
          key: host.apiKey,
          body: { end_date: end },
        })
      ).status,
    ).toBe(200);
    const o = (await t().request('POST', '/api/v0/bundles/', { key: host.apiKey, body: { id: { eq: id } } }))
      .body.offers[0];
    expect(o.duration).toBeCloseTo(end - t().clock.now() / 1000, 0);
    t().clock.advance(3601_000);
    expect(
      (await t().request('POST', '/api/v0/bundles/', { key: host.apiKey, body: { id: { eq: id } } })).body
        .offers,
    ).toEqual([]);
  });

  it('admin create-machines refuses an unknown owner and bad counts', async () => {
    await expect(
      createMachines(t().deps, { ownerEmail: 'nobody@example.com', gpuName: 'X', numGpus: 1, count: 1 }),
    ).rejects.toThrow('nobody@example.com');
    const host = await t().user();
    await expect(
      createMachines(t().deps, { ownerEmail: host.email, gpuName: 'X', numGpus: 0, count: 1 }),
    ).rejects.toThrow('num-gpus');
    await expect(
      createMachines(t().deps, { ownerEmail: host.email, gpuName: 'X', numGpus: 1, count: 0 }),
    ).rejects.toThrow('count');
  });
});

describeEachDb('machines and maintenance', (dialect) => {
  const t = useTestApp(dialect);

  it("shows the current maintenance windows on the host's machines and on renters' instance rows", async () => {
    const host = await t().user();
    const {
      machine_ids: [id],
    } = await createMachines(t().deps, { ownerEmail: host.email, gpuName: 'RTX 4090', numGpus: 1, count: 1 });
    const renter = await t().user();
    expect(
      (
        await t().request('POST', '/api/v0/ssh/', {
          key: renter.apiKey,
          body: {
            ssh_key:
              'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl renter@laptop',
          },
        })
      ).status,
    ).toBe(200);
    const inst = await t().request('PUT', `/api/v0/asks/${id}/`, {
      key: renter.apiKey,
      body: { image: 'x' },
    });
    expect(inst.status).toBe(200);
    const sdate = Math.floor(t().clock.now() / 1000) + 7200;
    const s = await t().request('PUT', `/api/v0/machines/${id}/dnotify/`, {
      key: host.apiKey,
      body: { client_id: 'me', sdate, duration: 2, maintenance_category: 'gpu' },
    });
    expect(s.status).toBe(200);
    const m = (await t().request('GET', '/api/v0/machines/', { key: host.apiKey })).body.machines[0];
    expect(m.maintenances).toEqual([
      expect.objectContaining({
        machine_id: id,
        start_time: sdate,
        duration_hours: 2,
        maintenance_category: 'gpu',
      }),
    ]);
    const row = (
      await t().request('GET', `/api/v0/instances/${inst.body.new_contract}/`, { key: renter.apiKey })
    ).body.instances;
    expect(row.maintenances).toEqual(m.maintenances);
  });
});
