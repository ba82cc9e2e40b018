// A user changes their own account settings (PUT /api/v0/users/ and PUT /api/v0/users/{own id}/)
// and GET /users/current shows them; refused fields, bad values and other accounts change nothing.
import { beforeAll, describe, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { scopedKey, useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { insertMachines } from '../machines/machines.service.js';
import { renter } from '../../../../test/helpers/market.js';

type U = Awaited<ReturnType<TestApp['user']>>;

const put = (t: TestApp, key: string | null, body: unknown, path = '/api/v0/users/') =>
  t.request('PUT', path, { key, body });
const current = async (t: TestApp, key: string) =>
  (await t.request('GET', '/api/v0/users/current', { key })).body as Record<string, unknown>;

/** Every row an update may write, to compare before and after a refused one. */
async function snapshot(t: TestApp, userId: number) {
  const db = t.deps.db;
  return {
    user: await db
      .selectFrom('users')
      .select(['full_name', 'email', 'phone_number'])
      .where('id', '=', userId)
      .executeTakeFirst(),
    profile: await db
      .selectFrom('account_profiles')
      .selectAll()
      .where('user_id', '=', userId)
      .executeTakeFirst(),
    alert: await db.selectFrom('balance_alerts').selectAll().where('user_id', '=', userId).executeTakeFirst(),
  };
}

describeEachDb('account settings', (dialect) => {
  const t = useTestApp(dialect);

  describe('name and billing address', () => {
    let u: U;
    beforeAll(async () => {
      u = await t().user({ fullName: 'Ada' });
    });

    it('a new account shows every setting empty', async () => {
      expect(await current(t(), u.apiKey)).toMatchObject({
        fullname: 'Ada',
        billaddress_line1: null,
        billaddress_line2: null,
        billaddress_city: null,
        billaddress_zip: null,
        billaddress_country: null,
        billaddress_taxinfo: null,
        balance_threshold_enabled: false,
        balance_threshold: null,
      });
    });

    it('PUT /users/ sets them; the reply and GET /users/current show them', async () => {
      const r = await put(t(), u.apiKey, {
        fullname: 'Ada Lovelace',
        billaddress_line1: '12 St James Sq',
        billaddress_city: 'London',
        billaddress_zip: 'SW1Y 4JH',
        billaddress_country: 'GB',
        billaddress_taxinfo: 'GB123456789',
      });
      expect(r.status, r.raw).toBe(200);
      expect(r.body.success).toBe(true);
      expect(r.body.msg).toBe(
        'Account updated: fullname, billaddress_line1, billaddress_city, billaddress_zip, billaddress_country, billaddress_taxinfo',
      );
      const shown = {
        full_name: 'Ada Lovelace',
        fullname: 'Ada Lovelace',
        billaddress_line1: '12 St James Sq',
        billaddress_line2: null,
        billaddress_city: 'London',
        billaddress_zip: 'SW1Y 4JH',
        billaddress_country: 'GB',
        billaddress_taxinfo: 'GB123456789',
      };
      expect(r.body.user).toMatchObject({ id: u.id, email: u.email, ...shown });
      expect(r.body.user).not.toHaveProperty('api_key');
      expect(await current(t(), u.apiKey)).toMatchObject(shown);
    });

    it('a later update changes only what it gives; null or "" clears a field', async () => {
      expect(
        (await put(t(), u.apiKey, { billaddress_line2: 'Flat 2', billaddress_taxinfo: null })).status,
      ).toBe(200);
      expect((await put(t(), u.apiKey, { billaddress_zip: '' })).status).toBe(200);
      expect(await current(t(), u.apiKey)).toMatchObject({
        fullname: 'Ada Lovelace',
        billaddress_line1: '12 St James Sq',
        billaddress_line2: 'Flat 2',
        billaddress_zip: null,
        billaddress_taxinfo: null,
      });
    });

    it("PUT /users/{own id}/ does the same; another account's id is 404 and changes nothing", async () => {
      const other = await t().user({ fullName: 'Bob' });
      const own = await put(t(), u.apiKey, { fullname: 'Countess' }, `/api/v0/users/${u.id}/`);
      expect(own.status, own.raw).toBe(200);
      expect((await current(t(), u.apiKey)).fullname).toBe('Countess');
      const before = await snapshot(t(), other.id);
      for (const id of [other.id, 999_999]) {
        const r = await put(t(), u.apiKey, { fullname: 'Hijack' }, `/api/v0/users/${id}/`);
        expect([r.status, r.body.error, r.body.msg]).toEqual([
          404,
          'not_found',
          'No such user: an account changes only its own settings',
        ]);
      }
      expect(await snapshot(t(), other.id)).toEqual(before);
      expect((await put(t(), u.apiKey, { fullname: 'x' }, '/api/v0/users/me/')).status).toBe(400);
    });
  });

  describe('the balance threshold (the balance.low alert)', () => {
    let u: U;
    beforeAll(async () => {
      u = await t().user();
    });
    const alert = () =>
      t().deps.db.selectFrom('balance_alerts').selectAll().where('user_id', '=', u.id).executeTakeFirst();

    it('enabled with a threshold: the alert is on at it, and the events settings show it', async () => {
      const r = await put(t(), u.apiKey, { balance_threshold_enabled: true, balance_threshold: 25 });
      expect(r.status, r.raw).toBe(200);
      expect(r.body.user).toMatchObject({ balance_threshold_enabled: true, balance_threshold: 25 });
      expect(Number((await alert())!.threshold_micros)).toBe(25_000_000);
      const s = await t().request('GET', '/api/v0/events/settings/', { key: u.apiKey });
      expect(s.body.balance_low_threshold).toBe(25);
    });

    it('an unchanged threshold does not re-arm an alert that has fired', async () => {
      await t().deps.db.updateTable('balance_alerts').set({ armed: 0 }).where('user_id', '=', u.id).execute();
      expect(
        (await put(t(), u.apiKey, { balance_threshold: 25, balance_threshold_enabled: true })).status,
      ).toBe(200);
      expect((await alert())!.armed).toBe(0);
      // A new threshold is a new alert.
      expect((await put(t(), u.apiKey, { balance_threshold: '30' })).status).toBe(200);
      expect(await alert()).toMatchObject({ armed: 1 });
      expect(Number((await alert())!.threshold_micros)).toBe(30_000_000);
    });

    it('disabled: the alert is off and the threshold is kept; enabled again, it comes back', async () => {
      expect((await put(t(), u.apiKey, { balance_threshold_enabled: false })).status).toBe(200);
      expect(await alert()).toBeUndefined();
      expect(await current(t(), u.apiKey)).toMatchObject({
        balance_threshold_enabled: false,
        balance_threshold: 30,
      });
      // A threshold given while off is kept for later, and does not turn it on.
      expect((await put(t(), u.apiKey, { balance_threshold: 40 })).status).toBe(200);
      expect(await alert()).toBeUndefined();
      expect(await current(t(), u.apiKey)).toMatchObject({
        balance_threshold_enabled: false,
        balance_threshold: 40,
      });
      expect((await put(t(), u.apiKey, { balance_threshold_enabled: 'true' })).status).toBe(200);
      expect(Number((await alert())!.threshold_micros)).toBe(40_000_000);
    });

    it('an alert set with PUT /events/settings/ shows here too', async () => {
      await t().request('PUT', '/api/v0/events/settings/', {
        key: u.apiKey,
        body: { balance_low_threshold: 5 },
      });
      expect(await current(t(), u.apiKey)).toMatchObject({
        balance_threshold_enabled: true,
        balance_threshold: 5,
      });
    });

    it('enabling with no threshold known is a 400, and nothing of the body is written', async () => {
      const fresh = await t().user({ fullName: 'Fresh' });
      const before = await snapshot(t(), fresh.id);
      const r = await put(t(), fresh.apiKey, { fullname: 'Changed', balance_threshold_enabled: true });
      expect([r.status, r.body.error]).toEqual([400, 'bad_request']);
      expect(r.body.msg).toBe(
        'balance_threshold_enabled true needs a balance_threshold (dollars): none is set on this account',
      );
      expect(await snapshot(t(), fresh.id)).toEqual(before);
      // Forgetting the threshold while on is the same refusal.
      await put(t(), fresh.apiKey, { balance_threshold_enabled: true, balance_threshold: 3 });
      expect((await put(t(), fresh.apiKey, { balance_threshold: null })).status).toBe(400);
      expect(
        (await put(t(), fresh.apiKey, { balance_threshold: null, balance_threshold_enabled: false })).status,
      ).toBe(200);
      expect(await current(t(), fresh.apiKey)).toMatchObject({
        balance_threshold_enabled: false,
        balance_threshold: null,
      });
    });

    it('the alert fires balance.low at the threshold as set here', async () => {
      const host = await t().user();
      const [offer] = await insertMachines(
        t().deps.db,
        [{ hostId: host.id, gpuName: 'RTX 4090', numGpus: 1, priceGpu: 10 }],
        t().clock.now(),
      );
      const r2 = await renter(t(), { balanceUsd: 100 });
      // The instance never runs (no agent): its disk alone takes the balance below 100.
      expect(
        (await put(t(), r2.apiKey, { balance_threshold_enabled: true, balance_threshold: 100 })).status,
      ).toBe(200);
      const c = await t().request('PUT', `/api/v0/asks/${offer}/`, {
        key: r2.apiKey,
        body: { image: 'ubuntu:22.04', disk: 10 },
      });
      expect(c.status, c.raw).toBe(200);
      t().clock.advance(3_600_000);
      const { runMeter } = await import('../billing/billing.service.js');
      await runMeter(t().deps);
      const events = await t()
        .deps.db.selectFrom('events')
        .select(['type', 'data'])
        .where('user_id', '=', r2.id)
        .where('type', '=', 'balance.low')
        .execute();
      expect(events).toHaveLength(1);
      const data = typeof events[0]!.data === 'string' ? JSON.parse(events[0]!.data) : events[0]!.data;
      expect(data.threshold).toBe(100);
      expect(data.balance).toBeLessThan(100);
    });
  });

  it('refused, read-only, unknown and bad fields: 400 naming them, nothing written', async () => {
    const u = await t().user({ fullName: 'Kept', phone: '+14155550100' });
    await put(t(), u.apiKey, { billaddress_city: 'Paris' });
    const before = await snapshot(t(), u.id);
    const bodies: [unknown, string][] = [
      [
        { fullname: 'New', email: 'x@example.com' },
        'email (the sign-in address; the operator of this server changes it)',
      ],
      [{ fullname: 'New', phone_number: '+14155550199' }, 'phone_number (an SMS second factor: tfa send-sms'],
      [{ fullname: 'New', password: 'hunter22' }, 'password (set by the operator of this server)'],
      [{ fullname: 'New', balance: 1e6 }, 'Read-only field of the user object: balance'],
      [{ fullname: 'New', favourite: 'x' }, 'Unknown field: "favourite"'],
      [{ fullname: 'New', billaddress_zip: 'z'.repeat(40) }, 'billaddress_zip must be at most 32 characters'],
      [{ fullname: 'New', billaddress_city: 42 }, 'billaddress_city must be a string or null'],
      [{ fullname: 'New', balance_threshold: 'lots' }, 'balance_threshold must be a number of dollars'],
      [[{ fullname: 'New' }], 'The body must be a JSON object'],
      [{}, 'Nothing to change'],
    ];
    for (const [body, msg] of bodies) {
      const r = await put(t(), u.apiKey, body);
      expect([r.status, r.body.error], JSON.stringify(body)).toEqual([400, 'bad_request']);
      expect(r.body.msg).toContain(msg);
    }
    const raw = await t().request('PUT', '/api/v0/users/', {
      key: u.apiKey,
      rawBody: '{"fullname": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(raw.status).toBe(400);
    expect(await snapshot(t(), u.id)).toEqual(before);
    expect((await current(t(), u.apiKey)).phone_number).toBe('***0100');
  });

  it('needs a key (401) that may write the user family (403); an instance key is refused', async () => {
    const u = await renter(t());
    expect((await put(t(), null, { fullname: 'x' })).status).toBe(401);
    expect((await put(t(), 'or_nosuchkey', { fullname: 'x' })).status).toBe(401);
    for (const perms of [{ user: 'read' }, { machines: 'write', billing: 'write' }, 'read_only']) {
      const k = await scopedKey(t(), u.apiKey, perms);
      const r = await put(t(), k, { fullname: 'Scoped' });
      expect([r.status, r.body.error], JSON.stringify(perms)).toEqual([403, 'forbidden']);
      expect((await put(t(), k, { fullname: 'Scoped' }, `/api/v0/users/${u.id}/`)).status).toBe(403);
    }
    const host = await t().user();
    const [offer] = await insertMachines(
      t().deps.db,
      [{ hostId: host.id, gpuName: 'RTX 4090', numGpus: 1 }],
      t().clock.now(),
    );
    const c = await t().request('PUT', `/api/v0/asks/${offer}/`, {
      key: u.apiKey,
      body: { image: 'ubuntu', disk: 10 },
    });
    expect((await put(t(), c.body.instance_api_key, { fullname: 'Container' })).status).toBe(403);
    expect((await current(t(), u.apiKey)).fullname).not.toBe('Scoped');
    const w = await scopedKey(t(), u.apiKey, { user: 'write' });
    expect((await put(t(), w, { fullname: 'Written' })).status).toBe(200);
    expect((await current(t(), u.apiKey)).fullname).toBe('Written');
  });
});
