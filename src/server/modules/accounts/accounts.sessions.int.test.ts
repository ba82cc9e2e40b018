// Sessions keep the scope of the credential that made them and die with it; logout ends the
// presented session, DELETE /users/sessions ends all of them; the cookie is Secure over HTTPS.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { enableTotp } from '../two-factor/two-factor.testkit.js';

async function scopedKey(
  t: TestApp,
  key: string,
  permissions: unknown,
): Promise<{ id: number; key: string }> {
  const r = await t.request('POST', '/api/v0/auth/apikeys/', { key, body: { name: 'scoped', permissions } });
  expect(r.status).toBe(200);
  return { id: r.body.id as number, key: r.body.key as string };
}

/** A user with TOTP on, and a session_key from a backup-code login made with `loginKey`. */
async function tfaLogin(t: TestApp, loginKey: string, backupCode: string): Promise<string> {
  const r = await t.request('POST', '/api/v0/tfa/', { key: loginKey, body: { backup_code: backupCode } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.session_key as string;
}

async function passwordCookie(t: TestApp, email: string, password: string, headers = {}): Promise<string> {
  const r = await t.request('POST', '/api/v0/users/login/', { body: { email, password }, headers });
  expect(r.status).toBe(200);
  return String(r.headers['set-cookie']).split(';')[0]!;
}

describeEachDb('sessions keep their key scope', (dialect) => {
  const t = useTestApp(dialect);

  it('a session made through a tfa-only key has only that scope and cannot mint a full key', async () => {
    const u = await t().user();
    const { backupCodes } = await enableTotp(t(), u.apiKey, u.email);
    const tfaOnly = await scopedKey(t(), u.apiKey, { tfa: 'write' });
    const session = await tfaLogin(t(), tfaOnly.key, backupCodes[0]!);

    expect((await t().request('GET', '/api/v0/tfa/status/', { key: session })).status).toBe(200);
    const me = await t().request('GET', '/api/v0/users/current/', { key: session });
    expect(me.status).toBe(403);
    const mint = await t().request('POST', '/api/v0/auth/apikeys/', {
      key: session,
      body: { name: 'escalate' },
    });
    expect(mint.status).toBe(403);
    const keys = await t().deps.db.selectFrom('api_keys').select('id').where('user_id', '=', u.id).execute();
    expect(keys).toHaveLength(2);
  });

  it('revoking the key ends the sessions it made, and only those', async () => {
    const u = await t().user();
    const { backupCodes } = await enableTotp(t(), u.apiKey, u.email);
    const tfaOnly = await scopedKey(t(), u.apiKey, { tfa: 'write' });
    const doomed = await tfaLogin(t(), tfaOnly.key, backupCodes[0]!);
    const kept = await tfaLogin(t(), u.apiKey, backupCodes[1]!);
    const del = await t().request('DELETE', `/api/v0/auth/apikeys/${tfaOnly.id}/`, {
      key: u.apiKey,
      body: {},
    });
    expect(del.status).toBe(200);
    expect((await t().request('GET', '/api/v0/tfa/status/', { key: doomed })).status).toBe(401);
    expect((await t().request('GET', '/api/v0/users/current/', { key: kept })).status).toBe(200);
    const row = await t()
      .deps.db.selectFrom('sessions')
      .select(['revoked_at'])
      .where('api_key_id', '=', tfaOnly.id)
      .executeTakeFirstOrThrow();
    expect(row.revoked_at).not.toBeNull();
  });

  it('a session from a full key, or from a password login, has full scope', async () => {
    const u = await t().user({ password: 'a long password 1' });
    const { backupCodes } = await enableTotp(t(), u.apiKey, u.email);
    const session = await tfaLogin(t(), u.apiKey, backupCodes[0]!);
    const mint = await t().request('POST', '/api/v0/auth/apikeys/', { key: session, body: { name: 'n' } });
    expect(mint.status).toBe(200);

    const plain = await t().user({ password: 'a long password 2' });
    const cookie = await passwordCookie(t(), plain.email, 'a long password 2');
    const viaCookie = await t().request('POST', '/api/v0/auth/apikeys/', {
      headers: { cookie, 'x-openrig-csrf': '1' },
      body: { name: 'from the browser' },
    });
    expect(viaCookie.status).toBe(200);
  });

  it('POST /users/logout/ ends the presented session key; an API key is not a session', async () => {
    const u = await t().user();
    const { backupCodes } = await enableTotp(t(), u.apiKey, u.email);
    const a = await tfaLogin(t(), u.apiKey, backupCodes[0]!);
    const b = await tfaLogin(t(), u.apiKey, backupCodes[1]!);
    const out = await t().request('POST', '/api/v0/users/logout/', { key: a });
    expect(out.status).toBe(200);
    expect(out.body.success).toBe(true);
    expect((await t().request('GET', '/api/v0/users/current/', { key: a })).status).toBe(401);
    expect((await t().request('GET', '/api/v0/users/current/', { key: b })).status).toBe(200);
    const withKey = await t().request('POST', '/api/v0/users/logout/', { key: u.apiKey, body: {} });
    expect(withKey.status).toBe(400);
    expect(withKey.body.error).toBe('bad_request');
    expect((await t().request('GET', '/api/v0/users/current/', { key: u.apiKey })).status).toBe(200);
  });

  it('POST /users/logout/ with the cookie ends that browser session and clears the cookie', async () => {
    const u = await t().user({ password: 'cookie password 1' });
    const cookie = await passwordCookie(t(), u.email, 'cookie password 1');
    // A cookie-authenticated write: the console's CSRF header is required.
    const refused = await t().request('POST', '/api/v0/users/logout/', { headers: { cookie } });
    expect(refused.status).toBe(403);
    const out = await t().request('POST', '/api/v0/users/logout/', {
      headers: { cookie, 'x-openrig-csrf': '1' },
    });
    expect(out.status).toBe(200);
    expect(String(out.headers['set-cookie'])).toMatch(/openrig_session=;/);
    const after = await t().request('GET', '/api/v0/users/current/', { headers: { cookie } });
    expect(after.status).toBe(401);
  });

  it('GET /users/current/ never echoes the HttpOnly session cookie; a Bearer key comes back as presented', async () => {
    const u = await t().user({ password: 'current pw 1' });
    const cookie = await passwordCookie(t(), u.email, 'current pw 1');
    const secret = cookie.split('=').slice(1).join('=');
    expect(secret.length).toBeGreaterThan(10);
    const viaCookie = await t().request('GET', '/api/v0/users/current/', { headers: { cookie } });
    expect(viaCookie.status).toBe(200);
    expect(viaCookie.body.id).toBe(u.id);
    expect(viaCookie.body.api_key).toBe('');
    expect(viaCookie.raw).not.toContain(secret);
    expect(viaCookie.raw).not.toContain(decodeURIComponent(secret));
    const viaKey = await t().request('GET', '/api/v0/users/current/', { key: u.apiKey });
    expect(viaKey.body.api_key).toBe(u.apiKey);
  });

  it("DELETE /users/sessions/ ends all of the caller's sessions and no one else's; keys stay", async () => {
    const u = await t().user({ password: 'everywhere pw 1' });
    const other = await t().user({ password: 'everywhere pw 2' });
    const { backupCodes } = await enableTotp(t(), u.apiKey, u.email);
    const s1 = await tfaLogin(t(), u.apiKey, backupCodes[0]!);
    const s2 = await tfaLogin(t(), u.apiKey, backupCodes[1]!);
    const theirs = await passwordCookie(t(), other.email, 'everywhere pw 2');
    const r = await t().request('DELETE', '/api/v0/users/sessions/', { key: u.apiKey, body: {} });
    expect(r.status).toBe(200);
    expect(r.body.sessions_ended).toBe(2);
    for (const s of [s1, s2])
      expect((await t().request('GET', '/api/v0/users/current/', { key: s })).status).toBe(401);
    expect((await t().request('GET', '/api/v0/users/current/', { key: u.apiKey })).status).toBe(200);
    expect((await t().request('GET', '/api/v0/users/current/', { headers: { cookie: theirs } })).status).toBe(
      200,
    );
  });
});

describeEachDb('session cookie over HTTPS', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_TRUST_PROXY: '127.0.0.1' });

  it('is Secure when a trusted proxy says the client used HTTPS, and not over plain HTTP', async () => {
    const u = await t().user({ password: 'secure cookie pw' });
    const https = await t().request('POST', '/api/v0/users/login/', {
      body: { email: u.email, password: 'secure cookie pw' },
      headers: { 'x-forwarded-proto': 'https' },
    });
    expect(String(https.headers['set-cookie'])).toMatch(/;\s*Secure/i);
    const http = await t().request('POST', '/api/v0/users/login/', {
      body: { email: u.email, password: 'secure cookie pw' },
    });
    expect(String(http.headers['set-cookie'])).not.toMatch(/;\s*Secure/i);
  });
});

describeEachDb('session cookie without a trusted proxy', (dialect) => {
  const t = useTestApp(dialect);

  it('an untrusted X-Forwarded-Proto does not change the cookie', async () => {
    const u = await t().user({ password: 'untrusted proxy pw' });
    const r = await t().request('POST', '/api/v0/users/login/', {
      body: { email: u.email, password: 'untrusted proxy pw' },
      headers: { 'x-forwarded-proto': 'https' },
    });
    expect(String(r.headers['set-cookie'])).not.toMatch(/;\s*Secure/i);
  });
});
