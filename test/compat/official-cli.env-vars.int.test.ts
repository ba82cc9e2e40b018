// The official CLI's env-var commands (show env-vars [-s], create env-var, update env-var,
// delete env-var), each request as that CLI sends it, each reply checked for every field the CLI
// reads (docs/compatibility.md, rows marked "works"): `secrets` of the list, `success` and `msg`
// of the others; an error is a 4xx with `msg`, which the CLI prints after "Failed with error".
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { offers, renter } from '../helpers/market.js';
import { cli, cliCreateBody, expectOk } from './official-cli.js';

describeEachDb('official CLI: env-var commands', (dialect) => {
  const t = useTestApp(dialect);
  let key: string;
  beforeAll(async () => {
    key = (await renter(t())).apiKey;
  });

  it('show env-vars: GET /secrets/ answers {secrets: {}} for an account with none', async () => {
    // vastai show env-vars
    const r = await cli(t(), { method: 'GET', path: '/secrets/', key });
    expectOk(r);
    expect(r.body.secrets).toEqual({});
  });

  it('create env-var NAME VALUE: POST /secrets/ {key, value} answers {success, msg}', async () => {
    // vastai create env-var HF_TOKEN 'hf_abc def'
    const r = await cli(t(), {
      method: 'POST',
      path: '/secrets/',
      key,
      json: { key: 'HF_TOKEN', value: 'hf_abc def' },
    });
    expectOk(r);
    expect(r.body).toEqual({ success: true, msg: 'Environment variable HF_TOKEN created' });
    // Python's json.dumps escapes non-ASCII: the value arrives as written.
    const u = await cli(t(), {
      method: 'POST',
      path: '/secrets/',
      key,
      json: { key: 'GREETING', value: 'grüß dich' },
    });
    expectOk(u);
  });

  it('show env-vars -s: the values, by name (the CLI masks them itself without -s)', async () => {
    // vastai show env-vars -s     (and vastai show env-vars: the same request)
    const r = await cli(t(), { method: 'GET', path: '/secrets/', key });
    expectOk(r);
    expect(r.body.secrets).toEqual({ GREETING: 'grüß dich', HF_TOKEN: 'hf_abc def' });
  });

  it('create env-var of an existing name: 409 with msg, the value kept', async () => {
    const r = await cli(t(), {
      method: 'POST',
      path: '/secrets/',
      key,
      json: { key: 'HF_TOKEN', value: 'other' },
    });
    expect(r.status).toBe(409);
    expect(r.contentType).toBe('application/json');
    expect(r.body.msg).toBe(
      'An environment variable named HF_TOKEN already exists: change its value with update env-var',
    );
  });

  it('create env-var with a name the CLI does not check: 400 naming the rule', async () => {
    // vastai create env-var 1BAD x
    const r = await cli(t(), { method: 'POST', path: '/secrets/', key, json: { key: '1BAD', value: 'x' } });
    expect(r.status).toBe(400);
    expect(r.body.msg).toContain('key must be an environment variable name');
    const reserved = await cli(t(), {
      method: 'POST',
      path: '/secrets/',
      key,
      json: { key: 'CONTAINER_API_KEY', value: 'x' },
    });
    expect(reserved.status).toBe(400);
    expect(reserved.body.msg).toContain('CONTAINER_API_KEY is set by openrig in every instance');
  });

  it('update env-var NAME VALUE: PUT /secrets/ {key, value} answers {success, msg}; a missing name is 404', async () => {
    // vastai update env-var HF_TOKEN hf_new
    const r = await cli(t(), {
      method: 'PUT',
      path: '/secrets/',
      key,
      json: { key: 'HF_TOKEN', value: 'hf_new' },
    });
    expectOk(r);
    expect(r.body).toEqual({ success: true, msg: 'Environment variable HF_TOKEN updated' });
    const missing = await cli(t(), {
      method: 'PUT',
      path: '/secrets/',
      key,
      json: { key: 'NOPE', value: 'x' },
    });
    expect(missing.status).toBe(404);
    expect(missing.body.msg).toBe('You have no environment variable named NOPE');
  });

  it('an instance created after create env-var gets the variable (the agent sync); its view does not show it', async () => {
    const [offer] = await offers(t(), 1);
    // vastai create instance OFFER --image ubuntu:22.04 --disk 10 --ssh
    const c = await cli(t(), { method: 'PUT', path: `/asks/${offer}/`, key, json: cliCreateBody() });
    expectOk(c);
    const id = c.body.new_contract as number;
    const row = await t()
      .deps.db.selectFrom('instance_account_env')
      .select('instance_id')
      .where('instance_id', '=', id)
      .executeTakeFirst();
    expect(row).toEqual({ instance_id: id });
    const show = await cli(t(), { method: 'GET', path: `/instances/${id}/`, key });
    expectOk(show);
    expect(show.text).not.toContain('hf_new');
  });

  it('delete env-var NAME: DELETE /secrets/ {key} answers {success, msg}; again, 404', async () => {
    // vastai delete env-var HF_TOKEN
    const r = await cli(t(), { method: 'DELETE', path: '/secrets/', key, json: { key: 'HF_TOKEN' } });
    expectOk(r);
    expect(r.body).toEqual({ success: true, msg: 'Environment variable HF_TOKEN deleted' });
    const again = await cli(t(), { method: 'DELETE', path: '/secrets/', key, json: { key: 'HF_TOKEN' } });
    expect(again.status).toBe(404);
    expect(again.body.msg).toBe('You have no environment variable named HF_TOKEN');
    const list = await cli(t(), { method: 'GET', path: '/secrets/', key });
    expect(list.body.secrets).toEqual({ GREETING: 'grüß dich' });
  });

  it('without a key, or with an unknown one: 401 for each of the four', async () => {
    for (const [method, json] of [
      ['GET', undefined],
      ['POST', { key: 'A', value: 'b' }],
      ['PUT', { key: 'A', value: 'b' }],
      ['DELETE', { key: 'A' }],
    ] as const) {
      const none = await cli(t(), { method, path: '/secrets/', key: null, json });
      expect(none.status, method).toBe(401);
      expect(none.body.error).toBe('auth_error');
      // An unknown key: the text the CLI takes for an expired 2FA session (it retries with the API key).
      const unknown = await cli(t(), { method, path: '/secrets/', key: 'or_unknown', json });
      expect(unknown.status, method).toBe(401);
      expect(unknown.body.msg).toBe('Invalid user key');
    }
  });
});
