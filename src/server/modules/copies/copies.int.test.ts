// Copies on both databases: the official CLI's bodies (ids as numbers, "12", "C.12", "V.7",
// null/"local"), who may copy what, one copy at a time into a destination decided by the
// database, a one-time key taken by exactly one of many concurrent logins, reports moving a copy
// and the destination's status_msg, and cancel.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { offers, renter, runningInstance } from '../../../../test/helpers/market.js';
import { agentCopies, copyAuth, keyFingerprint, parseEnd } from './copies.service.js';

describeEachDb('copies', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off' });

  /** Two running instances of one renter on machines that are online with an SSH port. */
  async function pair() {
    const u = await renter(t());
    const [m1, m2] = await offers(t(), 2);
    const a = await runningInstance(t(), u.apiKey, m1!);
    const b = await runningInstance(t(), u.apiKey, m2!);
    await t()
      .deps.db.updateTable('machines')
      .set({ online_state: 'online' })
      .where('id', 'in', [m1!, m2!])
      .execute();
    await t()
      .deps.db.updateTable('instances')
      .set({ ssh_port: 40022, ssh_host: '127.0.0.1' })
      .where('id', 'in', [a, b])
      .execute();
    const host = await t()
      .deps.db.selectFrom('machines')
      .select(['host_id', 'agent_uid'])
      .where('id', '=', m1!)
      .executeTakeFirstOrThrow();
    return { u, a, b, m1: m1!, m2: m2!, hostId: Number(host.host_id) };
  }

  const put = (key: string, body: unknown, url = '/api/v0/commands/copy_direct/') =>
    t().request('PUT', url, { key, body });

  it('reads the ids the official CLI sends', () => {
    expect(parseEnd('12', 'src_id')).toEqual({ kind: 'instance', id: 12 });
    expect(parseEnd('C.12', 'src_id')).toEqual({ kind: 'instance', id: 12 });
    expect(parseEnd(12, 'src_id')).toEqual({ kind: 'instance', id: 12 });
    expect(parseEnd('V.7', 'src_id')).toEqual({ kind: 'volume', id: 7 });
    expect(parseEnd(null, 'src_id')).toEqual({ kind: 'local' });
    expect(parseEnd('local', 'src_id')).toEqual({ kind: 'local' });
    expect(() => parseEnd('s3.101', 'src_id')).toThrow(/cloud/);
  });

  it('starts a copy between two running instances of the renter; refuses others, bad paths and a second copy', async () => {
    const { u, a, b } = await pair();
    const other = await renter(t());
    const body = { client_id: 'me', src_id: String(a), dst_id: `C.${b}`, src_path: '/w/', dst_path: '/d/' };
    expect((await put(other.apiKey, body)).status).toBe(404);
    const bad = await put(u.apiKey, { ...body, dst_path: '/d/../../etc' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ success: false, error: 'bad_request' });
    const r = await put(u.apiKey, { ...body, exclude: ['*.log'] });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    const inst = await t().request('GET', `/api/v0/instances/${b}/`, { key: u.apiKey });
    expect(inst.body.instances.status_msg).toMatch(/^copy from \d+:\/w\/ queued$/);
    // 20 more at once into the same destination: all refused, the database keeps one active copy.
    const again = await Promise.all(Array.from({ length: 20 }, () => put(u.apiKey, body)));
    expect(again.map((x) => x.status)).toEqual(Array(20).fill(409));
    const rows = await t().deps.db.selectFrom('copies').select('id').where('dst_id', '=', b).execute();
    expect(rows).toHaveLength(1);
  });

  it('of concurrent first copies into one destination exactly one wins', async () => {
    const { u, a, b } = await pair();
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        put(u.apiKey, { src_id: a, dst_id: b, src_path: `/s${i}/`, dst_path: '/d/' }),
      ),
    );
    const codes = replies.map((r) => r.status).sort();
    expect(codes.filter((c) => c === 200)).toHaveLength(1);
    expect(codes.filter((c) => c === 409)).toHaveLength(19);
  });

  it('refuses a stopped destination and answers the SSH server for a laptop side', async () => {
    const { u, a, b } = await pair();
    const up = await put(
      u.apiKey,
      { client_id: 'me', src_id: null, dst_id: String(a), src_path: 'x/', dst_path: '/y/' },
      '/api/v0/commands/rsync/',
    );
    expect(up.body).toMatchObject({
      success: true,
      dst_addr: '127.0.0.1',
      dst_port: 40022,
      module: String(a),
    });
    // The CLI sends copy_direct with "local" for local:path.
    const down = await put(u.apiKey, {
      client_id: 'me',
      src_id: `C.${a}`,
      dst_id: 'local',
      src_path: '/y/',
      dst_path: 'x',
    });
    expect(down.body).toMatchObject({ success: true, src_addr: '127.0.0.1', src_port: 40022 });
    await t()
      .deps.db.updateTable('instances')
      .set({ actual_status: 'stopped', intended_status: 'stopped' })
      .where('id', '=', b)
      .execute();
    const r = await put(u.apiKey, { src_id: a, dst_id: b, src_path: '/', dst_path: '/d/' });
    expect(r.status).toBe(409);
    expect(r.body.msg).toMatch(/not running/);
  });

  it('hands the copy to the source agent, takes its key once, and reports move it to done', async () => {
    const { u, a, b, m1, hostId } = await pair();
    const uid = 'agent-0000-test';
    await t().deps.db.updateTable('machines').set({ agent_uid: uid }).where('id', '=', m1).execute();
    const r = await put(u.apiKey, { src_id: a, dst_id: b, src_path: '/w/', dst_path: '/d/' });
    const copyId = r.body.copy_id as number;
    const auth = { user: { id: hostId } } as Parameters<typeof agentCopies>[1];
    const listed = await agentCopies(t().deps, auth, { agent_uid: uid, machine_ids: [m1], reports: [] });
    expect(listed.copies.map((c) => c.id)).toEqual([copyId]);
    const c = listed.copies[0]!;
    expect(c).toMatchObject({ src_id: a, dst_id: b, dst_port: 40022, src_path: '/w/', dst_path: '/d/' });
    expect(c.key).toContain('PRIVATE KEY');
    // Another agent uid lists nothing.
    expect(
      (await agentCopies(t().deps, auth, { agent_uid: 'agent-other-1', machine_ids: [m1], reports: [] }))
        .copies,
    ).toEqual([]);
    // The key's public half, as the destination's SSH server sends it.
    const { ssh2 } = await import('../../../agent/ssh-server.js');
    const k = ssh2().utils.parseKey(c.key);
    const blob = (Array.isArray(k) ? k[0] : k) as { getPublicSSH(): Buffer };
    const pub = blob.getPublicSSH().toString('base64');
    const row = await t()
      .deps.db.selectFrom('copies')
      .select('key_fp')
      .where('id', '=', copyId)
      .executeTakeFirstOrThrow();
    expect(row.key_fp).toBe(keyFingerprint(pub));
    const dstHost = await t()
      .deps.db.selectFrom('machines as m')
      .innerJoin('instances as i', 'i.machine_id', 'm.id')
      .select('m.host_id')
      .where('i.id', '=', b)
      .executeTakeFirstOrThrow();
    const dAuth = { user: { id: Number(dstHost.host_id) } } as Parameters<typeof copyAuth>[1];
    expect((await copyAuth(t().deps, dAuth, { instance_id: b, public_key: pub })).ok).toBe(true);
    expect((await copyAuth(t().deps, dAuth, { instance_id: a, public_key: pub })).ok).toBe(false);
    const takes = await Promise.all(
      Array.from({ length: 10 }, () =>
        copyAuth(t().deps, dAuth, { instance_id: b, public_key: pub, consume: true }),
      ),
    );
    expect(takes.filter((x) => x.ok)).toHaveLength(1);
    expect((await copyAuth(t().deps, dAuth, { instance_id: b, public_key: pub })).ok).toBe(false);

    await agentCopies(t().deps, auth, {
      agent_uid: uid,
      machine_ids: [m1],
      reports: [{ id: copyId, state: 'running', progress: '1.0 MB 50% 2MB/s', bytes: 1e6 }],
    });
    let inst = await t().request('GET', `/api/v0/instances/${b}/`, { key: u.apiKey });
    expect(inst.body.instances.status_msg).toBe(`copying from ${a}:/w/: 1.0 MB 50% 2MB/s`);
    const end = await agentCopies(t().deps, auth, {
      agent_uid: uid,
      machine_ids: [m1],
      reports: [{ id: copyId, state: 'done', bytes: 2e6 }],
    });
    expect(end.copies).toEqual([]);
    inst = await t().request('GET', `/api/v0/instances/${b}/`, { key: u.apiKey });
    expect(inst.body.instances.status_msg).toBe(`copy from ${a}:/w/ done (2000000 bytes)`);
    // A late failure report changes nothing.
    await agentCopies(t().deps, auth, {
      agent_uid: uid,
      machine_ids: [m1],
      reports: [{ id: copyId, state: 'failed', msg: 'x' }],
    });
    const list = await t().request('GET', '/api/v0/commands/copy_direct/', { key: u.apiKey });
    expect(list.body.copies[0]).toMatchObject({ id: copyId, status: 'done', bytes: 2000000 });
    const events = await t()
      .deps.db.selectFrom('events')
      .select('type')
      .where('user_id', '=', u.id)
      .execute();
    expect(events.map((e) => e.type).filter((x) => x.startsWith('copy.'))).toEqual([
      'copy.started',
      'copy.completed',
    ]);
  });

  /** A ready volume of the renter on machine `m` (rows as the volumes module makes them). */
  async function volumeOn(userId: number, m: number, hostId: number): Promise<number> {
    const now = Date.now();
    const ask = await t()
      .deps.db.insertInto('volume_asks')
      .values({
        machine_id: m,
        host_id: hostId,
        size_gb: 100,
        price_disk: 0.1,
        end_date: null,
        listed: 1,
        created_at: now,
        unlisted_at: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const v = await t()
      .deps.db.insertInto('volumes')
      .values({
        user_id: userId,
        ask_id: Number(ask.id),
        machine_id: m,
        host_id: hostId,
        label: 'into',
        size_gb: 7,
        storage_cost: 0.1,
        status: 'ready',
        instance_id: null,
        mount_path: null,
        created_at: now,
        deleted_at: null,
        billed_until: now,
        accrued_micros: 0,
        unpaid_since: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return Number(v.id);
  }

  it('copies into a volume (V.ID): its own agent writes it on the host, listed with its size', async () => {
    const { u, a, m1, m2, hostId } = await pair();
    const uid = 'agent-0001-test';
    await t().deps.db.updateTable('machines').set({ agent_uid: uid }).where('id', 'in', [m1, m2]).execute();
    const vol = await volumeOn(u.id, m2, hostId);
    const other = await renter(t());
    expect((await put(other.apiKey, { src_id: a, dst_id: `V.${vol}` })).status).toBe(404);
    const r = await put(u.apiKey, { src_id: `C.${a}`, dst_id: `V.${vol}`, src_path: '/w/', dst_path: 'in/' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const copyId = r.body.copy_id as number;
    // One copy at a time into the volume; an instance with the same id is another destination.
    expect((await put(u.apiKey, { src_id: a, dst_id: `V.${vol}` })).status).toBe(409);
    const auth = { user: { id: hostId } } as Parameters<typeof agentCopies>[1];
    const listed = await agentCopies(t().deps, auth, { agent_uid: uid, machine_ids: [m1, m2], reports: [] });
    expect(listed.copies).toHaveLength(1);
    expect(listed.copies[0]).toMatchObject({
      id: copyId,
      src_id: a,
      dst_kind: 'volume',
      dst_id: vol,
      dst_path: '/in/',
      dst_port: 0,
      dst_size_gb: 7,
    });
    const done = await agentCopies(t().deps, auth, {
      agent_uid: uid,
      machine_ids: [m1, m2],
      reports: [{ id: copyId, state: 'done', bytes: 10 }],
    });
    expect(done.copies).toEqual([]);
    const list = await t().request('GET', '/api/v0/commands/copy_direct/', { key: u.apiKey });
    expect(list.body.copies[0]).toMatchObject({
      id: copyId,
      status: 'done',
      dst_kind: 'volume',
      dst_id: vol,
    });
    const events = await t()
      .deps.db.selectFrom('events')
      .select(['type', 'subject'])
      .where('user_id', '=', u.id)
      .execute();
    expect(events.filter((e) => e.type.startsWith('copy.'))).toEqual([
      { type: 'copy.started', subject: `volume:${vol}` },
      { type: 'copy.completed', subject: `volume:${vol}` },
    ]);
    const none = await t().request('DELETE', '/api/v0/commands/copy_direct/', {
      key: u.apiKey,
      body: { client_id: 'me', dst_id: `V.${vol}` },
    });
    expect(none.body).toMatchObject({ success: false, canceled: 0 });
  });

  it('cancel copy ends the copy into the instance, once', async () => {
    const { u, a, b } = await pair();
    await put(u.apiKey, { src_id: a, dst_id: b, src_path: '/', dst_path: '/d/' });
    const c = await t().request('DELETE', '/api/v0/commands/copy_direct/', {
      key: u.apiKey,
      body: { client_id: 'me', dst_id: `${b}` },
    });
    expect(c.body).toMatchObject({ success: true, canceled: 1 });
    const again = await t().request('DELETE', '/api/v0/commands/copy_direct/', {
      key: u.apiKey,
      body: { client_id: 'me', dst_id: b },
    });
    expect(again.body).toMatchObject({ success: false, canceled: 0 });
    // A new copy may start once the last one ended.
    expect((await put(u.apiKey, { src_id: a, dst_id: b, src_path: '/', dst_path: '/d/' })).status).toBe(200);
  });
});
