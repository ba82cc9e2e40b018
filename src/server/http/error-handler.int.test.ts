import { expect, it } from 'vitest';
import { describeEachDb } from '../../../test/helpers/db.js';
import { useTestApp } from '../../../test/helpers/app.js';

describeEachDb('error handling', (dialect) => {
  const t = useTestApp(dialect);

  it('unknown route: 404 not_found in the {error, msg} shape with exact JSON content type', async () => {
    const u = await t().user();
    const r = await t().request('GET', '/api/v0/nowhere/', { key: u.apiKey });
    expect(r.status).toBe(404);
    expect(r.body.error).toBe('not_found');
    expect(typeof r.body.msg).toBe('string');
    expect(r.headers['content-type']).toBe('application/json');
  });

  it('malformed JSON: 400 bad_request', async () => {
    const u = await t().user();
    const r = await t().request('POST', '/api/v0/ssh/', {
      key: u.apiKey,
      rawBody: '{"ssh_key": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: 'bad_request', msg: 'Malformed JSON body' });
  });

  it('schema violations: 400 with a msg naming the field, and no coercion of body types', async () => {
    const u = await t().user();
    const missing = await t().request('POST', '/api/v0/ssh/', { key: u.apiKey, body: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.msg).toContain('ssh_key');
    const wrongType = await t().request('POST', '/api/v0/ssh/', { key: u.apiKey, body: { ssh_key: 12345 } });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.msg).toContain('ssh_key');
    const badParam = await t().request('DELETE', '/api/v0/ssh/abc/', { key: u.apiKey });
    expect(badParam.status).toBe(400);
    expect(badParam.body.msg).toContain('id');
  });

  it('a body that is not JSON: 415', async () => {
    const u = await t().user();
    const r = await t().request('POST', '/api/v0/ssh/', {
      key: u.apiKey,
      rawBody: 'ssh_key=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(r.status).toBe(415);
    expect(r.body.error).toBe('unsupported_media_type');
    const plain = await t().request('POST', '/api/v0/ssh/', {
      key: u.apiKey,
      rawBody: 'x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(plain.status).toBe(415);
  });

  it('an oversized body: 413', async () => {
    const u = await t().user();
    const big = JSON.stringify({ ssh_key: 'x'.repeat(t().config.bodyLimitBytes + 10) });
    const r = await t().request('POST', '/api/v0/ssh/', {
      key: u.apiKey,
      rawBody: big,
      headers: { 'content-type': 'application/json' },
    });
    expect(r.status).toBe(413);
    expect(r.body.error).toBe('payload_too_large');
  });

  it('DELETE with Content-Type JSON and an empty body, or {}, is accepted', async () => {
    const u = await t().user();
    const c = await t().request('POST', '/api/v0/auth/apikeys', { key: u.apiKey, body: {} });
    const r = await t().request('DELETE', `/api/v0/auth/apikeys/${c.body.id}`, {
      key: u.apiKey,
      rawBody: '',
      headers: { 'content-type': 'application/json' },
    });
    expect(r.status).toBe(200);
  });

  it('a 5xx never shows its cause', async () => {
    const app = t().app;
    // A route that throws an internal error, registered on a fresh instance is not possible after
    // ready(); instead break the database under a real route.
    const u = await t().user();
    await t().db.store.db.schema.alterTable('ssh_keys').renameTo('ssh_keys_moved').execute();
    try {
      const r = await t().request('GET', '/api/v0/ssh/', { key: u.apiKey });
      expect(r.status).toBe(500);
      expect(r.body).toEqual({ error: 'internal_error', msg: 'Internal server error' });
      expect(r.raw).not.toMatch(/ssh_keys|relation|table|SQL/i);
    } finally {
      await t().db.store.db.schema.alterTable('ssh_keys_moved').renameTo('ssh_keys').execute();
    }
    expect(app).toBeDefined();
  });
});
