// Clients read `success` first in the replies of the instance write routes (destroy, stop, start,
// label, bulk, create, logs, commands) and the template routes, so every error of those routes
// carries `success: false` (errorsCarrySuccess), including the errors raised before the route's
// handler: authentication, the schema, a malformed body, a refused content type, a rate limit.
// Other routes, the instance reads among them, keep the plain {error, msg}.
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../../../test/helpers/db.js';
import { useTestApp } from '../../../test/helpers/app.js';

describeEachDb('errorsCarrySuccess: success false on every error of the routes that set it', (dialect) => {
  const t = useTestApp(dialect);
  let key: string;
  beforeAll(async () => {
    key = (await t().user()).apiKey;
  });

  const cases: [string, string, string, Parameters<ReturnType<typeof t>['request']>[2] | 'key', number][] = [
    ['no key', 'DELETE', '/api/v0/instances/1/', {}, 401],
    ['an unknown key', 'DELETE', '/api/v0/instances/1/', { key: 'not-a-key' }, 401],
    ['an id the schema refuses', 'DELETE', '/api/v0/instances/abc/', 'key', 400],
    ['a body the schema refuses', 'PUT', '/api/v0/instances/1/', 'key', 400],
    ['a malformed JSON body', 'PUT', '/api/v0/instances/1/', 'key', 400],
    ['a refused content type', 'PUT', '/api/v0/instances/1/', 'key', 415],
    ['a bulk destroy the schema refuses', 'DELETE', '/api/v0/instances/', 'key', 400],
    ['an instance that is not there', 'DELETE', '/api/v0/instances/987654321/', 'key', 404],
    ['a create without a key', 'PUT', '/api/v0/asks/1/', {}, 401],
    ["an instance's SSH keys without a key", 'GET', '/api/v0/instances/1/ssh/', {}, 401],
    ['a template the schema refuses', 'POST', '/api/v0/template/', 'key', 400],
    ['a template update without a key', 'PUT', '/api/v0/template/', {}, 401],
    ['a template delete with a malformed body', 'DELETE', '/api/v0/template/', 'key', 400],
  ];
  const bodies: Record<string, Parameters<ReturnType<typeof t>['request']>[2]> = {
    'a body the schema refuses': { body: { state: 42 } },
    'a malformed JSON body': { rawBody: '{"state":', headers: { 'content-type': 'application/json' } },
    'a refused content type': { rawBody: 'state=stopped', headers: { 'content-type': 'text/plain' } },
    'a bulk destroy the schema refuses': { body: { instance_ids: 'all' } },
    'a template the schema refuses': { body: { name: 42 } },
    'a template delete with a malformed body': {
      rawBody: '{"hash_id"',
      headers: { 'content-type': 'application/json' },
    },
  };

  for (const [what, method, url, opts, status] of cases) {
    it(`${method} ${url} with ${what}: ${status}, {success: false, error, msg}`, async () => {
      const r = await t().request(method, url, opts === 'key' ? { key, ...bodies[what] } : opts);
      expect(r.status).toBe(status);
      expect(r.body).toMatchObject({ success: false, error: expect.any(String), msg: expect.any(String) });
      expect(r.headers['content-type']).toBe('application/json');
    });
  }

  it('reads keep {error, msg} alone', async () => {
    const r = await t().request('GET', '/api/v0/instances/1/', {});
    expect(r.status).toBe(401);
    expect(Object.keys(r.body as object).sort()).toEqual(['error', 'msg']);
  });
});

describeEachDb('errorsCarrySuccess: a rate-limited create', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMIT_CREATES: '1/60' });

  it('answers 429 with {success: false, error, msg} once the window is used up', async () => {
    const { apiKey } = await t().user();
    const create = () =>
      t().request('PUT', '/api/v0/asks/987654321/', { key: apiKey, body: { image: 'x', disk: 10 } });
    const first = await create();
    expect(first.status).not.toBe(429);
    const second = await create();
    expect(second.status).toBe(429);
    expect(second.body).toMatchObject({ success: false, error: expect.any(String), msg: expect.any(String) });
    expect(second.headers['retry-after']).toBeDefined();
  });
});
