// `owner`: the clients send `owner=me` or nothing. Every documented route that takes it (found in
// the served OpenAPI document, so a route added later is covered) documents "me" as its only
// value, answers anything else with 400 bad_request naming the parameter, and takes `owner=me`.
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../../test/helpers/db.js';
import { useTestApp } from '../../test/helpers/app.js';

const BAD = ['0', '[]', '{"unexpected":1}', '1000000000000', '', 'ME', 'me ', 'you'];

/** The routes the clients call with owner=me (the spec's list); each must take it. */
const KNOWN = [
  'GET /api/v0/instances',
  'GET /api/v1/instances',
  'GET /api/v0/instances/{id}',
  'GET /api/v0/instances/filters',
  'GET /api/v0/machines/{id}',
  'GET /api/v0/machines/maintenances',
  'GET /api/v0/users/me/invoices',
  'GET /api/v0/users/me/machine-earnings',
  'GET /api/v0/users/me/ipaddrs',
];

interface Op {
  name: string;
  url: (owner: string | null) => string;
  owner: any;
}

describeEachDb('owner: "me" or nothing', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'false' });
  let key: string;
  let ops: Op[] = [];

  beforeAll(async () => {
    key = (await t().user()).apiKey;
    const doc = (await t().request('GET', '/api/v0/openapi.json')).body;
    ops = [];
    for (const [path, methods] of Object.entries<any>(doc.paths))
      for (const [method, op] of Object.entries<any>(methods)) {
        const owner = (op.parameters ?? []).find((p: any) => p.in === 'query' && p.name === 'owner');
        if (!owner) continue;
        // Any valid id: the parameter is checked before the route looks anything up.
        const base = path.replace(/\{[^}]+\}/g, '1');
        ops.push({
          name: `${method.toUpperCase()} ${path}`,
          owner,
          url: (v) => (v === null ? base : `${base}?owner=${encodeURIComponent(v)}`),
        });
      }
  });

  it('every route the clients call with owner=me documents it', () => {
    expect(ops.map((o) => o.name)).toEqual(expect.arrayContaining(KNOWN));
  });

  it('documents "me" as the only value, and 400 among the replies', async () => {
    const doc = (await t().request('GET', '/api/v0/openapi.json')).body;
    for (const o of ops) {
      expect(o.owner.schema, o.name).toMatchObject({ type: 'string', enum: ['me'] });
      const [method, path] = o.name.split(' ') as [string, string];
      expect(Object.keys(doc.paths[path][method.toLowerCase()].responses), o.name).toContain('400');
    }
  });

  it('answers anything but "me" with 400 bad_request naming owner', async () => {
    for (const o of ops)
      for (const v of BAD) {
        const r = await t().request('GET', o.url(v), { key });
        expect([r.status, r.body?.error], `${o.name} owner=${v}`).toEqual([400, 'bad_request']);
        expect(r.body.msg, `${o.name} owner=${v}`).toMatch(/\bowner\b/);
      }
  });

  it('answers a repeated owner with 400, and owner=me or none as before', async () => {
    for (const o of ops) {
      const twice = await t().request('GET', `${o.url('me')}&owner=you`, { key });
      expect(twice.status, `${o.name} owner twice`).toBe(400);
      for (const v of ['me', null]) {
        const r = await t().request('GET', o.url(v), { key });
        expect(r.status, `${o.name} owner=${v}`).not.toBe(400);
        expect(r.status, `${o.name} owner=${v}`).toBeLessThan(500);
      }
    }
  });
});
