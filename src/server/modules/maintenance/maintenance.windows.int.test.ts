import { beforeAll, beforeEach, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { insertInstances, insertMachines, insertUsers } from '../../../../test/helpers/maintenance.js';
import { maintenanceWindowsFor } from './maintenance.service.js';

const HOUR = 3_600_000;

describeEachDb('maintenance windows: dnotify, list, cancel, renters’ view', (dialect) => {
  const t = useTestApp(dialect);
  let host: { id: number; email: string; apiKey: string };
  let other: { id: number; email: string; apiKey: string };
  let client: { id: number; email: string };
  let m: number[];
  let foreign: number;
  const sdate = (hoursAhead = 24) => Math.floor(t().clock.now() / 1000) + hoursAhead * 3600;
  const req = (method: string, url: string, body?: unknown, key = host.apiKey) =>
    t().request(method, url, { key, body });

  beforeAll(async () => {
    host = await t().user();
    other = await t().user();
    client = await t().user();
    m = await insertMachines(t().db.store.db, host.id, 3);
    foreign = (await insertMachines(t().db.store.db, other.id, 1))[0]!;
    await insertInstances(t().db.store.db, [{ machineId: m[0]!, userId: client.id }]);
  });
  beforeEach(async () => {
    await t().db.store.db.deleteFrom('maintenance_windows').execute();
    await t().db.store.db.deleteFrom('email_outbox').execute();
  });

  it('PUT /machines/{id}/dnotify/ schedules one window, notifies, and lists it in the window row shape', async () => {
    const s = sdate(5);
    const r = await req('PUT', `/api/v0/machines/${m[0]}/dnotify/`, {
      client_id: 'me',
      sdate: s,
      duration: 2,
      maintenance_category: 'disk',
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, notifications_sent: 1 });
    const mails = await t()
      .db.store.db.selectFrom('email_outbox')
      .select(['to_addr', 'category'])
      .orderBy('id')
      .execute();
    expect(mails).toEqual([
      { to_addr: client.email, category: 'maintenance.client' },
      { to_addr: host.email, category: 'maintenance.host' },
    ]);
    for (const url of [
      '/api/v0/machines/maintenances',
      '/api/v0/machines/maintenances/',
      `/api/v0/machines/maintenances?owner=me&machine_ids=[${m[0]},${m[1]}]`,
    ]) {
      const l = await req('GET', url);
      expect(l.status).toBe(200);
      expect(l.body).toEqual([
        {
          id: r.body.maintenance_id,
          machine_id: m[0],
          start_time: s,
          end_time: s + 7200,
          duration_hours: 2,
          maintenance_category: 'disk',
        },
      ]);
    }
    expect((await req('GET', `/api/v0/machines/maintenances?machine_ids=[${m[1]}]`)).body).toEqual([]);
    expect((await req('GET', `/api/v0/machines/maintenances?machine_ids=${m[0]},${m[1]}`)).body).toHaveLength(
      1,
    );
    // Another host sees none of it, even naming the machine.
    expect(
      (await req('GET', `/api/v0/machines/maintenances?machine_ids=[${m[0]}]`, undefined, other.apiKey)).body,
    ).toEqual([]);
    const bad = await req('GET', '/api/v0/machines/maintenances?machine_ids=[1,"x"]');
    expect([bad.status, bad.body.error]).toEqual([400, 'bad_request']);
  });

  it('dnotify: 404 for a machine that is absent or not the caller’s (same answer), 409 on overlap, the batch call’s texts otherwise', async () => {
    const a = await req('PUT', `/api/v0/machines/${foreign}/dnotify/`, { sdate: sdate() });
    const b = await req('PUT', '/api/v0/machines/987654/dnotify/', { sdate: sdate() });
    expect([a.status, a.body]).toEqual([
      404,
      { error: 'not_found', msg: 'Machine not found or not owned by you' },
    ]);
    expect([b.status, b.body]).toEqual([a.status, a.body]);
    expect(
      (await req('PUT', `/api/v0/machines/${m[1]}/dnotify/`, { sdate: sdate(), duration: 3 })).status,
    ).toBe(200);
    const o = await req('PUT', `/api/v0/machines/${m[1]}/dnotify/`, { sdate: sdate() + 3600 });
    expect([o.status, o.body.error]).toEqual([409, 'maintenance_overlap']);
    expect((await req('PUT', `/api/v0/machines/${m[1]}/dnotify/`, {})).body).toEqual({
      error: 'invalid_sdate',
      msg: 'Missing sdate',
    });
    expect(
      (await req('PUT', `/api/v0/machines/${m[1]}/dnotify/`, { sdate: sdate(), duration: -2 })).body.msg,
    ).toBe('duration must be a positive number');
    // Nothing of the refused calls was written.
    expect(await t().db.store.db.selectFrom('maintenance_windows').selectAll().execute()).toHaveLength(1);
  });

  it('concurrent overlapping schedules on one machine: the database lets exactly one win', async () => {
    const s = sdate(6);
    const replies = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        i % 2 === 0
          ? req('PUT', `/api/v0/machines/${m[2]}/dnotify/`, { sdate: s + i * 60, duration: 2 })
          : req('POST', '/api/v0/machines/maintenances/batch', {
              machine_ids: [m[2]],
              sdate: s + i * 60,
              duration: 2,
            }),
      ),
    );
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    expect(replies.filter((r) => r.status !== 200).every((r) => r.body.error === 'maintenance_overlap')).toBe(
      true,
    );
    expect(
      await t()
        .db.store.db.selectFrom('maintenance_windows')
        .selectAll()
        .where('machine_id', '=', m[2]!)
        .execute(),
    ).toHaveLength(1);
    // Two concurrent cancels: the window is cancelled once.
    const c = await Promise.all([
      req('PUT', `/api/v0/machines/${m[2]}/cancel_maint/`),
      req('PUT', `/api/v0/machines/${m[2]}/cancel_maint/`),
    ]);
    expect(c.map((r) => r.body.canceled).sort()).toEqual([0, 1]);
  });

  it('PUT /machines/{id}/cancel_maint/ cancels the live windows of one machine; 404 when not the caller’s', async () => {
    await req('PUT', `/api/v0/machines/${m[0]}/dnotify/`, { sdate: sdate(2) });
    await req('PUT', `/api/v0/machines/${m[0]}/dnotify/`, { sdate: sdate(10) });
    await req('PUT', `/api/v0/machines/${m[1]}/dnotify/`, { sdate: sdate(2) });
    expect((await req('PUT', `/api/v0/machines/${foreign}/cancel_maint/`, {})).status).toBe(404);
    const c = await req('PUT', `/api/v0/machines/${m[0]}/cancel_maint/`);
    expect(c.body).toEqual({ success: true, canceled: 2 });
    // The machine's client is told, once per cancelled window, in the cancelling transaction.
    const notices = await t()
      .db.store.db.selectFrom('email_outbox')
      .select(['to_addr', 'subject'])
      .where('category', '=', 'maintenance.cancel')
      .execute();
    expect(notices.map((n) => n.to_addr)).toEqual([client.email, client.email]);
    expect(notices.every((n) => n.subject.startsWith(`Maintenance cancelled on machine ${m[0]}:`))).toBe(
      true,
    );
    expect((await req('PUT', `/api/v0/machines/${m[0]}/cancel_maint/`, {})).body).toEqual({
      success: true,
      canceled: 0,
    });
    const l = await req('GET', '/api/v0/machines/maintenances');
    expect(l.body.map((x: any) => x.machine_id)).toEqual([m[1]]);
    // A cancelled slot can be scheduled again.
    expect((await req('PUT', `/api/v0/machines/${m[0]}/dnotify/`, { sdate: sdate(2) })).status).toBe(200);
  });

  it('DELETE /machines/maintenances/batch cancels per entry, in order; 400 when none is owned', async () => {
    await req('POST', '/api/v0/machines/maintenances/batch', {
      machine_ids: [m[0], m[1], m[2]],
      sdate: sdate(),
    });
    const d = await req('DELETE', '/api/v0/machines/maintenances/batch', {
      machine_ids: [m[1], foreign, m[2], m[1], 'x'],
    });
    expect(d.status).toBe(200);
    expect(d.body).toEqual({
      success: true,
      results: [
        { success: true, machine_id: m[1], canceled: 1 },
        {
          success: false,
          machine_id: foreign,
          error: 'not_found',
          msg: 'Machine not found or not owned by you',
        },
        { success: true, machine_id: m[2], canceled: 1 },
        {
          success: false,
          machine_id: m[1],
          error: 'duplicate',
          msg: `machine_ids lists ${m[1]} more than once; only its first entry is processed`,
        },
        { success: false, machine_id: null, error: 'invalid_id', msg: 'Not a valid machine ID: "x"' },
      ],
    });
    expect((await req('GET', '/api/v0/machines/maintenances')).body.map((x: any) => x.machine_id)).toEqual([
      m[0],
    ]);
    const none = await req('DELETE', '/api/v0/machines/maintenances/batch', { machine_ids: [foreign] });
    expect([none.status, none.body.success, none.body.error]).toEqual([400, false, 'not_found']);
    expect((await req('DELETE', '/api/v0/machines/maintenances/batch', {})).body.msg).toBe(
      'machine_ids must be a non-empty list',
    );
  });

  it('maintenanceWindowsFor: the live windows per machine, for the instance and offer views; ended ones drop out', async () => {
    const s = sdate(1);
    await req('POST', '/api/v0/machines/maintenances/batch', {
      machine_ids: [m[0], m[2]],
      sdate: s,
      duration: 1,
    });
    await req('POST', '/api/v0/machines/maintenances/batch', {
      machine_ids: [m[0]],
      sdate: s + 7200,
      maintenance_category: 'power',
    });
    const now = t().clock.now();
    const got = await maintenanceWindowsFor(t().db.store.db, [m[0]!, m[1]!, m[2]!, foreign], now);
    expect([...got.keys()].sort()).toEqual([m[0], m[2]].sort());
    expect(got.get(m[0]!)!.map((w) => [w.start_time, w.maintenance_category])).toEqual([
      [s, 'other'],
      [s + 7200, 'power'],
    ]);
    // During the first window it is still shown; after it ends, it is not.
    expect(
      (await maintenanceWindowsFor(t().db.store.db, [m[0]!], s * 1000 + HOUR / 2)).get(m[0]!),
    ).toHaveLength(2);
    expect((await maintenanceWindowsFor(t().db.store.db, [m[0]!], s * 1000 + HOUR)).get(m[0]!)).toHaveLength(
      1,
    );
  });

  it('schedules 100 machines with 1,000 affected instances in one call (one e-mail per client per machine window)', async () => {
    const db = t().db.store.db;
    const big = await insertMachines(db, host.id, 100);
    const clients = await insertUsers(db, 500, `bulk-${dialect}`);
    // 10 instances per machine from 5 clients (2 each): 500 client e-mails for 1,000 instances.
    // One runs on each machine; the other nine are stopped (a stopped instance releases the
    // machine but keeps its data there, so its client is affected too).
    await insertInstances(
      db,
      big.flatMap((id, i) =>
        Array.from({ length: 10 }, (_, k) => ({
          machineId: id,
          userId: clients[(i * 5 + Math.floor(k / 2)) % 500]!,
          intended: k === 0 ? ('running' as const) : ('stopped' as const),
        })),
      ),
    );
    const r = await req('POST', '/api/v0/machines/maintenances/batch', {
      machine_ids: big,
      sdate: sdate(30),
      duration: 4,
      maintenance_category: 'software',
    });
    expect(r.status).toBe(200);
    expect(r.body.results).toHaveLength(100);
    expect(
      r.body.results.every(
        (x: any, i: number) => x.success && x.machine_id === big[i] && x.notifications_sent === 5,
      ),
    ).toBe(true);
    const counts = await db
      .selectFrom('email_outbox')
      .select(['category', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy('category')
      .orderBy('category')
      .execute();
    expect(counts.map((c) => [c.category, Number(c.n)])).toEqual([
      ['maintenance.client', 500],
      ['maintenance.host', 1],
    ]);
  });
});
