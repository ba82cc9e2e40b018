import { afterAll, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../../../test/helpers/app.js';

let t: TestApp | undefined;
afterAll(async () => {
  await t?.app.close();
  await t?.db.cleanup();
});

it('router failures (over-long parameter, bad %-escape) answer 400 {error, msg} as JSON', async () => {
  t = await makeTestApp('sqlite');
  const u = await t.user();
  for (const url of ['/api/v0/ssh/' + '9'.repeat(300) + '/', '/api/v0/ssh/%E0%A4%A/']) {
    const r = await t.request('DELETE', url, { key: u.apiKey });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('bad_request');
    expect(typeof r.body.msg).toBe('string');
    expect(Object.keys(r.body).sort()).toEqual(['error', 'msg']);
    expect(r.headers['content-type']).toBe('application/json');
  }
});
