import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';

describeEachDb('api keys', (dialect) => {
  const t = useTestApp(dialect);

  it('creates a key shown once, lists it without the key, and gets it by id', async () => {
    const u = await t().user();
    const c = await t().request('POST', '/api/v0/auth/apikeys/', { key: u.apiKey, body: { name: 'ci' } });
    expect(c.status).toBe(200);
    expect(c.body.key).toMatch(/^or_/);
    expect(c.body.permissions).toBe('full');
    const l = await t().request('GET', '/api/v0/auth/apikeys/', { key: u.apiKey });
    expect(l.body.apikeys.map((k: any) => k.name)).toEqual(['default', 'ci']);
    expect(JSON.stringify(l.body)).not.toContain(c.body.key);
    const g = await t().request('GET', `/api/v0/auth/apikeys/${c.body.id}/`, { key: u.apiKey });
    expect(g.body.apikey.id).toBe(c.body.id);
    expect(g.body.apikey.key).toBeUndefined();
    const me = await t().request('GET', '/api/v0/users/current', { key: c.body.key });
    expect(me.body.id).toBe(u.id);
  });

  it('refuses a revoked key on its very next request', async () => {
    const u = await t().user();
    const c = await t().request('POST', '/api/v0/auth/apikeys', { key: u.apiKey, body: {} });
    expect((await t().request('GET', '/api/v0/users/current', { key: c.body.key })).status).toBe(200);
    const d = await t().request('DELETE', `/api/v0/auth/apikeys/${c.body.id}/`, { key: u.apiKey, body: {} });
    expect(d.status).toBe(200);
    expect(d.body.success).toBe(true);
    const after = await t().request('GET', '/api/v0/users/current', { key: c.body.key });
    expect(after.status).toBe(401);
    expect(after.body).toEqual({ error: 'auth_error', msg: 'Invalid user key' });
    // Revoking again, or someone else's key, is a 404.
    expect(
      (await t().request('DELETE', `/api/v0/auth/apikeys/${c.body.id}/`, { key: u.apiKey })).status,
    ).toBe(404);
  });

  it("does not show or revoke another user's key", async () => {
    const a = await t().user();
    const b = await t().user();
    const c = await t().request('POST', '/api/v0/auth/apikeys', { key: a.apiKey, body: {} });
    expect((await t().request('GET', `/api/v0/auth/apikeys/${c.body.id}`, { key: b.apiKey })).status).toBe(
      404,
    );
    expect((await t().request('DELETE', `/api/v0/auth/apikeys/${c.body.id}`, { key: b.apiKey })).status).toBe(
      404,
    );
    expect((await t().request('GET', '/api/v0/users/current', { key: c.body.key })).status).toBe(200);
  });

  it('a read-only key reads but gets 403 on writes, and nothing changes', async () => {
    const u = await t().user();
    const ro = await t().request('POST', '/api/v0/auth/apikeys', {
      key: u.apiKey,
      body: { permissions: 'read_only' },
    });
    expect(ro.status).toBe(200);
    expect((await t().request('GET', '/api/v0/auth/apikeys', { key: ro.body.key })).status).toBe(200);
    const w = await t().request('POST', '/api/v0/auth/apikeys', { key: ro.body.key, body: { name: 'x' } });
    expect(w.status).toBe(403);
    expect(w.body.error).toBe('forbidden');
    const del = await t().request('DELETE', `/api/v0/auth/apikeys/${ro.body.id}`, { key: ro.body.key });
    expect(del.status).toBe(403);
    const l = await t().request('GET', '/api/v0/auth/apikeys', { key: u.apiKey });
    expect(l.body.apikeys).toHaveLength(2);
  });

  it('a key scoped to one family is refused elsewhere', async () => {
    const u = await t().user();
    const k = await t().request('POST', '/api/v0/auth/apikeys', {
      key: u.apiKey,
      body: { permissions: { ssh_keys: 'write' } },
    });
    expect(k.body.permissions).toEqual({ ssh_keys: 'write' });
    expect((await t().request('GET', '/api/v0/ssh/', { key: k.body.key })).status).toBe(200);
    expect((await t().request('GET', '/api/v0/users/current', { key: k.body.key })).status).toBe(403);
    expect((await t().request('GET', '/api/v0/auth/apikeys', { key: k.body.key })).status).toBe(403);
  });

  it('a key cannot mint a key with more power than itself', async () => {
    const u = await t().user();
    const k = await t().request('POST', '/api/v0/auth/apikeys', {
      key: u.apiKey,
      body: { permissions: { api_keys: 'write', offers: 'read' } },
    });
    const wider = await t().request('POST', '/api/v0/auth/apikeys', {
      key: k.body.key,
      body: { permissions: 'full' },
    });
    expect(wider.status).toBe(403);
    const more = await t().request('POST', '/api/v0/auth/apikeys', {
      key: k.body.key,
      body: { permissions: { offers: 'write' } },
    });
    expect(more.status).toBe(403);
    const same = await t().request('POST', '/api/v0/auth/apikeys', {
      key: k.body.key,
      body: { permissions: { offers: 'read' } },
    });
    expect(same.status).toBe(200);
    // Nor revoke one: the full key and a wider one stay; a key within its own power goes.
    const keys = await t().request('GET', '/api/v0/auth/apikeys', { key: u.apiKey });
    const full = keys.body.apikeys.find((x: { name: string }) => x.name === 'default');
    expect(full.permissions).toBe('full');
    const widerKey = await t().request('POST', '/api/v0/auth/apikeys', {
      key: u.apiKey,
      body: { permissions: { offers: 'write', api_keys: 'write' } },
    });
    for (const victim of [full.id as number, widerKey.body.id as number]) {
      const r = await t().request('DELETE', `/api/v0/auth/apikeys/${victim}/`, { key: k.body.key });
      expect(r.status).toBe(403);
      expect(r.body.error).toBe('forbidden');
    }
    expect((await t().request('GET', '/api/v0/users/current/', { key: u.apiKey })).status).toBe(200);
    expect((await t().request('GET', '/api/v0/auth/apikeys/', { key: widerKey.body.key })).status).toBe(200);
    const narrower = await t().request('DELETE', `/api/v0/auth/apikeys/${same.body.id}/`, {
      key: k.body.key,
    });
    expect(narrower.status).toBe(200);
    const itself = await t().request('DELETE', `/api/v0/auth/apikeys/${k.body.id}/`, { key: k.body.key });
    expect(itself.status).toBe(200);
    // The full key revokes anything.
    expect(
      (await t().request('DELETE', `/api/v0/auth/apikeys/${widerKey.body.id}/`, { key: u.apiKey })).status,
    ).toBe(200);
  });

  it('rejects bad permissions with 400 naming the problem', async () => {
    const u = await t().user();
    const r = await t().request('POST', '/api/v0/auth/apikeys', {
      key: u.apiKey,
      body: { permissions: { rockets: 'write' } },
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('bad_request');
    expect(r.body.msg).toContain('rockets');
    const r2 = await t().request('POST', '/api/v0/auth/apikeys', {
      key: u.apiKey,
      body: { permissions: { offers: 'admin' } },
    });
    expect(r2.status).toBe(400);
  });

  it('decides concurrent revocation and use in the database: after revoke returns, every use fails', async () => {
    const u = await t().user();
    const c = await t().request('POST', '/api/v0/auth/apikeys', { key: u.apiKey, body: {} });
    const uses = Array.from({ length: 20 }, () =>
      t().request('GET', '/api/v0/users/current', { key: c.body.key }),
    );
    const revokes = Array.from({ length: 5 }, () =>
      t().request('DELETE', `/api/v0/auth/apikeys/${c.body.id}`, { key: u.apiKey }),
    );
    const [useRes, revRes] = await Promise.all([Promise.all(uses), Promise.all(revokes)]);
    expect(revRes.filter((r) => r.status === 200)).toHaveLength(1);
    expect(revRes.filter((r) => r.status === 404)).toHaveLength(4);
    expect(useRes.every((r) => r.status === 200 || r.status === 401)).toBe(true);
    expect((await t().request('GET', '/api/v0/users/current', { key: c.body.key })).status).toBe(401);
  });
});
