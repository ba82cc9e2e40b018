// The official CLI's `show audit-logs` and `show ipaddrs`, each request as that CLI sends it,
// each reply checked for every field the CLI reads (docs/compatibility.md, rows marked "works"):
// a bare array of {ip_address, api_key_id, created_at, api_route, args} and
// {results: [{ip, first_seen, first_location}]}.
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { renter } from '../helpers/market.js';
import { settleAudit } from '../../src/server/modules/audit/audit.testkit.js';
import { cli, expectOk, expectTableFields } from './official-cli.js';

describeEachDb('official CLI: audit log and login addresses', (dialect) => {
  const t = useTestApp(dialect);
  let key: string;
  let otherKey: string;
  beforeAll(async () => {
    key = (await renter(t())).apiKey; // its POST /ssh/ is the first audited action
    otherKey = (await renter(t())).apiKey;
    // Two more actions: a template whose env holds a secret value, then its deletion.
    const made = await cli(t(), {
      method: 'POST',
      path: '/template/',
      key,
      json: { name: 'tgi', image: 'ghcr.io/x/tgi', env: '-e HF_TOKEN=hf_secret', private: true },
    });
    expectOk(made);
    // vastai delete template --hash-id HASH
    const del = await cli(t(), {
      method: 'DELETE',
      path: '/template/',
      key,
      json: { hash_id: made.body.template.hash_id },
    });
    expectOk(del);
    await settleAudit(t());
  });

  it('show audit-logs: GET /audit_logs/ answers a bare array of the fields the table prints', async () => {
    // vastai show audit-logs
    const r = await cli(t(), { method: 'GET', path: '/audit_logs/', key });
    expectOk(r);
    expect(Array.isArray(r.body)).toBe(true);
    for (const row of r.body as Record<string, unknown>[]) {
      expectTableFields(row, { ip_address: 'str', api_key_id: 'int', created_at: 'num', api_route: 'str' });
      expect(row).toHaveProperty('args');
    }
    expect(r.body.map((x: { api_route: string }) => x.api_route)).toEqual([
      'DELETE /api/v0/template/',
      'POST /api/v0/template/',
      'POST /api/v0/ssh/',
    ]);
    expect(r.body[1].args).toEqual({ body: ['name', 'image', 'env', 'private'] });
    expect(r.text).not.toContain('hf_secret');
    // The other user's log holds only their own action.
    const other = await cli(t(), { method: 'GET', path: '/audit_logs/', key: otherKey });
    expectOk(other);
    expect(other.body.map((x: { api_route: string }) => x.api_route)).toEqual(['POST /api/v0/ssh/']);
  });

  it('show ipaddrs: GET /users/me/ipaddrs?owner=me answers {results} with ip, first_seen, first_location', async () => {
    // vastai show ipaddrs
    const r = await cli(t(), { method: 'GET', path: '/users/me/ipaddrs', query: { owner: 'me' }, key });
    expectOk(r);
    expect(r.body.results).toHaveLength(1);
    const row = r.body.results[0];
    expectTableFields(row, { ip: 'str', first_seen: 'num', first_location: 'str' });
    expect(row).toMatchObject({ ip: '127.0.0.1', first_location: null });
  });

  it('without a key: 401, which the CLI raises on', async () => {
    for (const path of ['/audit_logs/', '/users/me/ipaddrs']) {
      const r = await cli(t(), {
        method: 'GET',
        path,
        query: path.includes('ipaddrs') ? { owner: 'me' } : {},
        key: null,
      });
      expect(r.status, path).toBe(401);
      expect(r.contentType).toBe('application/json');
    }
  });
});
