// Search filters the established CLI documents: geolocation by country code (the SQL and the offer
// index give the same answer), the fields every openrig offer has by construction, and a 400
// naming each field openrig does not record.
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { insertMachines } from '../machines/machines.service.js';
import { compileSearch } from './offers.filter.js';
import { searchRows } from './offers.repo.js';
import { OfferIndex } from './offers.index.js';
import { REFUSED_FIELDS } from './offers.refused-fields.js';

const GEOS = [
  'Montreal, CA',
  'Oslo, NO',
  'Frankfurt, DE',
  'CA',
  'Toronto, Canada',
  'Oslo, no',
  'Region, Montreal, CA',
  ', CA',
  'Bergen, NOR',
  '',
];

describeEachDb('offer search: the CLI documented filters', (dialect) => {
  const t = useTestApp(dialect);
  let key = '';
  let hostId = 0;
  const byGeo = new Map<string, number>();

  beforeAll(async () => {
    const host = await t().user();
    hostId = host.id;
    key = (await t().user()).apiKey;
    const ids = await insertMachines(
      t().deps.db,
      GEOS.map((g) => ({ hostId: host.id, gpuName: 'RTX 4090', numGpus: 2, hardware: { geolocation: g } })),
      t().clock.now(),
    );
    GEOS.forEach((g, i) => byGeo.set(g, ids[i]!));
  });

  /** The ids of this file's offers matching `filter`, by the SQL and by the index (must agree). */
  async function both(filter: Record<string, unknown>): Promise<string[]> {
    const now = t().clock.now();
    const plan = compileSearch({ ...filter, host_id: { eq: hostId }, order: [['id', 'asc']] });
    const viaSql = (await searchRows(t().deps.db, t().deps.dialect, plan, now)).map((r) => Number(r.id));
    const index = new OfferIndex(t().deps.store);
    await index.sync();
    const viaIndex = index.search(plan, now).map((r) => r.id);
    expect(viaIndex, JSON.stringify(filter)).toEqual(viaSql);
    const geoOf = new Map([...byGeo].map(([g, id]) => [id, g]));
    return viaSql.map((id) => geoOf.get(id)!);
  }

  it('geolocation = a two-letter code matches the code after the last ", " and the bare code', async () => {
    expect(await both({ geolocation: { eq: 'CA' } })).toEqual([
      'Montreal, CA',
      'CA',
      'Region, Montreal, CA',
      ', CA',
    ]);
    expect(await both({ geolocation: { eq: 'NO' } })).toEqual(['Oslo, NO']);
    // The case is the one sent: "no" is another code.
    expect(await both({ geolocation: { eq: 'no' } })).toEqual(['Oslo, no']);
  });

  it('geolocation in / notin / != take codes; a full location still matches exactly', async () => {
    expect(await both({ geolocation: { in: ['NO', 'DE'] } })).toEqual(['Oslo, NO', 'Frankfurt, DE']);
    expect(await both({ geolocation: { neq: 'NO' } })).toEqual(GEOS.filter((g) => g !== 'Oslo, NO'));
    expect(await both({ geolocation: { notin: ['NO', 'DE', 'CA'] } })).toEqual([
      'Toronto, Canada',
      'Oslo, no',
      'Bergen, NOR',
      '',
    ]);
    expect(await both({ geolocation: { eq: 'Montreal, CA' } })).toEqual(['Montreal, CA']);
    expect(await both({ geolocation: { in: ['Montreal, CA', 'DE'] } })).toEqual([
      'Montreal, CA',
      'Frankfurt, DE',
    ]);
    // Not a two-letter code: the whole value alone.
    expect(await both({ geolocation: { eq: 'Canada' } })).toEqual([]);
    expect(await both({ geolocation: { eq: 'NOR' } })).toEqual([]);
    expect(await both({ geolocation: { in: [] } })).toEqual([]);
    expect(await both({ geolocation: { notin: [] } })).toEqual(GEOS);
  });

  it('the same through the route, as the CLI sends the query', async () => {
    const r = await t().request('POST', '/api/v0/bundles/', {
      key,
      body: { geolocation: { in: ['NO', 'DE'] }, host_id: { eq: hostId }, order: [['score', 'desc']] },
    });
    expect(r.status).toBe(200);
    expect(r.body.offers.map((o: { geolocation: string }) => o.geolocation).sort()).toEqual([
      'Frankfurt, DE',
      'Oslo, NO',
    ]);
  });

  it('serves the fields every openrig offer has by construction, as filters and in each reply', async () => {
    const all = GEOS.length;
    expect(await both({ gpu_frac: { eq: '1' } })).toHaveLength(all);
    expect(await both({ gpu_frac: { lt: 1 } })).toEqual([]);
    expect(await both({ inet_up_cost: { lte: '0' }, inet_down_cost: { eq: 0 } })).toHaveLength(all);
    expect(await both({ datacenter: { eq: true } })).toEqual([]);
    expect(await both({ vms_enabled: { eq: 'False' } })).toHaveLength(all);
    expect(await both({ order: [['gpu_frac', 'desc']] })).toHaveLength(all);
    const r = await t().request('POST', '/api/v0/bundles/', {
      key,
      body: { host_id: { eq: hostId }, order: [['inet_up_cost', 'asc']], limit: 1 },
    });
    expect(r.status).toBe(200);
    expect(r.body.offers[0]).toMatchObject({
      gpu_frac: 1,
      inet_up_cost: 0,
      inet_down_cost: 0,
      datacenter: false,
      vms_enabled: false,
    });
  });

  it('refuses no field the official CLI documents: those it once refused are benchmarked now', async () => {
    expect(REFUSED_FIELDS).toEqual({});
    // The fields the CLI's help lists that openrig once refused (docs/benchmarks.md fills them).
    for (const field of [
      'bw_nvlink',
      'compute_cap',
      'cpu_arch',
      'flops_per_dphtotal',
      'gpu_arch',
      'gpu_display_active',
      'gpu_max_power',
      'gpu_max_temp',
      'gpu_mem_bw',
      'has_avx',
      'pci_gen',
      'static_ip',
      'total_flops',
      'ubuntu_version',
      'mobo_name',
    ]) {
      const value = ['cpu_arch', 'gpu_arch', 'ubuntu_version', 'mobo_name'].includes(field) ? 'x' : '1';
      const r = await t().request('POST', '/api/v0/bundles/', { key, body: { [field]: { neq: value } } });
      expect(r.status, field).toBe(200);
    }
    const alias = await t().request('POST', '/api/v0/bundles/', { key, body: { flops_usd: { gt: 1 } } });
    expect(alias.status).toBe(400);
    expect(alias.body.msg).toBe('Unknown search field "flops_usd": it is named flops_per_dphtotal');
  });
});
