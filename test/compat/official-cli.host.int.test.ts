// The official CLI's host commands (machines and maintenance), each request as that CLI sends it,
// each reply checked for what the CLI reads (docs/compatibility.md, rows marked "works").
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { insertMachines } from '../../src/server/modules/machines/machines.service.js';
import { insertInstances } from '../helpers/maintenance.js';
import { renter } from '../helpers/market.js';
import { cli, expectOk, expectTableFields, f, type Kind } from './official-cli.js';

// The columns of the CLI's machines table.
const MACHINE_TABLE: Record<string, Kind> = {
  id: 'any',
  num_gpus: 'any',
  gpu_name: 'any',
  disk_space: 'any',
  hostname: 'str',
  driver_version: 'any',
  reliability2: 'num',
  verification: 'any',
  public_ipaddr: 'any',
  geolocation: 'any',
  num_reports: 'any',
  listed_gpu_cost: 'num',
  min_bid_price: 'num',
  credit_discount_max: 'num',
  listed_inet_up_cost: 'num',
  listed_inet_down_cost: 'num',
  gpu_occupancy: 'any',
};

/**
 * Each column is present (the CLI prints '-' for a missing one) with the type openrig sends;
 * public_ipaddr is null when the machine's agent gave no public address.
 */
const MACHINE_COLUMNS: Record<keyof typeof MACHINE_TABLE, 'number' | 'string' | 'string|null'> = {
  id: 'number',
  num_gpus: 'number',
  gpu_name: 'string',
  disk_space: 'number',
  hostname: 'string',
  driver_version: 'string',
  reliability2: 'number',
  verification: 'string',
  public_ipaddr: 'string|null',
  geolocation: 'string',
  num_reports: 'number',
  listed_gpu_cost: 'number',
  min_bid_price: 'number',
  credit_discount_max: 'number',
  listed_inet_up_cost: 'number',
  listed_inet_down_cost: 'number',
  gpu_occupancy: 'string',
};

function expectEveryColumn(row: Record<string, unknown>): void {
  expectTableFields(row, MACHINE_TABLE);
  for (const [name, type] of Object.entries(MACHINE_COLUMNS)) {
    expect(row, name).toHaveProperty(name);
    const v = row[name];
    if (type === 'string|null') expect(v === null || typeof v === 'string', name).toBe(true);
    else expect(typeof v, name).toBe(type);
  }
}

