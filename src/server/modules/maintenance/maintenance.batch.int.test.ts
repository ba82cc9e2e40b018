import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { insertInstances, insertMachines } from '../../../../test/helpers/maintenance.js';
import { insertApiKey } from '../accounts/accounts.service.js';

const HOUR = 3_600_000;

describeEachDb('maintenance batch', (dialect) => {
  const t = useTestApp(dialect);
  let host: { id: number; email: string; apiKey: string };
  let other: { id: number; email: string; apiKey: string };
  let alice: { id: number; email: string };
  let bob: { id: number; email: string };
  let carol: { id: number; email: string };
  let m: number[];
  let foreign: number;

  const windows = () => t().db.store.db.selectFrom('maintenance_windows').selectAll().orderBy('id').execute();
  const outbox = () => t().db.store.db.selectFrom('email_outbox').selectAll().orderBy('id').execute();
  const sdate = (hoursAhead = 24) => Math.floor(t().clock.now() / 1000) + hoursAhead * 3600;
  const batch = (body: unknown, key = host.apiKey) =>
    t().request('POST', '/api/v0/machines/maintenances/batch', { key, body });
  const clear = async () => {
    await t().db.store.db.deleteFrom('maintenance_windows').execute();
    await t().db.store.db.deleteFrom('email_outbox').execute();
  };

  beforeAll(async () => {
    host = await t().user({ fullName: 'Hana Host' });
    other = await t().user();
    alice = await t().user({ fullName: 'Alice' });
    bob = await t().user();
    carol = await t().user();
    const db = t().db.store.db;
    m = await insertMachines(db, host.id, 6);
    foreign = (await insertMachines(db, other.id, 1))[0]!;
    // m0: alice (running) ; m1: alice (stopped); m2: bob, and carol's destroyed one (not notified)
    // m3: nobody; m4: carol (running) ; m5: bob.
    await insertInstances(db, [
      { machineId: m[0]!, userId: alice.id },
      { machineId: m[1]!, userId: alice.id, intended: 'stopped', actual: 'exited' },
      { machineId: m[2]!, userId: carol.id, destroyed: true },
      { machineId: m[2]!, userId: bob.id, actual: null },
      { machineId: m[4]!, userId: carol.id },
      { machineId: m[5]!, userId: bob.id },
    ]);
  });

  it('schedules owned machines, reports the others as not_found in submitted order, and notifies', async () => {
    await clear();
    const s = sdate(48);
    const r = await batch({
      machine_ids: [m[3], 999999, m[0], foreign, m[1], m[2]],
      sdate: s,
      duration: 3,
      maintenance_category: 'gpu',
    });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    const notFound = { success: false, error: 'not_found', msg: 'Machine not found or not owned by you' };
    expect(r.body.results).toMatchObject([
      { success: true, machine_id: m[3], notifications_sent: 0 },
      { ...notFound, machine_id: 999999 },
      { success: true, machine_id: m[0], notifications_sent: 1 },
      { ...notFound, machine_id: foreign },
      { success: true, machine_id: m[1], notifications_sent: 1 },
      { success: true, machine_id: m[2], notifications_sent: 1 },
    ]);
    // Absent and foreign machines are indistinguishable.
    expect(r.body.results[1]).toEqual({ ...notFound, machine_id: 999999 });
    expect(r.body.results[3]).toEqual({ ...notFound, machine_id: foreign });

    const w = await windows();
    expect(w.map((x) => x.machine_id).sort()).toEqual([m[0], m[1], m[2], m[3]].sort());
    expect(
      w.every(
        (x) =>
          x.start_time === s * 1000 &&
          x.end_time === s * 1000 + 3 * HOUR &&
          x.category === 'gpu' &&
          x.duration_hours === 3,
      ),
    ).toBe(true);

    const mails = await outbox();
    const clientMails = mails.filter((x) => x.category === 'maintenance.client');
    // alice: one for m0 and one for m1 (one per client per machine window); bob: m2.
    expect(clientMails.map((x) => x.to_addr).sort()).toEqual([alice.email, alice.email, bob.email].sort());
    const aliceM0 = clientMails.find(
      (x) => x.to_addr === alice.email && x.subject.includes(`machine ${m[0]}:`),
    )!;
    const start = new Date(s * 1000).toISOString().replace('T', ' ').replace('.000Z', ' UTC');
    const end = new Date(s * 1000 + 3 * HOUR).toISOString().replace('T', ' ').replace('.000Z', ' UTC');
    for (const text of [aliceM0.subject, aliceM0.text_body, aliceM0.html_body!]) {
      expect(text).toContain(String(m[0]));
      expect(text).toContain(start);
      expect(text).toContain('gpu');
    }
    expect(aliceM0.text_body).toContain(end);
    expect(aliceM0.html_body).toContain('<table>');

    const hostMails = mails.filter((x) => x.category === 'maintenance.host');
    expect(hostMails).toHaveLength(1);
    expect(hostMails[0]!.to_addr).toBe(host.email);
    expect(hostMails[0]!.subject).toContain('4 machines, 2 failed');
    for (const id of [m[0], m[1], m[2], m[3], foreign, 999999])
      expect(hostMails[0]!.text_body).toContain(`machine ${id}`);
    expect(hostMails[0]!.text_body).toContain('not_found');
  });

  it('applies the defaults: duration 1 hour, category other; a duration under 1 counts as 1', async () => {
    await clear();
    const s = sdate(10);
    expect((await batch({ machine_ids: [m[0]], sdate: s })).status).toBe(200);
    expect(
      (await batch({ machine_ids: [m[1]], sdate: s, duration: 0.25, maintenance_category: null })).status,
    ).toBe(200);
    expect(
      (await batch({ machine_ids: [m[2]], sdate: s + 0.5, duration: 2.5, maintenance_category: 'power' }))
        .status,
    ).toBe(200);
    const w = await windows();
    expect(w.map((x) => [x.duration_hours, x.end_time - x.start_time, x.category])).toEqual([
      [1, HOUR, 'other'],
      [1, HOUR, 'other'],
      [2.5, 2.5 * HOUR, 'power'],
    ]);
    expect(w[2]!.start_time).toBe(s * 1000 + 500);
  });

  const cases: [string, unknown, number, string][] = [
    ['no body fields', {}, 400, 'machine_ids must be a non-empty list'],
    ['machine_ids not a list', { machine_ids: 5, sdate: 1 }, 400, 'machine_ids must be a non-empty list'],
    ['machine_ids empty', { machine_ids: [] }, 400, 'machine_ids must be a non-empty list'],
    [
      '101 machine_ids',
      { machine_ids: Array.from({ length: 101 }, (_, i) => i + 1) },
      400,
      'machine_ids must contain at most 100 entries',
    ],
    ['no valid ID', { machine_ids: ['a', -1, 0, 1.5, null] }, 400, 'No valid machine_ids provided'],
    ['sdate missing', { machine_ids: [1] }, 422, 'Missing sdate'],
    ['sdate null', { machine_ids: [1], sdate: null }, 422, 'Missing sdate'],
    ['sdate a string', { machine_ids: [1], sdate: '1800000000' }, 422, 'sdate must be a numeric timestamp'],
    ['sdate a boolean', { machine_ids: [1], sdate: true }, 422, 'sdate must be a numeric timestamp'],
  ];
  for (const [name, body, status, msg] of cases) {
    it(`refuses ${name}: ${status} "${msg}", writing nothing`, async () => {
      await clear();
      const r = await batch(body);
      expect(r.status).toBe(status);
      expect(r.body.msg).toBe(msg);
      expect(typeof r.body.error).toBe('string');
      expect(await windows()).toHaveLength(0);
      expect(await outbox()).toHaveLength(0);
    });
  }

  it('treats a missing or non-object body as one without machine_ids (400), and malformed JSON as bad_request', async () => {
    await clear();
    const url = '/api/v0/machines/maintenances/batch';
    const none = await t().request('POST', url, { key: host.apiKey });
    expect([none.status, none.body.msg]).toEqual([400, 'machine_ids must be a non-empty list']);
    for (const rawBody of ['', '[1,2]', '"x"', 'null', '7']) {
      const r = await t().request('POST', url, {
        key: host.apiKey,
        rawBody,
        headers: { 'content-type': 'application/json' },
      });
      expect([r.status, r.body.msg]).toEqual([400, 'machine_ids must be a non-empty list']);
    }
    const bad = await t().request('POST', url, {
      key: host.apiKey,
      rawBody: '{"machine_ids": [1',
      headers: { 'content-type': 'application/json' },
    });
    expect([bad.status, bad.body.error]).toEqual([400, 'bad_request']);
    expect(await windows()).toHaveLength(0);
  });

  it('checks sdate against the clock: in the future, within 1 year (365 days)', async () => {
    await clear();
    const now = Math.floor(t().clock.now() / 1000);
    const ids = [m[0]];
    expect((await batch({ machine_ids: ids, sdate: now })).body).toEqual({
      error: 'invalid_sdate',
      msg: 'sdate must be in the future',
    });
    expect((await batch({ machine_ids: ids, sdate: now - 100 })).status).toBe(422);
    const far = await batch({ machine_ids: ids, sdate: now + 365 * 86400 + 1 });
    expect([far.status, far.body.msg]).toEqual([422, 'sdate must be within 1 year']);
    // Milliseconds by mistake: far beyond a year.
    expect((await batch({ machine_ids: ids, sdate: t().clock.now() })).body.msg).toBe(
      'sdate must be within 1 year',
    );
    expect((await batch({ machine_ids: ids, sdate: now + 365 * 86400 })).status).toBe(200);
  });

  it('validates duration and category with the exact texts (400)', async () => {
    await clear();
    const base = { machine_ids: [m[0]], sdate: sdate() };
    for (const duration of [0, -1, 'two', true, []]) {
      const r = await batch({ ...base, duration });
      expect([r.status, r.body.msg]).toEqual([400, 'duration must be a positive number']);
    }
    expect((await batch({ ...base, duration: 8761 })).body.msg).toBe('duration must be at most 8760 hours');
    for (const maintenance_category of ['GPU', 'network', 3, '']) {
      const r = await batch({ ...base, maintenance_category });
      expect([r.status, r.body.msg]).toEqual([
        400,
        'maintenance_category must be one of: disk, gpu, internet, other, power, software',
      ]);
    }
    expect(await windows()).toHaveLength(0);
  });

  it('checks in a fixed order: machine_ids, then sdate, then duration, then category, then ownership', async () => {
    await clear();
    const allBad = { machine_ids: [], sdate: 'x', duration: -1, maintenance_category: 'x' };
    expect((await batch(allBad)).body.msg).toBe('machine_ids must be a non-empty list');
    expect((await batch({ ...allBad, machine_ids: [foreign] })).body.msg).toBe(
      'sdate must be a numeric timestamp',
    );
    expect((await batch({ ...allBad, machine_ids: [foreign], sdate: sdate() })).body.msg).toBe(
      'duration must be a positive number',
    );
    expect((await batch({ ...allBad, machine_ids: [foreign], sdate: sdate(), duration: 1 })).body.msg).toBe(
      'maintenance_category must be one of: disk, gpu, internet, other, power, software',
    );
    const r = await batch({
      ...allBad,
      machine_ids: [foreign],
      sdate: sdate(),
      duration: 1,
      maintenance_category: 'disk',
    });
    expect([r.status, r.body.success, r.body.error]).toEqual([400, false, 'not_found']);
  });

  it("answers 400 success:false when no submitted machine is the caller's, and writes nothing", async () => {
    await clear();
    const r = await batch({ machine_ids: [foreign, 424242, 'junk'], sdate: sdate() });
    expect(r.status).toBe(400);
    expect(r.body.success).toBe(false);
    expect(r.body.error).toBe('not_found');
    expect(r.body.results.map((x: any) => x.error)).toEqual(['not_found', 'not_found', 'invalid_id']);
    expect(await windows()).toHaveLength(0);
    expect(await outbox()).toHaveLength(0);
    // The other host can schedule its own machine, and never ours.
    const o = await batch({ machine_ids: [m[0], foreign], sdate: sdate() }, other.apiKey);
    expect(o.body.results).toMatchObject([
      { success: false, error: 'not_found' },
      { success: true, machine_id: foreign },
    ]);
  });

  it('handles duplicate and invalid IDs per entry: a machine is scheduled and notified once', async () => {
    await clear();
    const r = await batch({ machine_ids: [m[0], 'x', m[0], -3, 2.5, m[0]], sdate: sdate() });
    expect(r.status).toBe(200);
    expect(r.body.results).toMatchObject([
      { success: true, machine_id: m[0], notifications_sent: 1 },
      { success: false, machine_id: null, error: 'invalid_id' },
      { success: false, machine_id: m[0], error: 'duplicate' },
      { success: false, machine_id: -3, error: 'invalid_id' },
      { success: false, machine_id: 2.5, error: 'invalid_id' },
      { success: false, machine_id: m[0], error: 'duplicate' },
    ]);
    expect(await windows()).toHaveLength(1);
    expect((await outbox()).filter((x) => x.category === 'maintenance.client')).toHaveLength(1);
  });

  it('refuses a window overlapping a live one on the same machine (per entry), and allows adjacent ones', async () => {
    await clear();
    const s = sdate(24);
    expect((await batch({ machine_ids: [m[0]], sdate: s, duration: 2 })).status).toBe(200);
    const r = await batch({ machine_ids: [m[0], m[1]], sdate: s + 3600, duration: 2 });
    expect(r.status).toBe(200);
    expect(r.body.results[0]).toMatchObject({ success: false, error: 'maintenance_overlap' });
    expect(r.body.results[1]).toMatchObject({ success: true });
    const all = await batch({ machine_ids: [m[0]], sdate: s - 1800, duration: 1 });
    expect([all.status, all.body.success, all.body.error]).toEqual([400, false, 'maintenance_overlap']);
    // Back to back is not an overlap.
    expect((await batch({ machine_ids: [m[0]], sdate: s + 7200 })).status).toBe(200);
    expect(await windows()).toHaveLength(3);
    // The host got one confirmation per accepted call, none for the refused one.
    expect((await outbox()).filter((x) => x.category === 'maintenance.host')).toHaveLength(3);
  });

  it('needs the maintenance scope', async () => {
    const db = t().db.store.db;
    const readOnly = await insertApiKey(db, {
      userId: host.id,
      teamId: null,
      name: 'ro',
      permissions: JSON.stringify({ maintenance: 'read' }),
      now: t().clock.now(),
    });
    const none = await insertApiKey(db, {
      userId: host.id,
      teamId: null,
      name: 'inst',
      permissions: JSON.stringify({ instances: 'write' }),
      now: t().clock.now(),
    });
    expect((await batch({ machine_ids: [m[0]], sdate: sdate() }, readOnly.key)).status).toBe(403);
    expect((await t().request('GET', '/api/v0/machines/maintenances', { key: readOnly.key })).status).toBe(
      200,
    );
    expect((await t().request('GET', '/api/v0/machines/maintenances', { key: none.key })).status).toBe(403);
    expect((await batch({ machine_ids: [m[0]], sdate: sdate() }, 'or_bogus')).status).toBe(401);
  });
});
