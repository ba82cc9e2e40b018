// The official CLI's account commands (user, API keys, SSH keys), each request as that CLI sends
// it, each reply checked for what the CLI reads (docs/compatibility.md, rows marked "works").
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { PUB, PUB2 } from '../helpers/market.js';
import { cli, expectOk } from './official-cli.js';

describeEachDb('official CLI: account commands', (dialect) => {
  const t = useTestApp(dialect);
  let key: string;
  beforeAll(async () => {
    key = (await t().user()).apiKey;
  });

  it('show user: the user object with the api_key the CLI removes before printing', async () => {
    const r = await cli(t(), { method: 'GET', path: '/users/current', key });
    expectOk(r);
    expect(r.body.api_key).toBe(key);
    expect(typeof r.body.email).toBe('string');
    expect(typeof r.body.balance).toBe('number');
  });

  it("show user: the keys of the CLI's user table (fullname, ssh_key) beside full_name and api_key", async () => {
    const u = await t().user({ fullName: 'Ada Lovelace' });
    const none = await cli(t(), { method: 'GET', path: '/users/current', key: u.apiKey });
    expectOk(none);
    expect(none.body).toMatchObject({
      id: u.id,
      email: u.email,
      full_name: 'Ada Lovelace',
      fullname: 'Ada Lovelace',
      ssh_key: null,
      api_key: u.apiKey,
    });
    // The account's first (oldest) SSH public key, as GET /ssh/ shows it.
    for (const k of [PUB, PUB2])
      expectOk(await cli(t(), { method: 'POST', path: '/ssh/', key: u.apiKey, json: { ssh_key: k } }));
    const keys = (await cli(t(), { method: 'GET', path: '/ssh/', key: u.apiKey })).body.ssh_keys;
    const r = await cli(t(), { method: 'GET', path: '/users/current/', key: u.apiKey });
    expectOk(r);
    expect(r.body.ssh_key).toBe(keys[0].ssh_key);
    expect(r.body.ssh_key).not.toBe(keys[1].ssh_key);
    expect(r.body).toMatchObject({
      fullname: 'Ada Lovelace',
      api_key: u.apiKey,
      balance: expect.any(Number),
    });
    // A key that may not read SSH keys is not shown them.
    const scoped = (
      await cli(t(), {
        method: 'POST',
        path: '/auth/apikeys/',
        key: u.apiKey,
        json: { name: 'u', permissions: { user: 'read' } },
      })
    ).body.key as string;
    const s = await cli(t(), { method: 'GET', path: '/users/current', key: scoped });
    expectOk(s);
    expect(s.body).not.toHaveProperty('ssh_key');
    expect(s.body).toMatchObject({ fullname: 'Ada Lovelace', api_key: scoped });
  });

  it('set user --file F: PUT /users/ with the file; show user reads the fields back', async () => {
    const u = await t().user({ fullName: 'Ada' });
    // The fields as the CLI's help lists them, every one typed "string".
    const file = {
      fullname: 'Ada Lovelace',
      billaddress_line1: '12 St James Sq',
      billaddress_line2: 'Flat 2',
      billaddress_city: 'London',
      billaddress_zip: 'SW1Y 4JH',
      billaddress_country: 'GB',
      billaddress_taxinfo: 'GB123456789',
      balance_threshold_enabled: 'true',
      balance_threshold: '10',
    };
    const r = await cli(t(), { method: 'PUT', path: '/users/', key: u.apiKey, json: file });
    // The CLI raises for a 4xx and prints the reply's JSON otherwise.
    expectOk(r);
    expect(r.body).toMatchObject({
      success: true,
      user: { fullname: 'Ada Lovelace', balance_threshold: 10 },
    });
    const show = await cli(t(), { method: 'GET', path: '/users/current', key: u.apiKey });
    expectOk(show);
    expect(show.body).toMatchObject({
      ...file,
      balance_threshold_enabled: true,
      balance_threshold: 10,
      api_key: u.apiKey,
    });
    // A field the account's security rests on: a 400 whose msg names it and how it is changed.
    const email = await cli(t(), {
      method: 'PUT',
      path: '/users/',
      key: u.apiKey,
      json: { fullname: 'Mallory', email: 'mallory@example.com', phone_number: '+14155550123' },
    });
    expect([email.status, email.contentType, email.body.error]).toEqual([
      400,
      'application/json',
      'bad_request',
    ]);
    expect(email.body.msg).toMatch(/^These fields cannot be changed here: email \(.*\); phone_number \(/);
    expect((await cli(t(), { method: 'GET', path: '/users/current', key: u.apiKey })).body.fullname).toBe(
      'Ada Lovelace',
    );
  });

  it('create api-key with a marketplace permission file: {id, key, permissions} as given, and the key is scoped', async () => {
    const permissions = { api: { instance_read: {}, misc: {} } };
    const r = await cli(t(), {
      method: 'POST',
      path: '/auth/apikeys/',
      key,
      json: { name: 'ro', permissions, key_params: null },
    });
    expectOk(r);
    expect(Number.isInteger(r.body.id)).toBe(true);
    expect(typeof r.body.key).toBe('string');
    expect(r.body.permissions).toEqual(permissions);
    const scoped = r.body.key as string;
    // instance_read: list instances, not change them; misc: search offers; nothing else.
    expect((await cli(t(), { method: 'GET', path: '/instances/', key: scoped })).status).toBe(200);
    expect(
      (
        await cli(t(), {
          method: 'PUT',
          path: '/instances/',
          key: scoped,
          json: { state: 'stopped', ids: [1] },
        })
      ).status,
    ).toBe(403);
    expect((await cli(t(), { method: 'POST', path: '/bundles/', key: scoped, json: {} })).status).toBe(200);
    expect((await cli(t(), { method: 'GET', path: '/ssh/', key: scoped })).status).toBe(403);
    expect(
      (await cli(t(), { method: 'GET', path: '/machines', query: { owner: 'me' }, key: scoped })).status,
    ).toBe(403);

    // show api-key / show api-keys: the permissions as they were given.
    const one = await cli(t(), { method: 'GET', path: `/auth/apikeys/${r.body.id}/`, key });
    expectOk(one);
    expect(one.body.apikey.permissions).toEqual(permissions);
    const all = await cli(t(), { method: 'GET', path: '/auth/apikeys/', key });
    expectOk(all);
    expect(all.body.apikeys.find((k: { id: number }) => k.id === r.body.id).permissions).toEqual(permissions);

    // delete api-key: the key stops working on its next request.
    const del = await cli(t(), { method: 'DELETE', path: `/auth/apikeys/${r.body.id}/`, key, json: {} });
    expectOk(del);
    expect(del.body.success).toBe(true);
    expect((await cli(t(), { method: 'GET', path: '/instances/', key: scoped })).status).toBe(401);
  });

  it('maps each marketplace category onto its families; write includes read', async () => {
    const make = async (api: Record<string, unknown>) =>
      (
        await cli(t(), {
          method: 'POST',
          path: '/auth/apikeys/',
          key,
          json: { name: 'k', permissions: { api }, key_params: 'x' },
        })
      ).body.key as string;
    const host = await make({ machine_write: {} });
    expect(
      (await cli(t(), { method: 'GET', path: '/machines', query: { owner: 'me' }, key: host })).status,
    ).toBe(200);
    expect(
      (await cli(t(), { method: 'GET', path: '/machines/maintenances', query: { owner: 'me' }, key: host }))
        .status,
    ).toBe(200);
    expect((await cli(t(), { method: 'GET', path: '/instances/', key: host })).status).toBe(403);
    const user = await make({ user_read: {}, billing_read: {} });
    expect((await cli(t(), { method: 'GET', path: '/users/current', key: user })).status).toBe(200);
    expect((await cli(t(), { method: 'GET', path: '/ssh/', key: user })).status).toBe(200);
    expect((await cli(t(), { method: 'GET', path: '/billing/', key: user })).status).toBe(200);
    expect(
      (await cli(t(), { method: 'POST', path: '/ssh/', key: user, json: { ssh_key: PUB2 } })).status,
    ).toBe(403);
  });

  it('refuses a category openrig does not have, or narrowing constraints, with a 400 naming it; nothing created', async () => {
    const before = (await cli(t(), { method: 'GET', path: '/auth/apikeys/', key })).body.apikeys.length;
    const cases: [Record<string, unknown>, string][] = [
      [{ instance_read: {}, gpu_write: {} }, 'gpu_write'],
      [{ instance_write: { constraints: { id: { eq: 5 } } } }, 'instance_write'],
    ];
    for (const [api, named] of cases) {
      const r = await cli(t(), {
        method: 'POST',
        path: '/auth/apikeys/',
        key,
        json: { name: 'bad', permissions: { api }, key_params: null },
      });
      expect(r.status, r.text).toBe(400);
      expect(r.body.error).toBe('bad_request');
      expect(r.body.msg).toContain(named);
    }
    expect((await cli(t(), { method: 'GET', path: '/auth/apikeys/', key })).body.apikeys.length).toBe(before);
  });

  it("openrig's own permission format keeps working and is shown as given", async () => {
    const r = await cli(t(), {
      method: 'POST',
      path: '/auth/apikeys/',
      key,
      json: { name: 'own', permissions: { instances: 'write', offers: 'read' } },
    });
    expectOk(r);
    expect(r.body.permissions).toEqual({ instances: 'write', offers: 'read' });
    const ro = await cli(t(), {
      method: 'POST',
      path: '/auth/apikeys/',
      key,
      json: { name: 'ro', permissions: 'read_only' },
    });
    expect(ro.body.permissions).toBe('read_only');
    const full = await cli(t(), {
      method: 'POST',
      path: '/auth/apikeys/',
      key,
      json: { name: null, permissions: null },
    });
    expect(full.body.permissions).toBe('full');
  });

  it('create ssh-key, show ssh-keys, update ssh-key, delete ssh-key', async () => {
    const c = await cli(t(), { method: 'POST', path: '/ssh/', key, json: { ssh_key: PUB } });
    expectOk(c);
    const id = c.body.id as number;
    expect(Number.isInteger(id)).toBe(true);
    const list = await cli(t(), { method: 'GET', path: '/ssh/', key });
    expectOk(list);
    expect(list.body.ssh_keys.map((k: { id: number }) => k.id)).toContain(id);
    const u = await cli(t(), { method: 'PUT', path: `/ssh/${id}/`, key, json: { id, ssh_key: PUB2 } });
    expectOk(u);
    expect(u.body.success).toBe(true);
    const d = await cli(t(), { method: 'DELETE', path: `/ssh/${id}/`, key, json: {} });
    expectOk(d);
    expect(d.body.success).toBe(true);
  });
});
