// The official CLI's renter commands, each request as that CLI sends it, each reply checked for
// every field the CLI reads (docs/compatibility.md, rows marked "works").
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { PUB2, offers, renter } from '../helpers/market.js';
import { reportInstanceStatus } from '../../src/server/modules/instances/instances.moves.js';
import { insertMachines } from '../../src/server/modules/machines/machines.service.js';
import { cli, cliCreateBody, expectOk, expectTableFields, f, type Kind } from './official-cli.js';

// The columns of the CLI's offers table and what each is formatted as.
const OFFER_TABLE: Record<string, Kind> = {
  id: 'any',
  cuda_max_good: 'num',
  num_gpus: 'any',
  gpu_name: 'any',
  pcie_bw: 'num',
  cpu_ghz: 'num',
  cpu_cores_effective: 'num',
  cpu_ram: 'num',
  gpu_ram: 'num',
  disk_space: 'num',
  dph_total: 'num',
  dlperf: 'num',
  dlperf_per_dphtotal: 'num',
  score: 'num',
  driver_version: 'any',
  inet_up: 'num',
  inet_down: 'num',
  reliability: 'num',
  duration: 'num',
  machine_id: 'any',
  verification: 'any',
  host_id: 'any',
  direct_port_count: 'any',
  geolocation: 'any',
};

// The columns of the CLI's instances table.
const INSTANCE_TABLE: Record<string, Kind> = {
  id: 'any',
  machine_id: 'any',
  actual_status: 'any',
  num_gpus: 'any',
  gpu_name: 'any',
  gpu_util: 'num',
  cpu_cores_effective: 'num',
  cpu_ram: 'num',
  disk_space: 'num',
  ssh_host: 'any',
  ssh_port: 'any',
  dph_total: 'num',
  image_uuid: 'any',
  inet_up: 'num',
  inet_down: 'num',
  reliability2: 'num',
  label: 'any',
  duration: 'num',
  uptime_mins: 'num',
};

const DEFAULT_SEARCH = {
  verified: { eq: true },
  external: { eq: false },
  rentable: { eq: true },
  rented: { eq: false },
};

