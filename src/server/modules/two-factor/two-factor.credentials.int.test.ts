// Which credential each 2FA call takes: one test per call and flow (logged-out UI: the login
// secret alone; logged-in UI: Bearer plus cookie; CLI: Bearer), when a secret is needed besides
// the Bearer, and the refusal of team-context keys.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { addSms, enableTotp, lastEmailCode, lastSmsCode } from './two-factor.testkit.js';
import { totpAt } from './two-factor.codes.js';

const PASSWORD = 'correct horse battery';

describeEachDb('2FA credential table', (dialect) => {
  // The platform's per-route rate limits are tested by their module; here they would mask 2FA's own.
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off' });

  async function totpUser() {
    const u = await t().user({ password: PASSWORD });
    const totp = await enableTotp(t(), u.apiKey, u.email);
    return { ...u, totp };
  }
  async function passwordLogin(email: string): Promise<string> {
    const r = await t().request('POST', '/api/v0/users/login/', { body: { email, password: PASSWORD } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, tfa_required: true, tfa_secret: expect.any(String) });
    return r.body.tfa_secret;
  }
  const cookieOf = (r: { headers: Record<string, unknown> }) => {
    const raw = r.headers['set-cookie'];
    const c = (Array.isArray(raw) ? raw : [raw]).find(
      (x) => typeof x === 'string' && x.startsWith('openrig_session='),
    ) as string | undefined;
    return c?.split(';')[0];
  };

  it('POST tfa/ (login): logged-out UI with the secret only → cookie session, no session_key', async () => {
    const u = await totpUser();
    const secret = await passwordLogin(u.email);
    const r = await t().request('POST', '/api/v0/tfa/', {
      body: { tfa_method: 'totp', code: totpAt(u.totp.secret, t().clock.now()), secret },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: u.id, email: u.email, tfa_status: 'enabled' });
    expect(r.body.session_key).toBeUndefined();
    const cookie = cookieOf(r);
    expect(cookie).toBeDefined();
    const me = await t().request('GET', '/api/v0/users/current', { headers: { cookie: cookie! } });
    expect(me.status).toBe(200);
    expect(me.body.id).toBe(u.id);
    // The login secret works once.
    t().clock.advance(30_000);
    const again = await t().request('POST', '/api/v0/tfa/', {
      body: { tfa_method: 'totp', code: totpAt(u.totp.secret, t().clock.now()), secret },
    });
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('no_challenge_found');
  });

  it('POST tfa/ (login): CLI with Bearer → session_key, usable as the Bearer, expiring with 404', async () => {
    const u = await totpUser();
    const r = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', code: totpAt(u.totp.secret, t().clock.now()) },
    });
    expect(r.status).toBe(200);
    expect(r.body.session_key).toMatch(/^ors_/);
    expect(r.headers['set-cookie']).toBeUndefined();
    const me = await t().request('GET', '/api/v0/users/current', { key: r.body.session_key });
    expect(me.status).toBe(200);
    expect(me.body.id).toBe(u.id);
    t().clock.advance(t().config.sessionTtlS * 1000 + 1);
    const expired = await t().request('GET', '/api/v0/tfa/status/', { key: r.body.session_key });
    expect(expired.status).toBe(404);
    expect(expired.body.msg).toBe('Session expired. Please log in again.');
  });

  it('POST tfa/ (login): neither secret nor Bearer → 401 missing_auth_value; a Bearer-made secret alone → 403 auth_error', async () => {
    const u = await totpUser();
    const none = await t().request('POST', '/api/v0/tfa/', { body: { tfa_method: 'totp', code: '123456' } });
    expect(none.status).toBe(401);
    expect(none.body.error).toBe('missing_auth_value');
    const e = await t().request('POST', '/api/v0/tfa/email/', { key: u.apiKey });
    const alone = await t().request('POST', '/api/v0/tfa/', {
      body: { tfa_method: 'email', code: await lastEmailCode(t(), u.email), secret: e.body.secret },
    });
    expect(alone.status).toBe(403);
    expect(alone.body.error).toBe('auth_error');
  });

  it('POST tfa/email/: secret only (logged-out), Bearer (logged-in UI, CLI)', async () => {
    const u = await totpUser();
    const secret = await passwordLogin(u.email);
    const out = await t().request('POST', '/api/v0/tfa/email/', { body: { secret } });
    expect(out.status).toBe(200);
    expect(out.body).toEqual({ success: true, msg: expect.any(String), secret });
    const login = await t().request('POST', '/api/v0/tfa/', {
      body: { tfa_method: 'email', code: await lastEmailCode(t(), u.email), secret },
    });
    expect(login.status).toBe(200);
    const a = await t().request('POST', '/api/v0/tfa/email/', { key: u.apiKey });
    const b = await t().request('POST', '/api/v0/tfa/email/', { key: u.apiKey });
    expect(a.status).toBe(200);
    // With a Bearer and no secret: a fresh challenge and secret on every call.
    expect(a.body.secret).not.toBe(b.body.secret);
    const none = await t().request('POST', '/api/v0/tfa/email/', { body: {} });
    expect(none.status).toBe(401);
    expect(none.body.error).toBe('missing_auth_value');
  });

  it('POST tfa/sms/ and tfa/sms/resend/: secret only (logged-out), Bearer, and secret or Bearer on resend', async () => {
    const u = await t().user({ password: PASSWORD });
    await addSms(t(), u.apiKey, u.email, '+14155550121');
    const secret = await passwordLogin(u.email);
    const s = await t().request('POST', '/api/v0/tfa/sms/', { body: { secret } });
    expect(s.status).toBe(200);
    expect(s.body.secret).toBe(secret);
    t().clock.advance(t().config.sms.resendAfterS * 1000);
    const rs = await t().request('POST', '/api/v0/tfa/sms/resend/', { body: { secret } });
    expect(rs.status).toBe(200);
    const login = await t().request('POST', '/api/v0/tfa/', {
      body: { tfa_method: 'sms', code: lastSmsCode(t(), '+14155550121'), secret },
    });
    expect(login.status).toBe(200);
    const b = await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: {} });
    expect(b.status).toBe(200);
    t().clock.advance(t().config.sms.resendAfterS * 1000);
    const rb = await t().request('POST', '/api/v0/tfa/sms/resend/', {
      key: u.apiKey,
      body: { secret: b.body.secret },
    });
    expect(rb.status).toBe(200);
    for (const path of ['/api/v0/tfa/sms/', '/api/v0/tfa/sms/resend/']) {
      const none = await t().request('POST', path, { body: {} });
      expect(none.status).toBe(401);
      expect(none.body.error).toBe('missing_auth_value');
    }
  });

  it('Bearer-only rows (status, authorize-new-method, totp-setup, confirm-new, DELETE, update, regen): the secret alone is refused with 403 auth_error', async () => {
    const u = await totpUser();
    const secret = await passwordLogin(u.email);
    const calls: [string, string][] = [
      ['GET', '/api/v0/tfa/status/'],
      ['POST', '/api/v0/tfa/authorize-new-method/'],
      ['PUT', '/api/v0/tfa/authorize-new-method/'],
      ['POST', '/api/v0/tfa/totp-setup/'],
      ['POST', '/api/v0/tfa/confirm-new/'],
      ['DELETE', '/api/v0/tfa/'],
      ['PUT', '/api/v0/tfa/update/'],
      ['PUT', '/api/v0/tfa/regen-backup-codes/'],
    ];
    for (const [method, url] of calls) {
      const r = await t().request(
        method,
        url,
        // A body each route's schema takes (update: what to change), so that what refuses is the credential.
        method === 'GET' ? {} : { body: { secret, tfa_method: 'totp', code: '123456', label: 'l' } },
      );
      expect([method, url, r.status, r.body.error]).toEqual([method, url, 403, 'auth_error']);
    }
    expect((await t().request('GET', '/api/v0/tfa/status/', { key: u.apiKey })).status).toBe(200);
    expect((await t().request('POST', '/api/v0/tfa/totp-setup/', { key: u.apiKey })).status).toBe(200);
  });

  it('logged-in UI: Bearer plus session cookie works on the Bearer rows', async () => {
    const u = await totpUser();
    const secret = await passwordLogin(u.email);
    const login = await t().request('POST', '/api/v0/tfa/', {
      body: { tfa_method: 'totp', code: totpAt(u.totp.secret, t().clock.now()), secret },
    });
    const cookie = cookieOf(login)!;
    const r = await t().request('PUT', '/api/v0/tfa/update/', {
      key: u.apiKey,
      headers: { cookie },
      body: { tfa_method: 'totp', label: 'work phone' },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      success: true,
      method: { method: 'totp', label: 'work phone', is_primary: true },
    });
  });

  it('PUT authorize-new-method needs Bearer + secret: without the secret, missing_params', async () => {
    const u = await t().user();
    const r = await t().request('PUT', '/api/v0/tfa/authorize-new-method/', {
      key: u.apiKey,
      body: { code: '123456' },
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('missing_params');
  });

  it('confirm-new: Bearer + secret, the secret always required (missing_params)', async () => {
    const u = await t().user();
    const r = await t().request('POST', '/api/v0/tfa/confirm-new/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', code: '123456' },
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('missing_params');
  });

  it('DELETE and regen-backup-codes: the secret only for SMS / e-mail; TOTP and backup codes go without', async () => {
    const u = await totpUser();
    await addSms(t(), u.apiKey, u.email, '+14155550122', { skipAuthorize: true });
    const regen = await t().request('PUT', '/api/v0/tfa/regen-backup-codes/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', code: totpAt(u.totp.secret, t().clock.now()) },
    });
    expect(regen.status).toBe(200);
    expect(regen.body.backup_codes).toHaveLength(10);
    const regen2 = await t().request('PUT', '/api/v0/tfa/regen-backup-codes/', {
      key: u.apiKey,
      body: { backup_code: regen.body.backup_codes[0] },
    });
    expect(regen2.status).toBe(200);
    const smsNoSecret = await t().request('PUT', '/api/v0/tfa/regen-backup-codes/', {
      key: u.apiKey,
      body: { tfa_method: 'sms', code: '123456' },
    });
    expect(smsNoSecret.status).toBe(400);
    expect(smsNoSecret.body.error).toBe('missing_params');
    const emailNoSecret = await t().request('DELETE', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'email', code: '123456', target_id: u.totp.id },
    });
    expect(emailNoSecret.body.error).toBe('missing_params');
    const del = await t().request('DELETE', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { backup_code: regen2.body.backup_codes[0], target_id: u.totp.id },
    });
    expect(del.status).toBe(200);
    expect(del.body.remaining_methods).toBe(1);
    const e = await t().request('POST', '/api/v0/tfa/email/', { key: u.apiKey });
    const viaEmail = await t().request('DELETE', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'email', code: await lastEmailCode(t(), u.email), secret: e.body.secret },
    });
    expect(viaEmail.status).toBe(200);
    expect(viaEmail.body.msg).toBe('2FA Successfully Disabled');
  });

  it('every 2FA call from a team context is team_user_forbidden', async () => {
    const u = await t().user({ team: `tfa-team-${dialect}` });
    const calls: [string, string][] = [
      ['GET', '/api/v0/tfa/status/'],
      ['POST', '/api/v0/tfa/'],
      ['POST', '/api/v0/tfa/email/'],
      ['POST', '/api/v0/tfa/sms/'],
      ['POST', '/api/v0/tfa/sms/resend/'],
      ['POST', '/api/v0/tfa/authorize-new-method/'],
      ['PUT', '/api/v0/tfa/authorize-new-method/'],
      ['POST', '/api/v0/tfa/totp-setup/'],
      ['POST', '/api/v0/tfa/confirm-new/'],
      ['DELETE', '/api/v0/tfa/'],
      ['PUT', '/api/v0/tfa/update/'],
      ['PUT', '/api/v0/tfa/regen-backup-codes/'],
    ];
    // The routes that require fields get them, so that what refuses is the context, not the shape.
    const required: Record<string, object> = {
      '/api/v0/tfa/authorize-new-method/': { code: '123456', secret: 's' },
      '/api/v0/tfa/confirm-new/': { code: '123456', secret: 's' },
      '/api/v0/tfa/update/': { tfa_method: 'totp', label: 'l' },
    };
    for (const [method, url] of calls) {
      const r = await t().request(method, url, {
        key: u.teamApiKey!,
        ...(method === 'GET' ? {} : { body: required[url] ?? {} }),
      });
      expect([url, r.status, r.body.error]).toEqual([url, 403, 'team_user_forbidden']);
    }
  });
});
