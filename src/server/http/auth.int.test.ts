import { expect, it } from 'vitest';
import { describeEachDb } from '../../../test/helpers/db.js';
import { useTestApp } from '../../../test/helpers/app.js';
import { sha256Hex } from '../crypto.js';

describeEachDb('authentication', (dialect) => {
  const t = useTestApp(dialect);

  it('accepts the Bearer header and returns the presented credential as api_key', async () => {
    const u = await t().user();
    const r = await t().request('GET', '/api/v0/users/current', { key: u.apiKey });
    expect(r.status).toBe(200);
    expect(r.body.id).toBe(u.id);
    expect(r.body.api_key).toBe(u.apiKey);
    expect(r.headers['content-type']).toBe('application/json');
  });

  it('routes with and without the trailing slash', async () => {
    const u = await t().user();
    const a = await t().request('GET', '/api/v0/users/current/', { key: u.apiKey });
    expect(a.status).toBe(200);
  });

  it('accepts ?api_key= for older clients, and the header wins over it', async () => {
    const u = await t().user();
    const q = await t().request('GET', `/api/v0/users/current?api_key=${u.apiKey}`);
    expect(q.status).toBe(200);
    const both = await t().request('GET', `/api/v0/users/current?api_key=${u.apiKey}`, { key: 'or_wrong' });
    expect(both.status).toBe(401);
    const other = await t().user();
    const win = await t().request('GET', `/api/v0/users/current?api_key=${u.apiKey}`, { key: other.apiKey });
    expect(win.body.id).toBe(other.id);
  });

  it('answers an unknown key with 401 auth_error "Invalid user key", and a missing one with 401', async () => {
    const r = await t().request('GET', '/api/v0/users/current', { key: 'or_nope' });
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ error: 'auth_error', msg: 'Invalid user key' });
    const m = await t().request('GET', '/api/v0/users/current');
    expect(m.status).toBe(401);
    expect(m.body.error).toBe('auth_error');
  });

  it('stores keys only as SHA-256 hashes', async () => {
    const u = await t().user();
    const rows = await t()
      .db.store.db.selectFrom('api_keys')
      .selectAll()
      .where('user_id', '=', u.id)
      .execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.key_hash).toBe(sha256Hex(u.apiKey));
    expect(JSON.stringify(rows)).not.toContain(u.apiKey);
    // 32 random bytes in base64url after the prefix: 256 bits.
    expect(u.apiKey).toMatch(/^or_[A-Za-z0-9_-]{43}$/);
  });

  it('carries the team context of a team key', async () => {
    const u = await t().user({ team: `team-${dialect}` });
    const r = await t().request('GET', '/api/v0/users/current', { key: u.teamApiKey! });
    expect(r.status).toBe(200);
    expect(r.body.team_id).toBeTypeOf('number');
    const p = await t().request('GET', '/api/v0/users/current', { key: u.apiKey });
    expect(p.body.team_id).toBeNull();
  });
});