describeEachDb('official CLI: renter commands', (dialect) => {
  const t = useTestApp(dialect);
  let key: string;
  let pool: number[];
  beforeAll(async () => {
    key = (await renter(t())).apiKey;
    pool = await offers(t(), 8, { numGpus: 2 });
    await t().deps.db.updateTable('machines').set({ verified: 1 }).where('id', 'in', pool).execute();
  });

  it('startup: GET /gpu_names/unique/ answers with no key at all', async () => {
    const r = await cli(t(), { method: 'GET', path: '/gpu_names/unique/', key: null });
    expectOk(r);
    expect(r.body.gpu_names).toContain('RTX 4090');
    expect(r.body.gpu_names.every((n: unknown) => typeof n === 'string')).toBe(true);
  });

  it('search offers: the default query and a typed one, replied as exactly application/json', async () => {
    const plain = await cli(t(), {
      method: 'POST',
      path: '/bundles/',
      key,
      json: { ...DEFAULT_SEARCH, order: [['score', 'desc']], type: 'on-demand', allocated_storage: f(5) },
    });
    expectOk(plain);
    expect(plain.body.offers.length).toBeGreaterThan(0);
    for (const o of plain.body.offers) {
      expectTableFields(o, OFFER_TABLE);
      // The CLI filters rows on `rented` itself; false or absent is kept.
      expect(o.rented ?? false).toBe(false);
    }
    const typed = await cli(t(), {
      method: 'POST',
      path: '/bundles/',
      key,
      json: {
        ...DEFAULT_SEARCH,
        gpu_name: { eq: 'RTX 4090' },
        num_gpus: { gte: '2' },
        order: [['dph_total', 'asc']],
        type: 'on-demand',
        limit: 3,
        allocated_storage: f(5),
      },
    });
    expectOk(typed);
    expect(typed.body.offers).toHaveLength(3);
    expect(typed.body.offers.every((o: { gpu_name: string }) => o.gpu_name === 'RTX 4090')).toBe(true);
  });

  /** Machines of one GPU model, one per hardware value, as a test of one search field lists them. */
  async function machinesWith(gpuName: string, hardware: Record<string, string>[]): Promise<number[]> {
    const host = await t().user();
    return insertMachines(
      t().deps.db,
      hardware.map((h) => ({ hostId: host.id, gpuName, numGpus: 1, hardware: h })),
      t().clock.now(),
    );
  }

  /** `vastai search offers 'gpu_name=GPU FIELD…'` as the CLI puts it on the wire: the offers. */
  async function searchBy(
    gpuName: string,
    field: string,
    value: unknown,
  ): Promise<Record<string, unknown>[]> {
    const r = await cli(t(), {
      method: 'POST',
      path: '/bundles/',
      key,
      json: {
        ...DEFAULT_SEARCH,
        gpu_name: { eq: gpuName },
        [field]: value,
        order: [['score', 'desc']],
        type: 'on-demand',
        allocated_storage: f(5),
      },
    });
    expectOk(r);
    for (const o of r.body.offers) expectTableFields(o, OFFER_TABLE);
    return r.body.offers;
  }

  /**
   * Machines leave as they do in the app, soft-deleted: on SQLite a hard delete of the newest rows
   * hands their change versions to the next rows, which the offer index has already seen.
   */
  async function retire(ids: number[]): Promise<void> {
    await t()
      .deps.db.updateTable('machines')
      .set({ deleted_at: t().clock.now() })
      .where('id', 'in', ids)
      .execute();
  }

  it("search offers 'geolocation=CA', 'geolocation in [NO,DE]', 'geolocation!=NO': by country code", async () => {
    const ids = await machinesWith(
      'L40S',
      ['Montreal, CA', 'Oslo, NO', 'Frankfurt, DE'].map((geolocation) => ({ geolocation })),
    );
    const geos = async (geolocation: unknown) =>
      (await searchBy('L40S', 'geolocation', geolocation)).map((o) => String(o.geolocation)).sort();
    expect(await geos({ eq: 'CA' })).toEqual(['Montreal, CA']);
    expect(await geos({ in: ['NO', 'DE'] })).toEqual(['Frankfurt, DE', 'Oslo, NO']);
    expect(await geos({ neq: 'NO' })).toEqual(['Frankfurt, DE', 'Montreal, CA']);
    expect(await geos({ notin: ['NO', 'DE'] })).toEqual(['Montreal, CA']);
    // geolocation="Montreal,_CA": the CLI turns the underscore into a space.
    expect(await geos({ eq: 'Montreal, CA' })).toEqual(['Montreal, CA']);
    await retire(ids);
  });

  it("search offers 'driver_version >= 535.86.05': the CLI sends the version's number, 535086005", async () => {
    const ids = await machinesWith(
      'L4',
      ['535.86.05', '470.199.02'].map((driver_version) => ({ driver_version })),
    );
    const drivers = async (driver_version: unknown) =>
      (await searchBy('L4', 'driver_version', driver_version)).map((o) => String(o.driver_version)).sort();
    // vastai search offers 'gpu_name=L4 driver_version >= 535.86.05'
    expect(await drivers({ gte: 535086005 })).toEqual(['535.86.05']);
    // vastai search offers 'gpu_name=L4 driver_version = 535.86.05'
    expect(await drivers({ eq: 535086005 })).toEqual(['535.86.05']);
    // vastai search offers 'gpu_name=L4 driver_version < 535.86.05'
    expect(await drivers({ lt: 535086005 })).toEqual(['470.199.02']);
    await retire(ids);
  });

  /** The host's agent reports the instance loading, then running. */
  async function agentRuns(instance: number): Promise<void> {
    for (const s of ['loading', 'running'] as const) {
      const d = await reportInstanceStatus(t().deps, instance, s);
      expect(d.kind, JSON.stringify(d)).not.toBe('reject');
    }
  }

  let id: number;
  it('create instance: the full body the CLI sends, with null for every option not given', async () => {
    const r = await cli(t(), {
      method: 'PUT',
      path: `/asks/${pool[0]}/`,
      key,
      json: cliCreateBody({
        env: { A: '1', '-p 8080:8080': '1' },
        disk: f(20),
        onstart: 'echo hi',
        runtype: 'ssh_direc ssh_proxy',
      }),
    });
    expectOk(r);
    expect(r.body.success).toBe(true);
    expect(Number.isInteger(r.body.new_contract)).toBe(true);
    id = r.body.new_contract;
    await reportInstanceStatus(t().deps, id, 'loading');
    await reportInstanceStatus(t().deps, id, 'running', {
      ssh_host: '10.0.0.1',
      ssh_port: 40022,
      ports: { '22/tcp': [{ HostIp: '0.0.0.0', HostPort: '40022' }] },
    });
  });

  it('show instances (and ssh-url, scp-url): v1 pages with the fields the table and the URL need', async () => {
    const r = await cli(t(), {
      method: 'GET',
      path: '/api/v1/instances/',
      query: { select_filters: {}, order_by: [{ col: 'id', dir: 'asc' }], limit: 25 },
      key,
    });
    expectOk(r);
    expect(r.body.next_token ?? null).toBeNull();
    const row = r.body.instances.find((x: { id: number }) => x.id === id);
    expect(typeof row.start_date).toBe('number');
    expect(Array.isArray(row.extra_env)).toBe(true);
    for (const pair of row.extra_env) expect(pair).toHaveLength(2);
    expectTableFields(row, INSTANCE_TABLE);
    // ssh-url: "22/tcp" → public_ipaddr and HostPort (else ssh_host and ssh_port).
    const hostPort = Number(row.ports['22/tcp'][0].HostPort);
    expect(hostPort).toBe(40022);
    expect(typeof row.public_ipaddr).toBe('string');
    expect(row.public_ipaddr.length).toBeGreaterThan(0);
  });

  it('show instances-v1: select_cols, status and verification filters, the summary and filter panels', async () => {
    // The CLI's select_cols, then those its -v adds.
    const cols = [
      ...['id', 'actual_status', 'label', 'num_gpus', 'gpu_name', 'gpu_util', 'disk_space', 'disk_usage'],
      ...['disk_util', 'volume_info', 'dph_total', 'image_uuid', 'start_date', 'verification'],
    ];
    const verbose = [
      ...cols,
      ...['machine_id', 'template_id', 'template_name', 'geolocation', 'inet_up', 'inet_down'],
      ...['ssh_host', 'ssh_port', 'status_msg'],
    ];
    const r = await cli(t(), {
      method: 'GET',
      path: '/api/v1/instances/',
      query: {
        select_filters: { actual_status: { in: ['running'] } },
        order_by: [{ col: 'id', dir: 'asc' }],
        limit: 25,
        select_cols: cols,
      },
      key,
    });
    expectOk(r);
    expect(r.body.instances.map((x: { id: number }) => x.id)).toEqual([id]);
    expectTableFields(r.body.instances[0], INSTANCE_TABLE);
    // Each row carries the columns asked for that openrig has, and nothing else.
    const row = r.body.instances[0];
    for (const k of Object.keys(row)) expect(cols).toContain(k);
    for (const k of ['id', 'actual_status', 'label', 'num_gpus', 'gpu_name', 'disk_space', 'dph_total'])
      expect(row).toHaveProperty(k);
    for (const k of ['image_uuid', 'start_date', 'verification']) expect(row).toHaveProperty(k);
    // `--order-by dph_total desc -v`: the CLI appends id.
    const byPrice = await cli(t(), {
      method: 'GET',
      path: '/api/v1/instances/',
      query: {
        select_filters: {},
        order_by: [
          { col: 'dph_total', dir: 'desc' },
          { col: 'id', dir: 'asc' },
        ],
        limit: 25,
        select_cols: verbose,
      },
      key,
    });
    expectOk(byPrice);
    expect(byPrice.body.next_token).toBeNull();
    const priced = byPrice.body.instances.find((x: { id: number }) => x.id === id);
    for (const k of Object.keys(priced)) expect(verbose).toContain(k);
    expect(priced).toMatchObject({ ssh_host: '10.0.0.1', ssh_port: 40022, machine_id: expect.any(Number) });
    expect(typeof priced.dph_total).toBe('number');
    expectTableFields(priced, INSTANCE_TABLE);
    const none = await cli(t(), {
      method: 'GET',
      path: '/api/v1/instances/',
      query: {
        select_filters: { actual_status: { in: ['exited'] } },
        order_by: [{ col: 'id', dir: 'asc' }],
        limit: 25,
        select_cols: cols,
      },
      key,
    });
    expectOk(none);
    expect(none.body.instances).toEqual([]);
    // Its summary panel: "Total: N instances" and the labels, from every page's counts.
    expect(r.body.total_instances).toBe(1);
    expect(Object.values(r.body.label_counts)).toEqual([1]);
    expect(none.body.total_instances).toBe(0);
    expect(none.body.label_counts).toEqual({});
    // Its filter panel, asked for first: the distinct statuses, verifications and GPU names.
    const filters = await cli(t(), { method: 'GET', path: '/instances/filters/', key });
    expectOk(filters);
    expect(filters.body.filters).toEqual([
      { actual_status: 'running', verification: expect.any(String), gpu_name: expect.any(String) },
    ]);
    // Its `--verification` filter, on the machine's verification as offers show it.
    const verification = r.body.instances[0].verification;
    const byVerification = await cli(t(), {
      method: 'GET',
      path: '/api/v1/instances/',
      query: {
        select_filters: { verification: { in: [verification] } },
        order_by: [{ col: 'id', dir: 'asc' }],
        limit: 25,
        select_cols: cols,
      },
      key,
    });
    expectOk(byVerification);
    expect(byVerification.body.instances.map((x: { id: number }) => x.id)).toEqual([id]);
  });

  it("show instances-v1's Disk and GPU columns: used/size GB (N%) and the GPUs' utilisation once the host measured them", async () => {
    // The CLI's own formatting of the two columns (_fmt_disk, _fmt_gpu).
    const fmtDisk = (x: { disk_usage?: number | null; disk_space?: number; disk_util?: number | null }) => {
      const total = typeof x.disk_space === 'number' ? x.disk_space.toFixed(0) : '?';
      if (typeof x.disk_usage !== 'number' || x.disk_usage < 0) return `?/${total} GB`;
      const used = x.disk_usage.toFixed(1);
      return typeof x.disk_util === 'number' && x.disk_util >= 0
        ? `${used}/${total} GB (${(x.disk_util * 100).toFixed(0)}%)`
        : `${used}/${total} GB`;
    };
    const cols = [
      'id',
      'actual_status',
      'num_gpus',
      'gpu_name',
      'gpu_util',
      'disk_space',
      'disk_usage',
      'disk_util',
    ];
    const row = async () => {
      const r = await cli(t(), {
        method: 'GET',
        path: '/api/v1/instances/',
        query: { select_filters: {}, order_by: [{ col: 'id', dir: 'asc' }], limit: 25, select_cols: cols },
        key,
      });
      expectOk(r);
      return r.body.instances.find((x: { id: number }) => x.id === id);
    };
    const before = await row();
    expect(before).toMatchObject({ disk_space: 20, disk_usage: null, disk_util: null, gpu_util: null });
    expect(fmtDisk(before)).toBe('?/20 GB');
    // The host's agent reports what it measured with its next heartbeat.
    await reportInstanceStatus(t().deps, id, 'running', { disk_usage_bytes: 2_540_000_000, gpu_util: 71.6 });
    const after = await row();
    expectTableFields(after, { gpu_util: 'num', disk_usage: 'num', disk_util: 'num' });
    expect(fmtDisk(after)).toBe('2.5/20 GB (13%)');
    expect(after.gpu_util).toBe(71.6);
  });

  it('show instance: one object under `instances`, null when not the caller', async () => {
    const r = await cli(t(), { method: 'GET', path: `/instances/${id}/`, query: { owner: 'me' }, key });
    expectOk(r);
    expect(typeof r.body.instances.start_date).toBe('number');
    expect(Array.isArray(r.body.instances.extra_env)).toBe(true);
    expectTableFields(r.body.instances, INSTANCE_TABLE);
    const other = (await t().user()).apiKey;
    const none = await cli(t(), {
      method: 'GET',
      path: `/instances/${id}/`,
      query: { owner: 'me' },
      key: other,
    });
    expectOk(none);
    expect(none.body.instances).toBeNull();
  });

  it('stop instances, start instances, stop instance, start instance, label instance: success', async () => {
    for (const state of ['stopped', 'running']) {
      const r = await cli(t(), { method: 'PUT', path: '/instances/', key, json: { state, ids: [id] } });
      expectOk(r);
      expect(r.body.success, r.text).toBe(true);
    }
    // A failure: the CLI prints `msg` (without one it would retry the whole request, re-sending it).
    const missing = await cli(t(), {
      method: 'PUT',
      path: '/instances/',
      key,
      json: { state: 'stopped', ids: [987654321] },
    });
    expectOk(missing);
    expect(missing.body.success).toBe(false);
    expect(missing.body.msg).toMatch(/^0 of 1 instance stopped; 987654321: /);
    // The host's agent brings it back up before the next stop.
    await agentRuns(id);
    for (const json of [{ state: 'stopped' }, { state: 'running' }, { label: 'hello' }]) {
      const r = await cli(t(), { method: 'PUT', path: `/instances/${id}/`, key, json });
      expectOk(r);
      expect(r.body.success, r.text).toBe(true);
      if (json.state === 'running') await agentRuns(id);
    }
    const shown = await cli(t(), { method: 'GET', path: `/instances/${id}/`, query: { owner: 'me' }, key });
    expect(shown.body.instances).toMatchObject({ label: 'hello', intended_status: 'running' });
  });

  it('attach ssh and detach ssh', async () => {
    const a = await cli(t(), { method: 'POST', path: `/instances/${id}/ssh/`, key, json: { ssh_key: PUB2 } });
    expectOk(a);
    expect(a.body.success).toBe(true);
    const keyId = a.body.key_id as number;
    const d = await cli(t(), { method: 'DELETE', path: `/instances/${id}/ssh/${keyId}/`, key, json: {} });
    expectOk(d);
    expect(d.body.success).toBe(true);
  });

  it('destroy instance (and destroy instances, one call per id): success, repeats harmless', async () => {
    for (let i = 0; i < 2; i++) {
      const r = await cli(t(), { method: 'DELETE', path: `/instances/${id}/`, key, json: {} });
      expectOk(r);
      expect(r.body.success).toBe(true);
    }
    const shown = await cli(t(), { method: 'GET', path: `/instances/${id}/`, query: { owner: 'me' }, key });
    expect(shown.body.instances).toBeNull();
  });
});

