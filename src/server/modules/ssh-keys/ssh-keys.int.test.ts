import { expect, it } from 'vitest';
import { ed25519KeyPair } from '../../../contract/ssh-keygen.js';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';

describeEachDb('ssh keys', (dialect) => {
  const t = useTestApp(dialect);

  it('registers, lists, replaces and deletes a key', async () => {
    const u = await t().user();
    const k1 = ed25519KeyPair('one');
    const k2 = ed25519KeyPair('two');
    const c = await t().request('POST', '/api/v0/ssh/', { key: u.apiKey, body: { ssh_key: k1.public } });
    expect(c.status).toBe(200);
    expect(c.body.fingerprint).toMatch(/^SHA256:/);
    const again = await t().request('POST', '/api/v0/ssh/', { key: u.apiKey, body: { ssh_key: k1.public } });
    expect(again.body.id).toBe(c.body.id);
    const p = await t().request('PUT', `/api/v0/ssh/${c.body.id}/`, {
      key: u.apiKey,
      body: { ssh_key: k2.public },
    });
    expect(p.body.comment).toBe('two');
    const l = await t().request('GET', '/api/v0/ssh/', { key: u.apiKey });
    expect(l.body.ssh_keys).toHaveLength(1);
    expect(l.body.ssh_keys[0].ssh_key).toBe(k2.public);
    const d = await t().request('DELETE', `/api/v0/ssh/${c.body.id}/`, { key: u.apiKey, body: {} });
    expect(d.body.success).toBe(true);
    expect((await t().request('GET', '/api/v0/ssh/', { key: u.apiKey })).body.ssh_keys).toHaveLength(0);
  });

  it('refuses a private key with 400 and stores nothing', async () => {
    const u = await t().user();
    const k = ed25519KeyPair();
    const r = await t().request('POST', '/api/v0/ssh/', { key: u.apiKey, body: { ssh_key: k.private } });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('bad_request');
    const rows = await t()
      .db.store.db.selectFrom('ssh_keys')
      .selectAll()
      .where('user_id', '=', u.id)
      .execute();
    expect(rows).toHaveLength(0);
  });

  it("can't touch another user's key", async () => {
    const a = await t().user();
    const b = await t().user();
    const k = ed25519KeyPair();
    const c = await t().request('POST', '/api/v0/ssh/', { key: a.apiKey, body: { ssh_key: k.public } });
    expect((await t().request('DELETE', `/api/v0/ssh/${c.body.id}/`, { key: b.apiKey })).status).toBe(404);
    expect(
      (await t().request('PUT', `/api/v0/ssh/${c.body.id}/`, { key: b.apiKey, body: { ssh_key: k.public } }))
        .status,
    ).toBe(404);
  });
});
