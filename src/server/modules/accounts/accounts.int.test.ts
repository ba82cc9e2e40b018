import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';

describeEachDb('accounts', (dialect) => {
  const t = useTestApp(dialect);

  it('users/current returns the user fields, balance, email_verified and api_key', async () => {
    const u = await t().user({ fullName: 'Ada Lovelace', balanceUsd: 12.5 });
    const r = await t().request('GET', '/api/v0/users/current/', { key: u.apiKey });
    expect(r.body).toMatchObject({
      id: u.id,
      email: u.email,
      full_name: 'Ada Lovelace',
      tfa_status: 'disabled',
      balance: 12.5,
      email_verified: true,
      api_key: u.apiKey,
    });
  });

  it('password login starts a cookie session that authenticates later calls', async () => {
    const u = await t().user({ password: 'correct horse battery' });
    const r = await t().request('POST', '/api/v0/users/login/', {
      body: { email: u.email.toUpperCase(), password: 'correct horse battery' },
    });
    expect(r.status).toBe(200);
    expect(r.body.id).toBe(u.id);
    expect(r.body.password_hash).toBeUndefined();
    const setCookie = String(r.headers['set-cookie']);
    expect(setCookie).toMatch(/openrig_session=/);
    expect(setCookie).toMatch(/HttpOnly/i);
    const cookie = setCookie.split(';')[0]!;
    const me = await t().request('GET', '/api/v0/users/current', { headers: { cookie } });
    expect(me.status).toBe(200);
    expect(me.body.id).toBe(u.id);
  });

  it('a wrong password and an unknown e-mail get the same 401', async () => {
    const u = await t().user({ password: 'right password' });
    const wrong = await t().request('POST', '/api/v0/users/login/', {
      body: { email: u.email, password: 'nope' },
    });
    const unknown = await t().request('POST', '/api/v0/users/login/', {
      body: { email: 'ghost@example.com', password: 'nope' },
    });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body).toEqual(unknown.body);
    expect(wrong.headers['set-cookie']).toBeUndefined();
  });

  it('stores the password as an argon2id hash', async () => {
    const u = await t().user({ password: 'hunter2hunter2' });
    const row = await t()
      .db.store.db.selectFrom('users')
      .select('password_hash')
      .where('id', '=', u.id)
      .executeTakeFirstOrThrow();
    expect(row.password_hash).toMatch(/^\$argon2id\$/);
    expect(row.password_hash).not.toContain('hunter2');
  });
});