describeEachDb('official CLI: the anonymous GPU name list is limited per client address', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMIT_SEARCH: '3/60' });

  it('answers three calls from one address, then 429 with Retry-After; another address is not held up', async () => {
    const from = (ip: string) =>
      t().app.inject({ method: 'GET', url: '/api/v0/gpu_names/unique/', remoteAddress: ip });
    for (let i = 0; i < 3; i++) expect((await from('10.1.1.1')).statusCode).toBe(200);
    const held = await from('10.1.1.1');
    expect(held.statusCode).toBe(429);
    expect(Number(held.headers['retry-after'])).toBeGreaterThan(0);
    expect(JSON.parse(held.body).error).toBe('rate_limited');
    expect((await from('10.2.2.2')).statusCode).toBe(200);
  });
});

describeEachDb('official CLI: logs, execute, reboot instance, recycle instance', (dialect) => {
  const t = useTestApp(dialect);
  it('each request as the CLI sends it; the fields it reads; the result URL answers with no key', async () => {
    const key = (await renter(t())).apiKey;
    const [offer] = await offers(t(), 1);
    const c = await cli(t(), {
      method: 'PUT',
      path: `/asks/${offer}/`,
      key,
      json: { client_id: 'me', image: 'x', disk: f(10), runtype: 'ssh_proxy' },
    });
    const id = c.body.new_contract as number;
    for (const s of ['loading', 'running'] as const)
      await reportInstanceStatus(t().deps, id, s, { ssh_host: 'h', ssh_port: 40022 });
    const logs = await cli(t(), {
      method: 'PUT',
      path: `/instances/request_logs/${id}/`,
      key,
      json: { tail: '100' },
    });
    expectOk(logs);
    expect(logs.body.success).toBe(true);
    expect(typeof logs.body.msg).toBe('string');
    const pending = await t().app.inject({ method: 'GET', url: new URL(logs.body.result_url).pathname });
    expect(pending.statusCode).toBe(404);
    // `--daemon-logs` asks for the host's own log of the instance; anything but a yes/no is refused
    // and asks nothing of the host.
    const argsOf = async () =>
      (
        await t()
          .deps.db.selectFrom('instance_requests')
          .select('args')
          .where('instance_id', '=', id)
          .where('kind', '=', 'logs')
          .orderBy('id')
          .execute()
      ).map((r) => JSON.parse(r.args) as Record<string, unknown>);
    expectOk(
      await cli(t(), {
        method: 'PUT',
        path: `/instances/request_logs/${id}/`,
        key,
        json: { tail: '5', daemon_logs: 'true' },
      }),
    );
    const bad = await cli(t(), {
      method: 'PUT',
      path: `/instances/request_logs/${id}/`,
      key,
      json: { daemon_logs: 'maybe' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('bad_request');
    expect(await argsOf()).toEqual([
      { tail: 100, filter: null },
      { tail: 5, filter: null, daemon: true },
    ]);
    const ex = await cli(t(), {
      method: 'PUT',
      path: `/instances/command/${id}/`,
      key,
      json: { command: 'ls -l' },
    });
    expectOk(ex);
    expect(ex.body).toMatchObject({ success: true, writeable_path: '' });
    expect(typeof ex.body.result_url).toBe('string');
    // Reboot moves the instance to loading until its host has done it, so each kind on its own
    // running instance.
    for (const kind of ['reboot', 'recycle']) {
      const other = await cli(t(), {
        method: 'PUT',
        path: `/asks/${(await offers(t(), 1))[0]}/`,
        key,
        json: { client_id: 'me', image: 'x', disk: f(10), runtype: 'ssh_proxy' },
      });
      const oid = other.body.new_contract as number;
      for (const s of ['loading', 'running'] as const)
        await reportInstanceStatus(t().deps, oid, s, { ssh_host: 'h', ssh_port: 40023 });
      const r = await cli(t(), { method: 'PUT', path: `/instances/${kind}/${oid}/`, key, json: {} });
      expectOk(r);
      expect(r.body.success, r.text).toBe(true);
    }
  });
});
