// The polled instance read: on PostgreSQL an API key's GET of one instance is one statement (the
// key lookup with the instance read, KeyJoinedRead in http/auth.ts), on SQLite two in one read
// transaction. Either way the
// reply is the one the usual read gives (an id with a leading zero takes the usual read on both),
// and the key is checked the same: unknown, revoked, other families, other users' instances. The
// v0 list is one statement after the key on both.
import { beforeAll, describe, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type Reply } from '../../../../test/helpers/app.js';
import { offers, renter } from '../../../../test/helpers/market.js';

describeEachDb('the polled instance read', (dialect) => {
  const t = useTestApp(dialect);
  let u: Awaited<ReturnType<typeof renter>>;
  let other: Awaited<ReturnType<typeof renter>>;
  let mine: number;
  let theirs: number;
  let gone: number;

  const rent = async (key: string, offer: number) => {
    const r = await t().request('PUT', `/api/v0/asks/${offer}/`, {
      key,
      body: { image: 'ubuntu:22.04', disk: 10, label: 'poll', env: { A: 'b' }, onstart: 'echo hi' },
    });
    expect(r.status).toBe(200);
    return r.body.new_contract as number;
  };

  /**
   * The reply, how many statements Store.read, Store.readCoalesced and Store.readSnapshot ran for
   * it, and how many read transactions of several statements (readSnapshot) it made.
   */
  const poll = async (
    id: string,
    key: string | null,
    query = '',
  ): Promise<Reply & { reads: number; snapshots: number }> => {
    const store = t().deps.store;
    const { read, readCoalesced, readSnapshot } = store;
    let reads = 0;
    let snapshots = 0;
    store.read = (text, params) => {
      reads++;
      return read(text, params);
    };
    store.readCoalesced = (text, params) => {
      reads++;
      return readCoalesced(text, params);
    };
    if (readSnapshot)
      store.readSnapshot = (fn) => {
        snapshots++;
        return readSnapshot((r) =>
          fn((text, params) => {
            reads++;
            return r(text, params);
          }),
        );
      };
    try {
      const path = id === '' ? '/api/v0/instances/' : `/api/v0/instances/${id}/`;
      return { ...(await t().request('GET', `${path}${query}`, { key })), reads, snapshots };
    } finally {
      Object.assign(store, { read, readCoalesced, readSnapshot });
    }
  };
  const oneStatement = dialect === 'postgres';

  beforeAll(async () => {
    u = await renter(t());
    other = await renter(t());
    const [a, b, c] = await offers(t(), 3);
    mine = await rent(u.apiKey, a!);
    theirs = await rent(other.apiKey, b!);
    gone = await rent(u.apiKey, c!);
    expect((await t().request('DELETE', `/api/v0/instances/${gone}/`, { key: u.apiKey })).status).toBe(200);
    // A window on the machine of `mine`, so the joined read's windows are compared too.
    const { machine_id } = await t()
      .deps.db.selectFrom('instances')
      .select('machine_id')
      .where('id', '=', mine)
      .executeTakeFirstOrThrow();
    const { host_id } = await t()
      .deps.db.selectFrom('machines')
      .select('host_id')
      .where('id', '=', machine_id)
      .executeTakeFirstOrThrow();
    const start = t().clock.now() + 3_600_000;
    await t()
      .deps.db.insertInto('maintenance_windows')
      .values({
        machine_id,
        host_id,
        batch_id: 'poll-test',
        start_time: start,
        end_time: start + 7_200_000,
        duration_hours: 2,
        category: 'power',
        notifications_sent: 0,
        created_at: t().clock.now(),
        canceled_at: null,
      })
      .execute();
  });

  it(`answers an API key's poll with ${oneStatement ? 'one statement' : 'two statements'}, and the same reply as the usual read`, async () => {
    const joined = await poll(String(mine), u.apiKey);
    const usual = await poll(`0${mine}`, u.apiKey);
    expect(joined.status).toBe(200);
    expect(joined.reads).toBe(oneStatement ? 1 : 2);
    // On SQLite the key and the instance are read in one read transaction; the usual way, two.
    expect(joined.snapshots).toBe(oneStatement ? 0 : 1);
    expect(usual.reads).toBe(2);
    expect(usual.snapshots).toBe(0);
    expect(joined.raw).toBe(usual.raw);
    expect(joined.body.instances.id).toBe(mine);
    expect(joined.body.instances.maintenances).toHaveLength(1);
    // ?api_key= is an API key too.
    const query = await poll(String(mine), null, `?api_key=${u.apiKey}`);
    expect(query.reads).toBe(oneStatement ? 1 : 2);
    expect(query.raw).toBe(usual.raw);
  });

  it("answers {instances: null} for another user's instance and for a destroyed one, as the usual read does", async () => {
    for (const id of [theirs, gone, 987654321]) {
      const joined = await poll(String(id), u.apiKey);
      expect(joined.status).toBe(200);
      expect(joined.body).toEqual({ instances: null });
      expect(joined.reads).toBe(oneStatement ? 1 : 2);
      expect((await poll(`0${id}`, u.apiKey)).raw).toBe(joined.raw);
    }
  });

  it('checks the key as without the joined read: unknown, revoked and read-only of another family are refused', async () => {
    const unknown = await poll(String(mine), 'or_not-a-key-at-all');
    expect(unknown.status).toBe(401);
    expect(unknown.body.error).toBeTypeOf('string');
    expect(unknown.raw).not.toContain('"machine_id"');

    const made = await t().request('POST', '/api/v0/auth/apikeys/', {
      key: u.apiKey,
      body: { name: 'billing only', permissions: { billing: 'read' } },
    });
    expect(made.status).toBe(200);
    const narrow = await poll(String(mine), made.body.key);
    expect(narrow.status).toBe(403);
    expect(narrow.raw).not.toContain('"machine_id"');
    expect((await poll(`0${mine}`, made.body.key)).status).toBe(403);

    const spare = await t().request('POST', '/api/v0/auth/apikeys/', {
      key: u.apiKey,
      body: { name: 'to revoke' },
    });
    expect(spare.status).toBe(200);
    expect((await poll(String(mine), spare.body.key)).status).toBe(200);
    expect(
      (await t().request('DELETE', `/api/v0/auth/apikeys/${spare.body.id}/`, { key: u.apiKey })).status,
    ).toBe(200);
    const revoked = await poll(String(mine), spare.body.key);
    expect(revoked.status).toBe(401);
    expect(revoked.raw).not.toContain('"machine_id"');
  });

  it("lets an instance's own key read it exactly as the usual read does", async () => {
    const created = await t().request('GET', `/api/v0/instances/${mine}/`, { key: u.apiKey });
    expect(created.status).toBe(200);
    const { decryptSecret } = await import('../../crypto.js');
    const { container_key_enc } = await t()
      .deps.db.selectFrom('instances')
      .select('container_key_enc')
      .where('id', '=', mine)
      .executeTakeFirstOrThrow();
    const instanceKey = decryptSecret(t().config.secretKey, container_key_enc!);
    const joined = await poll(String(mine), instanceKey);
    const usual = await poll(`0${mine}`, instanceKey);
    expect(joined.status).toBe(usual.status);
    expect(joined.raw).toBe(usual.raw);
  });

  it("lists the caller's instances in one statement after the key, each as the single read shows it", async () => {
    const list = await poll('', u.apiKey);
    expect(list.status).toBe(200);
    expect(list.reads).toBe(2);
    expect(list.body.instances.map((i: { id: number }) => i.id)).toEqual([mine]);
    expect(list.body.instances_found).toBe(1);
    const one = await poll(String(mine), u.apiKey);
    expect(list.body.instances[0]).toEqual(one.body.instances);
    expect(list.body.instances[0].maintenances).toHaveLength(1);
  });

  describe('ids the schema does not take unchanged go the usual way', () => {
    it.each(['abc', '0', '-1', '1.5', '99999999999999999999'])(
      '%s: 400, as without the joined read',
      async (id) => {
        const r = await poll(id, u.apiKey);
        expect(r.status).toBe(400);
        expect(r.body.error).toBeTypeOf('string');
        expect(r.reads).toBeLessThanOrEqual(1);
      },
    );
  });
});
