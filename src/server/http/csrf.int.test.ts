// Cookie-authenticated writes need the console's X-Openrig-Csrf header and, when the browser names
// one, this server's own origin; reads by cookie and every Bearer or api_key caller are unaffected.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../test/helpers/db.js';
import { useTestApp } from '../../../test/helpers/app.js';

describeEachDb('CSRF defence of cookie sessions', (dialect) => {
  const t = useTestApp(dialect);
  const PASSWORD = 'correct horse battery staple';

  async function cookieOf() {
    const u = await t().user({ password: PASSWORD });
    const r = await t().request('POST', '/api/v0/users/login/', {
      body: { email: u.email, password: PASSWORD },
    });
    expect(r.status).toBe(200);
    const set = String(r.headers['set-cookie']);
    expect(set).toMatch(/SameSite=Strict/i);
    expect(set).toMatch(/HttpOnly/i);
    return { u, cookie: /openrig_session=[^;]+/.exec(set)![0] };
  }
  const keyCount = async (key: string) =>
    (await t().request('GET', '/api/v0/auth/apikeys/', { key })).body.apikeys.length as number;

  it('refuses a cookie write without the header, from another origin or another site, and writes nothing', async () => {
    const { u, cookie } = await cookieOf();
    const before = await keyCount(u.apiKey);
    const tries: Record<string, string>[] = [
      { cookie },
      { cookie, origin: 'http://localhost' },
      { cookie, 'x-openrig-csrf': '1', origin: 'https://evil.example' },
      { cookie, 'x-openrig-csrf': '1', origin: 'null' },
      { cookie, 'x-openrig-csrf': '1', 'sec-fetch-site': 'cross-site' },
      { cookie, 'x-openrig-csrf': '1', 'sec-fetch-site': 'same-site' },
    ];
    for (const headers of tries) {
      const r = await t().request('POST', '/api/v0/auth/apikeys/', { headers, body: { name: 'csrf' } });
      expect(r.status, JSON.stringify(headers)).toBe(403);
      expect(r.body.error).toBe('forbidden');
      expect(r.body.msg).toMatch(/^Cookie-authenticated write refused: /);
    }
    const del = await t().request('DELETE', '/api/v0/ssh/1/', { headers: { cookie } });
    expect(del.status).toBe(403);
    expect(await keyCount(u.apiKey)).toBe(before);
  });

  it('accepts a cookie write with the header from its own origin, and cookie reads without it', async () => {
    const { u, cookie } = await cookieOf();
    const read = await t().request('GET', '/api/v0/users/current', { headers: { cookie } });
    expect(read.status).toBe(200);
    expect(read.body.id).toBe(u.id);
    const ok = await t().request('POST', '/api/v0/auth/apikeys/', {
      headers: {
        cookie,
        'x-openrig-csrf': '1',
        origin: 'http://localhost:80',
        'sec-fetch-site': 'same-origin',
      },
      body: { name: 'from the console' },
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const bare = await t().request('POST', '/api/v0/auth/apikeys/', {
      headers: { cookie, 'x-openrig-csrf': '1' },
      body: { name: 'no origin named' },
    });
    expect(bare.status).toBe(200);
  });

  it('leaves Bearer and api_key callers alone, even with a stray cookie or a foreign Origin', async () => {
    const { u, cookie } = await cookieOf();
    const bearer = await t().request('POST', '/api/v0/auth/apikeys/', {
      key: u.apiKey,
      headers: { cookie, origin: 'https://elsewhere.example' },
      body: { name: 'bearer' },
    });
    expect(bearer.status).toBe(200);
    const query = await t().request('POST', `/api/v0/auth/apikeys/?api_key=${u.apiKey}`, {
      body: { name: 'q' },
    });
    expect(query.status).toBe(200);
  });
});