describeEachDb('official CLI: host commands', (dialect) => {
  const t = useTestApp(dialect);
  let key: string;
  let hostId: number;
  let m: number[];
  beforeAll(async () => {
    const host = await t().user();
    key = host.apiKey;
    hostId = host.id;
    m = await insertMachines(
      t().deps.db,
      [1, 2].map(() => ({ hostId: host.id, gpuName: 'RTX 4090', numGpus: 2, priceGpu: 0.4, priceDisk: 0.2 })),
      t().clock.now(),
    );
  });

  it('show machines / show machine: every column of the table, with what openrig knows', async () => {
    const pub = await insertMachines(
      t().deps.db,
      [
        {
          hostId,
          gpuName: 'RTX 3090',
          numGpus: 4,
          minBid: 0.6,
          verified: false,
          hardware: {
            geolocation: 'Montreal, CA',
            public_host: '203.0.113.7',
            rented: 1,
            reliability: 0.97,
            driver_version: '535.86.05',
          },
        },
      ],
      t().clock.now(),
    );
    const rows = (await cli(t(), { method: 'GET', path: '/machines', query: { owner: 'me' }, key })).body
      .machines as Record<string, unknown>[];
    for (const row of rows) expectEveryColumn(row);
    expect(rows.find((r) => r.id === m[0])).toMatchObject({
      public_ipaddr: null,
      geolocation: 'US',
      verification: 'verified',
      reliability2: 0.99,
      driver_version: '550.54.15',
      gpu_occupancy: '0/2',
      num_reports: 0,
      credit_discount_max: 0,
      listed_inet_up_cost: 0,
      listed_inet_down_cost: 0,
    });
    const one = await cli(t(), { method: 'GET', path: `/machines/${pub[0]}`, query: { owner: 'me' }, key });
    expectOk(one);
    expectEveryColumn(one.body[0]);
    expect(one.body[0]).toMatchObject({
      public_ipaddr: '203.0.113.7',
      geolocation: 'Montreal, CA',
      verification: 'unverified',
      reliability2: 0.97,
      driver_version: '535.86.05',
      // The whole machine is rented: all four GPUs.
      gpu_occupancy: '4/4',
      // 0.6 $/h for the machine is 0.15 per GPU.
      min_bid: 0.6,
      min_bid_price: 0.15,
    });
    await t().deps.db.deleteFrom('machines').where('id', '=', pub[0]!).execute();
  });

  it('list machine -b: the minimum bid is per GPU; offers and bids are for the whole machine', async () => {
    const r = await cli(t(), {
      method: 'PUT',
      path: '/machines/create_asks/',
      key,
      json: { machine: m[1], price_gpu: null, price_disk: null, price_min_bid: f(0.2), end_date: null },
    });
    expectOk(r);
    const row = (await cli(t(), { method: 'GET', path: `/machines/${m[1]}`, query: { owner: 'me' }, key }))
      .body[0];
    // 2 GPUs at 0.2 $/h each.
    expect(row).toMatchObject({ num_gpus: 2, min_bid_price: 0.2, min_bid: 0.4 });
    const client = (await renter(t())).apiKey;
    const offer = (
      await t().request('POST', '/api/v0/bundles/', {
        key: client,
        body: { id: { eq: m[1] }, type: 'bid', allocated_storage: 0 },
      })
    ).body.offers[0];
    expect(offer).toMatchObject({ min_bid: 0.4, dph_base: 0.4 });
    // A bid (create instance --bid_price) is for the whole machine: 0.3 is below 2 × 0.2.
    const bid = (price: number) =>
      cli(t(), {
        method: 'PUT',
        path: `/asks/${m[1]}/`,
        key: client,
        json: { client_id: 'me', image: 'ubuntu:22.04', env: {}, price: f(price), disk: f(10) },
      });
    const low = await bid(0.3);
    expect(low.status).toBe(400);
    expect(low.body.msg).toContain('minimum bid of 0.4');
    const ok = await bid(0.4);
    expectOk(ok);
    await cli(t(), { method: 'DELETE', path: `/instances/${ok.body.new_contract}/`, key: client, json: {} });
    // The per-GPU price is kept to the micro-dollar (0.123457), then taken for 2 GPUs.
    await cli(t(), {
      method: 'PUT',
      path: '/machines/create_asks/',
      key,
      json: { machine: m[1], price_min_bid: f(0.1234567) },
    });
    const rounded = (
      await cli(t(), { method: 'GET', path: `/machines/${m[1]}`, query: { owner: 'me' }, key })
    ).body[0];
    expect(rounded).toMatchObject({ min_bid: 0.246914, min_bid_price: 0.123457 });
  });

  it('set min-bid: the price is per GPU; the minimum bid alone changes, listed or not', async () => {
    const [unlisted, listed] = await insertMachines(
      t().deps.db,
      [
        { hostId, gpuName: 'RTX 4090', numGpus: 4, priceGpu: 0.5, listed: false },
        { hostId, gpuName: 'RTX 4090', numGpus: 1, priceGpu: 0.5 },
      ],
      t().clock.now(),
    );
    const show = async (id: number) =>
      (await cli(t(), { method: 'GET', path: `/machines/${id}`, query: { owner: 'me' }, key })).body[0];
    const setMinBid = (id: number, price: unknown, k: string = key) =>
      cli(t(), { method: 'PUT', path: `/machines/${id}/minbid/`, key: k, json: { client_id: 'me', price } });
    const before = await show(unlisted!);
    const r = await setMinBid(unlisted!, f(0.25));
    expectOk(r);
    // 4 GPUs at 0.25 $/h each; still unlisted, the other prices as they were.
    expect(await show(unlisted!)).toMatchObject({
      min_bid_price: 0.25,
      min_bid: 1,
      listed: false,
      listed_gpu_cost: before.listed_gpu_cost,
      end_date: before.end_date,
    });
    expectOk(await setMinBid(listed!, f(0)));
    expect(await show(listed!)).toMatchObject({ min_bid: 0, listed: true, listed_gpu_cost: 0.5 });
    // Bad prices, no price, another host's machine and an unknown one change nothing.
    for (const price of [-1, 'cheap', 100001, null]) {
      const no = await setMinBid(unlisted!, price);
      expect(no.status, String(price)).toBe(400);
      expect(no.body.error).toBe('bad_request');
      expect(typeof no.body.msg).toBe('string');
    }
    const other = (await t().user()).apiKey;
    expect((await setMinBid(unlisted!, f(0.1), other)).status).toBe(404);
    expect((await setMinBid(999999, f(0.1))).status).toBe(404);
    expect(await show(unlisted!)).toMatchObject({ min_bid_price: 0.25, min_bid: 1 });
    await t().deps.db.deleteFrom('machines').where('id', 'in', [unlisted!, listed!]).execute();
  });

  it('show earnings: per machine and per day, for the current period by default; -m takes one machine', async () => {
    // The CLI sends days since the epoch as floats, both now − 1 day ("yesterday") without -s/-e,
    // and machid=null without -m; it prints the reply as JSON. openrig reads that default as the
    // current period (this UTC month through today), so a host who started today sees today.
    const yesterday = t().clock.now() / 86_400_000 - 1;
    const today = Math.floor(yesterday + 1);
    const d = new Date(today * 86_400_000);
    const monthStart = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / 86_400_000;
    const r = await cli(t(), {
      method: 'GET',
      path: '/users/me/machine-earnings',
      query: { owner: 'me', sday: yesterday, eday: yesterday, machid: null },
      key,
    });
    expectOk(r);
    expect([r.body.sday, r.body.eday]).toEqual([monthStart, today]);
    expect(r.body.per_day).toHaveLength(today - monthStart + 1);
    // -s today alone: its default end (now − 1 day) is not a 400 but today.
    const fromToday = await cli(t(), {
      method: 'GET',
      path: '/users/me/machine-earnings',
      query: { owner: 'me', sday: today, eday: yesterday, machid: null },
      key,
    });
    expectOk(fromToday);
    expect([fromToday.body.sday, fromToday.body.eday]).toEqual([today, today]);
    expect(r.body.per_machine.map((x: { machine_id: number }) => x.machine_id)).toEqual(m);
    expect(Object.keys(r.body.summary).sort()).toEqual([
      'total_bwd',
      'total_bwu',
      'total_earn',
      'total_gpu',
      'total_stor',
    ]);
    const one = await cli(t(), {
      method: 'GET',
      path: '/users/me/machine-earnings',
      query: { owner: 'me', sday: yesterday - 6, eday: yesterday, machid: m[1] },
      key,
    });
    expectOk(one);
    // -s a week ago without -e: through today.
    expect([one.body.sday, one.body.eday]).toEqual([today - 7, today]);
    expect(one.body.per_day).toHaveLength(8);
    expect(one.body.per_machine.map((x: { machine_id: number }) => x.machine_id)).toEqual([m[1]]);
  });

  it('show machines: `machines` rows with the table columns; -q reads id', async () => {
    const r = await cli(t(), { method: 'GET', path: '/machines', query: { owner: 'me' }, key });
    expectOk(r);
    expect(r.body.machines.map((x: { id: number }) => x.id)).toEqual(m);
    for (const row of r.body.machines) expectTableFields(row, MACHINE_TABLE);
  });

  it("show machine ID: a bare array of the one row; someone else's machine is a 404 with a msg", async () => {
    const r = await cli(t(), { method: 'GET', path: `/machines/${m[0]}`, query: { owner: 'me' }, key });
    expectOk(r);
    expect(Array.isArray(r.body)).toBe(true);
    expect(r.body).toHaveLength(1);
    expect(r.body[0].id).toBe(m[0]);
    expectTableFields(r.body[0], MACHINE_TABLE);
    const other = (await t().user()).apiKey;
    const no = await cli(t(), {
      method: 'GET',
      path: `/machines/${m[0]}`,
      query: { owner: 'me' },
      key: other,
    });
    expect(no.status).toBe(404);
    expect(typeof no.body.msg).toBe('string');
  });

  it('list machine / list machines: null for every option not given keeps the current price', async () => {
    const body = (machine: number, over: Record<string, unknown>) => ({
      machine,
      price_gpu: 0.5,
      price_disk: null,
      price_inetu: null,
      price_inetd: null,
      price_min_bid: null,
      min_chunk: null,
      end_date: null,
      credit_discount_max: null,
      duration: null,
      vol_size: null,
      vol_price: null,
      ...over,
    });
    const r = await cli(t(), { method: 'PUT', path: '/machines/create_asks/', key, json: body(m[0]!, {}) });
    expectOk(r);
    expect(r.body.success).toBe(true);
    // price_disk: null kept the disk price it had (0.2), not 0.
    const kept = (await cli(t(), { method: 'GET', path: `/machines/${m[0]}`, query: { owner: 'me' }, key }))
      .body[0];
    expect(kept).toMatchObject({ listed: true, listed_gpu_cost: 0.5, listed_storage_cost: 0.2 });
    const end = Math.floor(t().clock.now() / 1000) + 86400 * 30;
    for (const id of m) {
      const many = await cli(t(), {
        method: 'PUT',
        path: '/machines/create_asks/',
        key,
        json: body(id, { price_disk: 0.1, price_min_bid: 0.2, end_date: f(end) }),
      });
      expectOk(many);
      expect(many.body.success).toBe(true);
    }
    const rows = (await cli(t(), { method: 'GET', path: '/machines', query: { owner: 'me' }, key })).body
      .machines;
    expect(rows[0]).toMatchObject({
      listed: true,
      listed_gpu_cost: 0.5,
      listed_storage_cost: 0.1,
      end_date: end,
    });
    const first = (await cli(t(), { method: 'GET', path: `/machines/${m[0]}`, query: { owner: 'me' }, key }))
      .body[0];
    expect(first.listed_storage_cost).toBe(0.1);
  });

  it('schedule maint, show maints -ids (a bare array), cancel maint', async () => {
    const sdate = Math.floor(t().clock.now() / 1000) + 7200;
    const s = await cli(t(), {
      method: 'PUT',
      path: `/machines/${m[0]}/dnotify/`,
      key,
      json: { client_id: 'me', sdate: f(sdate), duration: f(2), maintenance_category: 'power' },
    });
    expectOk(s);
    expect(s.body.success).toBe(true);
    const list = await cli(t(), {
      method: 'GET',
      path: '/machines/maintenances',
      query: { owner: 'me', machine_ids: m },
      key,
    });
    expectOk(list);
    expect(Array.isArray(list.body)).toBe(true);
    expect(list.body).toHaveLength(1);
    expect(list.body[0]).toMatchObject({
      machine_id: m[0],
      start_time: sdate,
      end_time: sdate + 7200,
      duration_hours: 2,
      maintenance_category: 'power',
    });
    const c = await cli(t(), {
      method: 'PUT',
      path: `/machines/${m[0]}/cancel_maint/`,
      key,
      json: { client_id: 'me', machine_id: m[0] },
    });
    expectOk(c);
    expect(c.body.success).toBe(true);
    const after = await cli(t(), {
      method: 'GET',
      path: '/machines/maintenances',
      query: { owner: 'me', machine_ids: m },
      key,
    });
    expect(after.body).toEqual([]);
  });

  it('schedule maint without --maintenance_category: the CLI\'s "not provided" is the default category', async () => {
    const renter = await t().user({ fullName: 'Ada Renter' });
    const [inst] = await insertInstances(t().deps.db, [{ machineId: m[1]!, userId: renter.id }]);
    const sdate = Math.floor(t().clock.now() / 1000) + 86400;
    const s = await cli(t(), {
      method: 'PUT',
      path: `/machines/${m[1]}/dnotify/`,
      key,
      json: { client_id: 'me', sdate: f(sdate), duration: f(1.5), maintenance_category: 'not provided' },
    });
    expectOk(s);
    expect(s.body).toMatchObject({ success: true, notifications_sent: 1 });
    const list = await cli(t(), {
      method: 'GET',
      path: '/machines/maintenances',
      query: { owner: 'me', machine_ids: [m[1]] },
      key,
    });
    expect(list.body).toEqual([
      expect.objectContaining({
        machine_id: m[1],
        start_time: sdate,
        end_time: sdate + 5400,
        duration_hours: 1.5,
        maintenance_category: 'other',
      }),
    ]);
    // The renter's e-mail names the default category and never the CLI's placeholder.
    const mail = await t()
      .deps.db.selectFrom('email_outbox')
      .select(['subject', 'text_body', 'html_body'])
      .where('to_addr', '=', renter.email)
      .executeTakeFirstOrThrow();
    expect(mail.subject).toMatch(new RegExp(`^Scheduled maintenance on machine ${m[1]}: .* \\(other\\)$`));
    expect(mail.text_body).toContain('Hello Ada Renter,');
    expect(mail.text_body).toContain('  Duration: 1.5 hours\n  Category: other\n');
    expect(mail.text_body).toContain(`Your instance on this machine: ${inst}.`);
    for (const part of [mail.subject, mail.text_body, mail.html_body ?? ''])
      expect(part).not.toContain('not provided');
    const c = await cli(t(), {
      method: 'PUT',
      path: `/machines/${m[1]}/cancel_maint/`,
      key,
      json: { client_id: 'me', machine_id: m[1] },
    });
    expectOk(c);
  });

  it('unlist machine: success', async () => {
    const r = await cli(t(), { method: 'DELETE', path: `/machines/${m[0]}/asks/`, key, json: {} });
    expectOk(r);
    expect(r.body.success).toBe(true);
    const first = (await cli(t(), { method: 'GET', path: `/machines/${m[0]}`, query: { owner: 'me' }, key }))
      .body[0];
    expect(first.listed).toBe(false);
  });

  it('delete machine ID: POST /machines/ID/force_delete/ {}; success, or a 4xx whose text says why', async () => {
    const [idle, busy] = await insertMachines(
      t().deps.db,
      [1, 2].map(() => ({ hostId, gpuName: 'RTX 4090', numGpus: 1, priceGpu: 0.4 })),
      t().clock.now(),
    );
    const del = (id: number, k: string = key) =>
      cli(t(), { method: 'POST', path: `/machines/${id}/force_delete/`, key: k, json: {} });
    // The CLI reads `success` (and prints `msg` when it is false) from a 200.
    const r = await del(idle!);
    expectOk(r);
    expect(r.body).toMatchObject({ success: true, msg: `Machine ${idle} deleted` });
    const rows = (await cli(t(), { method: 'GET', path: '/machines', query: { owner: 'me' }, key })).body
      .machines as { id: number }[];
    expect(rows.map((x) => x.id)).not.toContain(idle);
    // A client's live instance: the CLI prints the reply text and the status.
    const client = (await renter(t())).apiKey;
    const rent = await cli(t(), {
      method: 'PUT',
      path: `/asks/${busy}/`,
      key: client,
      json: { client_id: 'me', image: 'ubuntu:22.04', env: {}, price: null, disk: f(10) },
    });
    expectOk(rent);
    const no = await del(busy!);
    expect([no.status, no.contentType, no.body.error]).toEqual([409, 'application/json', 'machine_in_use']);
    expect(no.body.msg).toContain('1 live instance of a client');
    // Another host's machine and an unknown one: 404 with a msg.
    expect((await del(busy!, (await t().user()).apiKey)).status).toBe(404);
    expect((await del(999_999)).body).toMatchObject({
      error: 'not_found',
      msg: 'No such machine, or it is not yours',
    });
  });
});
