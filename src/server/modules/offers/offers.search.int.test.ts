import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { insertMachines } from '../machines/machines.service.js';
import { searchOffers, searchPage } from './offers.service.js';
import { searchReplyJson } from './offers.reply.js';

describeEachDb('offer search', (dialect) => {
  const t = useTestApp(dialect);
  let key = '';
  let ids: number[] = [];

  beforeAll(async () => {
    const host = await t().user();
    const renter = await t().user();
    key = renter.apiKey;
    const now = t().clock.now();
    ids = await insertMachines(
      t().deps.db,
      [
        { hostId: host.id, gpuName: 'RTX 4090', numGpus: 1, priceGpu: 0.5, priceDisk: 0.1 },
        { hostId: host.id, gpuName: 'RTX 4090', numGpus: 2, priceGpu: 0.4, priceDisk: 0.2 },
        {
          hostId: host.id,
          gpuName: 'RTX 3090',
          numGpus: 4,
          priceGpu: 0.2,
          priceDisk: 0.1,
          hardware: { reliability: 0.9 },
        },
        { hostId: host.id, gpuName: 'H100 SXM', numGpus: 8, priceGpu: 2.5, verified: false },
        { hostId: host.id, gpuName: 'A100 SXM4', numGpus: 1, priceGpu: 1, listed: false },
        { hostId: host.id, gpuName: 'L40S', numGpus: 1, priceGpu: 0.7, hardware: { rented: 1 } },
      ],
      now,
    );
  });

  const search = (body: unknown) => t().request('POST', '/api/v0/bundles/', { key, body });
  const cliDefaults = {
    verified: { eq: true },
    external: { eq: false },
    rentable: { eq: true },
    rented: { eq: false },
  };

  it('answers the CLI default query with verified, rentable offers ordered by score desc', async () => {
    const r = await search({
      ...cliDefaults,
      order: [['score', 'desc']],
      type: 'on-demand',
      allocated_storage: 10,
    });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    const got = r.body.offers.map((o: { id: number }) => o.id);
    expect(got.sort()).toEqual([ids[0], ids[1], ids[2]].sort());
    const scores = r.body.offers.map((o: { score: number }) => o.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    const o = r.body.offers.find((x: { id: number }) => x.id === ids[1]);
    // dph_total = 0.4 * 2 + 0.2 * 10 / 720
    expect(o.dph_total).toBeCloseTo(0.8 + (0.2 * 10) / 720, 9);
    expect(o.dlperf_per_dphtotal).toBeCloseTo(o.dlperf / o.dph_total, 9);
    expect(o.score).toBeCloseTo((o.dlperf / o.dph_base) * o.reliability, 9);
    expect(o.gpu_ram).toBe(24564);
    expect(o.verification).toBe('verified');
    expect(o.rentable).toBe(true);
    expect(o.rented).toBe(false);
    expect(o.machine_id).toBe(o.id);
  });

  it('coerces string values and supports every operator', async () => {
    const cases: [unknown, number[]][] = [
      [{ num_gpus: { eq: '2' } }, [ids[1]!]],
      [{ num_gpus: { neq: '1' }, verified: { eq: 'true' } }, [ids[1]!, ids[2]!]],
      [{ num_gpus: { gt: '1', lt: 4 } }, [ids[1]!]],
      [{ num_gpus: { gte: 2, lte: '4' } }, [ids[1]!, ids[2]!]],
      [{ gpu_name: { in: ['RTX 4090', 'RTX_3090'] } }, [ids[0]!, ids[1]!, ids[2]!]],
      [{ gpu_name: { notin: ['RTX 4090'] } }, [ids[2]!, ids[3]!]],
      [{ reliability2: { gte: '0.95' }, gpu_name: { eq: 'RTX 4090' } }, [ids[0]!, ids[1]!]],
      [{ gpu_total_ram: { gte: 49000 }, num_gpus: { lte: 2 } }, [ids[1]!]],
      [{ cpu_cores_effective: { gte: 15.5 }, num_gpus: { lte: 2 } }, [ids[1]!]],
      [{ dph_total: { lte: 0.81 } }, [ids[0]!, ids[1]!, ids[2]!]],
      [{ dph_total: { lt: 0.6 } }, [ids[0]!]],
      [{ id: { in: [String(ids[0])] } }, [ids[0]!]],
    ];
    for (const [body, want] of cases) {
      const r = await search(body);
      expect(r.status, JSON.stringify(body)).toBe(200);
      expect(r.body.offers.map((o: { id: number }) => o.id).sort(), JSON.stringify(body)).toEqual(
        [...want].sort(),
      );
    }
  });

  it('shows rented or unlisted machines only when the filter asks for them', async () => {
    const plain = await search({});
    const shown = plain.body.offers.map((o: { id: number }) => o.id);
    expect(shown).not.toContain(ids[4]);
    expect(shown).not.toContain(ids[5]);
    const rented = await search({ rented: { eq: true } });
    expect(rented.body.offers.map((o: { id: number }) => o.id)).toEqual([ids[5]]);
    const unlisted = await search({ listed: { eq: false } });
    expect(unlisted.body.offers.map((o: { id: number }) => o.id)).toEqual([ids[4]]);
    const notRentable = await search({ rentable: { eq: false } });
    expect(notRentable.body.offers.map((o: { id: number }) => o.id).sort()).toEqual([ids[4], ids[5]].sort());
  });

  it('orders over several fields and limits', async () => {
    const r = await search({
      order: [
        ['num_gpus', 'asc'],
        ['dph_total', 'desc'],
      ],
      limit: '3',
    });
    expect(r.body.offers.map((o: { id: number }) => o.id)).toEqual([ids[0], ids[1], ids[2]]);
    const d = await search({ order: [['gpu_name', 'desc']], limit: 1 });
    expect(d.body.offers.map((o: { gpu_name: string }) => o.gpu_name)).toEqual(['RTX 4090']);
  });

  it('prices bids with the minimum bid and prices allocated_storage into dph_total', async () => {
    const r = await search({ type: 'bid', id: { eq: ids[1] }, allocated_storage: 100 });
    expect(r.body.offers).toHaveLength(1);
    expect(r.body.offers[0].dph_base).toBeCloseTo(0.4, 9);
    expect(r.body.offers[0].dph_total).toBeCloseTo(0.4 + (0.2 * 100) / 720, 9);
    expect(r.body.offers[0].is_bid).toBe(true);
    const big = await search({ allocated_storage: 501 });
    expect(big.body.offers).toEqual([]);
  });

  it('answers an unknown field, operator or uncoercible value with a 400 naming it', async () => {
    const cases: [unknown, string][] = [
      [{ gpu_nam: { eq: 'x' } }, 'gpu_nam'],
      [{ num_gpus: { like: 1 } }, 'like'],
      [{ num_gpus: { eq: 'two' } }, 'num_gpus'],
      [{ verified: { eq: 'maybe' } }, 'verified'],
      [{ gpu_name: { gt: 'A' } }, 'gpu_name'],
      [{ num_gpus: { in: 3 } }, 'num_gpus'],
      [{ order: [['nope', 'desc']] }, 'nope'],
      [{ order: [['score', 'down']] }, 'down'],
      [{ type: 'spot' }, 'spot'],
      [{ limit: 0 }, 'limit'],
      [{ allocated_storage: 'lots' }, 'allocated_storage'],
    ];
    for (const [body, named] of cases) {
      const r = await search(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe('bad_request');
      expect(r.body.msg).toContain(named);
    }
  });

  it('answers older clients: GET /bundles?q=JSON with ?api_key=', async () => {
    const q = encodeURIComponent(JSON.stringify({ num_gpus: { eq: '2' } }));
    const r = await t().request('GET', `/api/v0/bundles/?q=${q}&api_key=${key}`);
    expect(r.status).toBe(200);
    expect(r.body.offers.map((o: { id: number }) => o.id)).toEqual([ids[1]]);
    const bad = await t().request('GET', `/api/v0/bundles/?q=%7Bnope&api_key=${key}`);
    expect(bad.status).toBe(400);
  });

  it('lists the distinct GPU names on offer', async () => {
    const r = await t().request('GET', '/api/v0/gpu_names/unique/', { key });
    expect(r.status).toBe(200);
    expect(r.body.gpu_names).toEqual(['H100 SXM', 'L40S', 'RTX 3090', 'RTX 4090']);
  });
  it('writes the reply JSON from kept per-row parts exactly as the plain offers, and never from a stale part', async () => {
    const bodies = [
      {
        rentable: { in: [true, false] },
        order: [['dph_total', 'asc']],
        allocated_storage: 7,
        type: 'bid',
        limit: 50,
      },
      {
        rentable: { in: [true, false] },
        order: [['dph_total', 'asc']],
        allocated_storage: 7,
        type: 'on-demand',
        limit: 50,
      },
      {
        rentable: { in: [true, false] },
        order: [['dph_total', 'asc']],
        allocated_storage: 30,
        type: 'on-demand',
        limit: 50,
      },
    ];
    const plain = async (body: unknown) =>
      JSON.parse(JSON.stringify((await searchOffers(t().deps, body)).offers));
    const json = async (body: unknown) => JSON.parse(await searchReplyJson(t().deps, body)).offers;
    // Each plan twice in turn: rows' parts are kept, and the plan-dependent part follows the plan.
    for (const body of [...bodies, ...bodies]) {
      const from = (
        await searchPage(
          t().deps,
          body,
          () => 'index',
          () => 'sql',
        )
      ).items;
      expect(from.length).toBeGreaterThan(0);
      expect(from.every((x) => x === 'index')).toBe(true); // parts are kept for index rows
      expect(await json(body), JSON.stringify(body)).toEqual(await plain(body));
    }
    // A machine whose price and hardware change is a new row: its reply shows the new values.
    await t()
      .deps.db.updateTable('machines')
      .set({ price_gpu_dph: 3.25, inet_up: 777, geolocation: 'Mars' })
      .where('id', '=', ids[0]!)
      .execute();
    const shown = await json(bodies[0]);
    expect(shown).toEqual(await plain(bodies[0]));
    expect(shown.find((o: { id: number }) => o.id === ids[0])).toMatchObject({
      inet_up: 777,
      geolocation: 'Mars',
    });
    // SQL's answers (ordered by score alone) are written by the same parts.
    const byScore = { order: [['score', 'desc']], rentable: { in: [true, false] } };
    expect(
      (
        await searchPage(
          t().deps,
          byScore,
          () => 'index',
          () => 'sql',
        )
      ).items.every((x) => x === 'sql'),
    ).toBe(true);
    expect(await json(byScore)).toEqual(await plain(byScore));
    // Over HTTP: the same offers, the CLI's content type.
    const r = await search(bodies[0]);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.body.offers).toEqual(shown);
  });
});
