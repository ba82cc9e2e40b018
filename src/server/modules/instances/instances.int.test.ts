// The instance quick path against a real database: create, show, list, stop/start, destroy,
// bulk forms, Idempotency-Key, the instance key's limits, SSH key attachment.
import { beforeAll, describe, expect, it } from 'vitest';
import { gzipSync } from 'node:zlib';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { decryptSecret } from '../../crypto.js';
import { PUB, PUB2, offers, renter, jsonQuery } from '../../../../test/helpers/market.js';
import { authorizedKeysFor, reportInstanceStatus, setActualStatus } from './instances.moves.js';

describeEachDb('instances', (dialect) => {
  const t = useTestApp(dialect);
  let u: Awaited<ReturnType<typeof renter>>;
  let pool: number[] = [];
  const next = () => pool.shift()!;

  beforeAll(async () => {
    u = await renter(t());
    pool = await offers(t(), 40);
  });

  const create = (offer: number, body: unknown, key = u.apiKey, headers: Record<string, string> = {}) =>
    t().request('PUT', `/api/v0/asks/${offer}/`, { key, body, headers });

  it('creates an instance: {success, new_contract, instance_api_key}, then shows it with the compat row fields', async () => {
    const offer = next();
    const r = await create(offer, {
      client_id: 'me',
      image: 'pytorch/pytorch:latest',
      disk: 20,
      env: { FOO: 'bar', '-p 8080:8080': '1' },
      label: 'train',
      onstart: 'echo hi',
      runtype: 'ssh_proxy',
      price: null,
      python_utf8: false,
    });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    expect(r.body.new_contract).toBeTypeOf('number');
    expect(r.body.instance_api_key).toMatch(/^ori_/);
    const id = r.body.new_contract;
    const keyRow = await t()
      .deps.db.selectFrom('api_keys')
      .selectAll()
      .where('instance_id', '=', id)
      .executeTakeFirstOrThrow();
    expect(keyRow.kind).toBe('instance');
    expect(JSON.stringify(keyRow)).not.toContain(r.body.instance_api_key);
    // The same key is sealed for the agent to inject as CONTAINER_API_KEY.
    const sealed = await t()
      .deps.db.selectFrom('instances')
      .select('container_key_enc')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(decryptSecret(t().config.secretKey, sealed.container_key_enc!)).toBe(r.body.instance_api_key);

    const one = await t().request('GET', `/api/v0/instances/${id}/?owner=me`, { key: u.apiKey });
    expect(one.status).toBe(200);
    const row = one.body.instances;
    expect(row).toMatchObject({
      id,
      machine_id: offer,
      actual_status: null,
      intended_status: 'running',
      image_uuid: 'pytorch/pytorch:latest',
      label: 'train',
      disk_space: 20,
      gpu_name: 'RTX 4090',
      num_gpus: 1,
      ssh_host: null,
      ssh_port: null,
      ports: {},
      status_msg: '',
    });
    expect(row.extra_env).toEqual([['FOO', 'bar']]);
    expect(row.start_date).toBeTypeOf('number');
    expect(row.dph_total).toBeCloseTo(0.5 + (0.1 * 20) / 720, 9);
    expect(row.allowed_actions).toEqual(['stop', 'destroy', 'label', 'ssh_attach']);
    for (const f of [
      'gpu_util',
      'cpu_cores_effective',
      'cpu_ram',
      'public_ipaddr',
      'inet_up',
      'inet_down',
      'reliability2',
      'accrued_cost',
    ])
      expect(row).toHaveProperty(f);

    const list = await t().request('GET', '/api/v0/instances/?owner=me', { key: u.apiKey });
    expect(list.body.instances_found).toBe(list.body.instances.length);
    expect(list.body.instances.map((i: { id: number }) => i.id)).toContain(id);
    expect(await authorizedKeysFor(t().deps.db, id)).toEqual([PUB]);

    // duration: the instance's age in seconds, on every read of it.
    expect(row.duration).toBeCloseTo(t().clock.now() / 1000 - row.start_date, 6);
    t().clock.advance(90_000);
    const later = [
      (await t().request('GET', `/api/v0/instances/${id}/`, { key: u.apiKey })).body.instances,
      (await t().request('GET', '/api/v0/instances/', { key: u.apiKey })).body.instances.find(
        (i: { id: number }) => i.id === id,
      ),
      (await t().request('GET', '/api/v1/instances/?limit=1000', { key: u.apiKey })).body.instances.find(
        (i: { id: number }) => i.id === id,
      ),
    ];
    for (const x of later) expect(x.duration).toBeCloseTo(row.duration + 90, 6);
  });

  it('uptime_mins: minutes since it last became running, null while it is not running', async () => {
    const id = (await create(next(), { image: 'x' })).body.new_contract;
    const uptime = async () =>
      (await t().request('GET', `/api/v0/instances/${id}/`, { key: u.apiKey })).body.instances.uptime_mins;
    expect(await uptime()).toBeNull();
    await reportInstanceStatus(t().deps, id, 'loading');
    t().clock.advance(60_000);
    expect(await uptime()).toBeNull();
    await reportInstanceStatus(t().deps, id, 'running');
    expect(await uptime()).toBe(0);
    t().clock.advance(5 * 60_000);
    expect(await uptime()).toBeCloseTo(5, 9);
    // A second report of running keeps the start; the v0 and v1 lists show the same.
    await reportInstanceStatus(t().deps, id, 'running');
    const inList = async (path: string) =>
      (await t().request('GET', path, { key: u.apiKey })).body.instances.find(
        (i: { id: number }) => i.id === id,
      ).uptime_mins;
    expect(await inList('/api/v0/instances/')).toBeCloseTo(5, 9);
    expect(await inList('/api/v1/instances/?limit=1000')).toBeCloseTo(5, 9);
    expect(await setActualStatus(t().deps, id, 'running', 'exited')).toBe(true);
    expect(await uptime()).toBeNull();
    t().clock.advance(60_000);
    expect(await setActualStatus(t().deps, id, 'exited', 'running')).toBe(true);
    t().clock.advance(30_000);
    expect(await uptime()).toBeCloseTo(0.5, 9);
  });

  it('answers {instances: null} for a missing or foreign instance', async () => {
    const r = await create(next(), { image: 'ubuntu' });
    const other = await renter(t());
    const foreign = await t().request('GET', `/api/v0/instances/${r.body.new_contract}/`, {
      key: other.apiKey,
    });
    expect(foreign.status).toBe(200);
    expect(foreign.body).toEqual({ instances: null });
    const missing = await t().request('GET', '/api/v0/instances/99999999/', { key: u.apiKey });
    expect(missing.body).toEqual({ instances: null });
  });

  it('refuses bad creates with clear 4xx and changes nothing', async () => {
    const offer = next();
    const cases: [unknown, number, string][] = [
      [{}, 400, 'image'],
      [{ image: 'x', disk: -1 }, 400, 'disk'],
      [{ image: 'x', disk: 100000 }, 400, 'disk'],
      [{ image: 'x', env: { '-p 99999': '1' } }, 400, 'port'],
      [{ image: 'x', env: { CONTAINER_API_KEY: 'x' } }, 400, 'CONTAINER_API_KEY'],
      [{ image: 'x', onstart: 'x'.repeat(4049) }, 400, '4048'],
      [{ image: 'x', runtype: 'telnet' }, 400, 'telnet'],
      [{ image: 'x', price: 0.01 }, 400, 'minimum bid'],
    ];
    for (const [body, status, text] of cases) {
      const r = await create(offer, body);
      expect(r.status, JSON.stringify(body)).toBe(status);
      expect(r.body.msg).toContain(text);
      expect(r.body.success).toBe(false);
    }
    const m = await t()
      .deps.db.selectFrom('machines')
      .select('rented')
      .where('id', '=', offer)
      .executeTakeFirstOrThrow();
    expect(m.rented).toBe(0);
    expect(
      await t().deps.db.selectFrom('instances').select('id').where('machine_id', '=', offer).execute(),
    ).toEqual([]);
    const unknown = await create(987654321, { image: 'x' });
    expect(unknown.status).toBe(404);
    const noKey = await t().user();
    const nk = await create(offer, { image: 'x' }, noKey.apiKey);
    expect(nk.status).toBe(400);
    expect(nk.body.error).toBe('no_ssh_key');
    const broke = await renter(t(), { balanceUsd: 0 });
    expect((await create(offer, { image: 'x' }, broke.apiKey)).status).toBe(402);
  });

  it('decodes a gzip+base64 onstart longer than 4048 characters', async () => {
    const script = '#!/bin/sh\n' + 'echo line\n'.repeat(2000);
    const enc = gzipSync(Buffer.from(script)).toString('base64');
    const long = enc.length > 4048 ? enc : enc + ' '.repeat(4049 - enc.length);
    const r = await create(next(), { image: 'x', onstart: long });
    expect(r.status).toBe(200);
    const row = await t()
      .deps.db.selectFrom('instances')
      .select('onstart')
      .where('id', '=', r.body.new_contract)
      .executeTakeFirstOrThrow();
    expect(row.onstart).toBe(script);
  });

  it('refuses an offer that is no longer rentable with 409', async () => {
    const offer = next();
    expect((await create(offer, { image: 'x' })).status).toBe(200);
    const again = await create(offer, { image: 'x' });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('offer_unavailable');
    expect(again.body.msg).toContain('rented');
  });

  it('replays the same reply for the same Idempotency-Key and body, 422 for another body', async () => {
    const offer = next();
    const h = { 'idempotency-key': `k-${dialect}-1` };
    const a = await create(offer, { image: 'x', disk: 10 }, u.apiKey, h);
    const b = await create(offer, { image: 'x', disk: 10 }, u.apiKey, h);
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(b.body).toEqual(a.body);
    const c = await create(offer, { image: 'y', disk: 10 }, u.apiKey, h);
    expect(c.status).toBe(422);
    const n = await t()
      .deps.db.selectFrom('instances')
      .select('id')
      .where('machine_id', '=', offer)
      .execute();
    expect(n).toHaveLength(1);
  });

  it('stops and starts (repeats harmless), refuses actions that make no sense, and destroys', async () => {
    const r = await create(next(), { image: 'x' });
    const id = r.body.new_contract as number;
    const put = (state: string) =>
      t().request('PUT', `/api/v0/instances/${id}/`, { key: u.apiKey, body: { state } });
    await reportInstanceStatus(t().deps, id, 'loading');
    const loading = await t().request('GET', `/api/v0/instances/${id}/`, { key: u.apiKey });
    expect(loading.body.instances).toMatchObject({ direct_port_start: -1, direct_port_end: -1 });
    await reportInstanceStatus(t().deps, id, 'running', {
      ssh_host: '10.0.0.1',
      ssh_port: 40022,
      ports: {
        '22/tcp': [{ HostIp: '0.0.0.0', HostPort: '40022' }],
        '8080/tcp': [{ HostIp: '0.0.0.0', HostPort: '40031' }],
        '6006/tcp': [{ HostIp: '0.0.0.0', HostPort: '40017' }],
      },
    });
    const shown = await t().request('GET', `/api/v0/instances/${id}/`, { key: u.apiKey });
    expect(shown.body.instances).toMatchObject({
      actual_status: 'running',
      ssh_host: '10.0.0.1',
      ssh_port: 40022,
      direct_port_start: 40017,
      direct_port_end: 40031,
    });
    expect((await put('stopped')).body).toMatchObject({ success: true });
    expect((await put('stopped')).status).toBe(200);
    let row = (await t().request('GET', `/api/v0/instances/${id}/`, { key: u.apiKey })).body.instances;
    expect(row).toMatchObject({
      actual_status: 'stopped',
      intended_status: 'stopped',
      allowed_actions: ['start', 'destroy', 'label', 'ssh_attach'],
    });
    expect((await put('running')).status).toBe(200);
    row = (await t().request('GET', `/api/v0/instances/${id}/`, { key: u.apiKey })).body.instances;
    expect(row).toMatchObject({ actual_status: 'stopped', intended_status: 'running' });
    expect((await reportInstanceStatus(t().deps, id, 'loading')).kind).toBe('apply');
    // An instance gone offline can't be started: a clear 4xx naming the state.
    expect(await setActualStatus(t().deps, id, 'loading', 'offline')).toBe(true);
    const bad = await put('running');
    expect(bad.status).toBe(409);
    expect(bad.body.msg).toContain('offline');
    expect((await put('sideways')).status).toBe(400);
    // A refused state change leaves the label alone too (nothing half-written).
    const both = await t().request('PUT', `/api/v0/instances/${id}/`, {
      key: u.apiKey,
      body: { state: 'running', label: 'never' },
    });
    expect(both.status).toBe(409);
    const lab = await t().request('PUT', `/api/v0/instances/${id}/`, {
      key: u.apiKey,
      body: { label: 'renamed' },
    });
    expect(lab.status).toBe(200);
    expect(
      (await t().request('GET', `/api/v0/instances/${id}/`, { key: u.apiKey })).body.instances.label,
    ).toBe('renamed');
    const del = await t().request('DELETE', `/api/v0/instances/${id}/`, { key: u.apiKey, body: {} });
    expect(del.status).toBe(200);
    expect(del.body.success).toBe(true);
    const again = await t().request('DELETE', `/api/v0/instances/${id}/`, { key: u.apiKey, body: {} });
    expect(again.body.success).toBe(true);
    expect(
      (await t().request('GET', `/api/v0/instances/${id}/`, { key: u.apiKey })).body.instances,
    ).toBeNull();
    expect((await put('stopped')).status).toBe(409);
    const m = await t()
      .deps.db.selectFrom('machines')
      .select('rented')
      .where('id', '=', row.machine_id)
      .executeTakeFirstOrThrow();
    expect(m.rented).toBe(0);
  });

  it('bulk stops and destroys; repeating the bulk destroy is harmless', async () => {
    const ids = [
      (await create(next(), { image: 'x' })).body.new_contract,
      (await create(next(), { image: 'x' })).body.new_contract,
    ];
    const stop = await t().request('PUT', '/api/v0/instances/', {
      key: u.apiKey,
      body: { state: 'stopped', ids },
    });
    expect(stop.body.success).toBe(true);
    expect(stop.body.msg).toBe('2 of 2 instances stopped');
    for (let i = 0; i < 3; i++) {
      const d = await t().request('DELETE', '/api/v0/instances/', {
        key: u.apiKey,
        body: { instance_ids: ids },
      });
      expect(d.status).toBe(200);
      expect(d.body.success).toBe(true);
    }
    const bad = await t().request('DELETE', '/api/v0/instances/', {
      key: u.apiKey,
      body: { instance_ids: [] },
    });
    expect(bad.status).toBe(400);
    const foreign = await t().request('DELETE', '/api/v0/instances/', {
      key: u.apiKey,
      body: { instance_ids: [99999999] },
    });
    expect(foreign.body.success).toBe(false);
    expect(foreign.body.results[0]).toMatchObject({ id: 99999999, success: false, error: 'not_found' });
    expect(foreign.body.msg).toBe(`0 of 1 instance destroyed; 99999999: ${foreign.body.results[0].msg}`);
    const many = await t().request('DELETE', '/api/v0/instances/', {
      key: u.apiKey,
      body: { instance_ids: [ids[0], 99999991, 99999992, 99999993, 99999994, 99999995, 99999996] },
    });
    expect(many.body.success).toBe(false);
    expect(many.body.msg).toMatch(
      /^1 of 7 instances destroyed; 99999991: .*; 99999995: [^;]*; and 1 more failed$/,
    );
  });

  it('pages the v1 list with next_token, filters and orders', async () => {
    const v = await renter(t());
    const ids: number[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        (await create(next(), { image: i % 2 ? 'odd' : 'even', label: `l${i}` }, v.apiKey)).body.new_contract,
      );
    const seen: number[] = [];
    let token: string | null = null;
    for (let page = 0; page < 5; page++) {
      const q = new URLSearchParams({ limit: '2', order_by: JSON.stringify([{ col: 'id', dir: 'desc' }]) });
      if (token) q.set('after_token', token);
      const r = await t().request('GET', `/api/v1/instances/?${q.toString()}`, { key: v.apiKey });
      expect(r.status).toBe(200);
      seen.push(...r.body.instances.map((i: { id: number }) => i.id));
      token = r.body.next_token ?? null;
      if (!token) break;
    }
    expect(seen).toEqual([...ids].reverse());
    const f = await t().request(
      'GET',
      `/api/v1/instances/?select_filters=${encodeURIComponent(JSON.stringify({ image_uuid: { eq: 'odd' } }))}`,
      { key: v.apiKey },
    );
    expect(f.body.instances.map((i: { id: number }) => i.id)).toEqual([ids[1], ids[3]]);
    const sf = (o: unknown) =>
      t().request('GET', `/api/v1/instances/?select_filters=${encodeURIComponent(JSON.stringify(o))}`, {
        key: v.apiKey,
      });
    expect((await sf({ actual_status: { in: [null] } })).body.instances).toHaveLength(5);
    expect((await sf({ actual_status: { in: [null, 'running'] } })).body.instances).toHaveLength(5);
    expect((await sf({ actual_status: { notin: [null] } })).body.instances).toHaveLength(0);
    expect((await sf({ actual_status: { eq: 'running' } })).body.instances).toHaveLength(0);
    expect(
      (await sf({ label: { in: ['l1', 'l2'] }, num_gpus: { gte: '1' } })).body.instances.map(
        (i: { id: number }) => i.id,
      ),
    ).toEqual([ids[1], ids[2]]);
    const forged = Buffer.from(JSON.stringify({ o: 'id:asc', v: ['abc'] })).toString('base64url');
    expect(
      (await t().request('GET', `/api/v1/instances/?after_token=${forged}`, { key: v.apiKey })).status,
    ).toBe(400);
    expect(
      (await t().request('GET', '/api/v1/instances/?after_token=%25%25', { key: v.apiKey })).status,
    ).toBe(400);
    const bad = await t().request(
      'GET',
      `/api/v1/instances/?select_filters=${encodeURIComponent(JSON.stringify({ nope: { eq: 1 } }))}`,
      { key: v.apiKey },
    );
    expect(bad.status).toBe(400);
    expect(bad.body.msg).toContain('nope');
  });

  it('counts the v1 list under its filters on every page, by label, and lists the values its filters take', async () => {
    const v = await renter(t());
    const mine = [next(), next(), next(), next()];
    const db = t().deps.db;
    await db
      .updateTable('machines')
      .set({ verified: 1, gpu_name: 'A100 SXM4' })
      .where('id', 'in', mine.slice(0, 2))
      .execute();
    await db.updateTable('machines').set({ verified: 0 }).where('id', 'in', mine.slice(2)).execute();
    const ids: number[] = [];
    for (const [i, o] of mine.entries())
      ids.push((await create(o, { image: 'x', label: i < 3 ? 'train' : '' }, v.apiKey)).body.new_contract);
    await reportInstanceStatus(t().deps, ids[0]!, 'loading');
    // Someone else's instance, on a GPU none of v's has: counted and listed for its owner only.
    const other = await renter(t());
    const theirs = next();
    await db.updateTable('machines').set({ gpu_name: 'H100 SXM' }).where('id', '=', theirs).execute();
    expect((await create(theirs, { image: 'x', label: 'train' }, other.apiKey)).status).toBe(200);

    const list = (q: Record<string, unknown>) =>
      t().request('GET', `/api/v1/instances/?${jsonQuery(q)}`, { key: v.apiKey });
    const ofIds = (r: { body: { instances: { id: number }[] } }) => r.body.instances.map((i) => i.id);

    const p1 = await list({ limit: '3' });
    expect(p1.status).toBe(200);
    expect(p1.body).toMatchObject({
      instances_found: 3,
      total_instances: 4,
      label_counts: { train: 3, '': 1 },
    });
    const p2 = await list({ limit: '3', after_token: p1.body.next_token });
    expect(ofIds(p2)).toEqual([ids[3]]);
    expect(p2.body).toMatchObject({
      instances_found: 1,
      total_instances: 4,
      label_counts: { train: 3, '': 1 },
    });

    const verified = await list({ select_filters: { verification: { in: ['verified'] } } });
    expect(ofIds(verified)).toEqual(ids.slice(0, 2));
    expect(verified.body.total_instances).toBe(2);
    expect(verified.body.label_counts).toEqual({ train: 2 });
    expect(verified.body.instances[0].verification).toBe('verified');
    const unverified = await list({ select_filters: { verification: { eq: 'unverified' } } });
    expect(ofIds(unverified)).toEqual(ids.slice(2));
    expect(unverified.body.instances[0].verification).toBe('unverified');
    const none = await list({ select_filters: { verification: { in: ['deverified'] } } });
    expect(none.body).toMatchObject({ instances: [], total_instances: 0, label_counts: {} });
    // The CLI's `--label ''` asks for the unlabeled ones with null.
    const unlabeled = await list({ select_filters: { label: { in: [null] } } });
    expect(ofIds(unlabeled)).toEqual([ids[3]]);
    expect(unlabeled.body.label_counts).toEqual({ '': 1 });
    expect(ofIds(await list({ select_filters: { label: { eq: null } } }))).toEqual([ids[3]]);
    const loading = await list({
      select_filters: { actual_status: { in: ['loading'] }, gpu_name: 'A100 SXM4' },
    });
    expect(ofIds(loading)).toEqual([ids[0]]);
    expect(loading.body.total_instances).toBe(1);

    for (const bad of [
      { verification: { eq: 'yes' } },
      { verification: { gt: 'verified' } },
      { verification: 1 },
    ]) {
      const r = await list({ select_filters: bad });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('bad_request');
      expect(r.body.msg).toContain('verification');
    }

    const f = await t().request('GET', '/api/v0/instances/filters/?owner=me', { key: v.apiKey });
    expect(f.status).toBe(200);
    expect(f.body).toEqual({
      filters: [
        { actual_status: null, verification: 'unverified', gpu_name: 'RTX 4090' },
        { actual_status: null, verification: 'verified', gpu_name: 'A100 SXM4' },
        { actual_status: 'loading', verification: 'verified', gpu_name: 'A100 SXM4' },
      ],
    });
    const g = await t().request('GET', '/api/v0/instances/filters', { key: other.apiKey });
    expect(g.body.filters.map((x: { gpu_name: string }) => x.gpu_name)).toEqual(['H100 SXM']);
    expect((await t().request('GET', '/api/v0/instances/filters/')).status).toBe(401);
  });

  it('attaches and detaches SSH keys', async () => {
    const id = (await create(next(), { image: 'x' })).body.new_contract;
    const a = await t().request('POST', `/api/v0/instances/${id}/ssh/`, {
      key: u.apiKey,
      body: { ssh_key: PUB2 },
    });
    expect(a.status).toBe(200);
    expect(await authorizedKeysFor(t().deps.db, id)).toEqual([PUB, PUB2]);
    const again = await t().request('POST', `/api/v0/instances/${id}/ssh/`, {
      key: u.apiKey,
      body: { ssh_key: PUB2 },
    });
    expect(again.status).toBe(200);
    const d = await t().request('DELETE', `/api/v0/instances/${id}/ssh/${a.body.key_id}/`, {
      key: u.apiKey,
      body: {},
    });
    expect(d.status).toBe(200);
    expect(await authorizedKeysFor(t().deps.db, id)).toEqual([PUB]);
    expect(
      (await t().request('DELETE', `/api/v0/instances/${id}/ssh/${a.body.key_id}/`, { key: u.apiKey }))
        .status,
    ).toBe(404);
    expect(
      (
        await t().request('POST', `/api/v0/instances/${id}/ssh/`, {
          key: u.apiKey,
          body: { ssh_key: 'not a key' },
        })
      ).status,
    ).toBe(400);
  });

  describe('the instance_api_key', () => {
    it('starts, stops and destroys its own instance and nothing else (403 on every other family)', async () => {
      const mine = await create(next(), { image: 'x' });
      const other = await create(next(), { image: 'x' });
      const ik = mine.body.instance_api_key as string;
      const id = mine.body.new_contract as number;
      const forbidden: [string, string, unknown?][] = [
        ['GET', '/api/v0/instances/'],
        ['GET', '/api/v1/instances/'],
        ['GET', `/api/v0/instances/${id}/`],
        ['PUT', `/api/v0/instances/${other.body.new_contract}/`, { state: 'stopped' }],
        ['DELETE', `/api/v0/instances/${other.body.new_contract}/`, {}],
        ['PUT', '/api/v0/instances/', { state: 'stopped', ids: [id] }],
        ['DELETE', '/api/v0/instances/', { instance_ids: [id] }],
        ['PUT', `/api/v0/instances/${id}/`, { label: 'x' }],
        ['POST', `/api/v0/instances/${id}/ssh/`, { ssh_key: PUB2 }],
        ['POST', '/api/v0/bundles/', {}],
        ['PUT', `/api/v0/asks/${next()}/`, { image: 'x' }],
        ['GET', '/api/v0/machines/'],
        ['GET', '/api/v0/billing/'],
        ['GET', '/api/v0/users/current/'],
        ['GET', '/api/v0/ssh/'],
        ['GET', '/api/v0/auth/apikeys/'],
      ];
      for (const [method, url, body] of forbidden) {
        const r = await t().request(method, url, { key: ik, body });
        expect(r.status, `${method} ${url}`).toBe(403);
      }
      expect(
        (await t().request('PUT', `/api/v0/instances/${id}/`, { key: ik, body: { state: 'stopped' } }))
          .status,
      ).toBe(200);
      expect(
        (await t().request('PUT', `/api/v0/instances/${id}/`, { key: ik, body: { state: 'running' } }))
          .status,
      ).toBe(200);
      expect((await t().request('DELETE', `/api/v0/instances/${id}/`, { key: ik, body: {} })).status).toBe(
        200,
      );
      const row = await t()
        .deps.db.selectFrom('instances')
        .select('destroyed_at')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      expect(row.destroyed_at).not.toBeNull();
    });
  });
});
