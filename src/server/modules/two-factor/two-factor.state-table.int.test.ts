// The add-method authorization and the method lifecycle: one test per transition (authorize by
// code or backup code, confirm, expiry of the 30-minute window, lockout, removal), plus the
// 10-minute life of a challenge.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { addSms, authorize, enableTotp, lastEmailCode, lastSmsCode } from './two-factor.testkit.js';
import { totpAt } from './two-factor.codes.js';

describeEachDb('2FA state table', (dialect) => {
  // The platform's per-route rate limits are tested by their module; here they would mask 2FA's own.
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off' });
  const status = async (key: string) => (await t().request('GET', '/api/v0/tfa/status/', { key })).body;
  const emailsTo = async (to: string) =>
    t().deps.db.selectFrom('email_outbox').selectAll().where('to_addr', '=', to).execute();

  it('not authorized → POST (code flow), no methods: method forced to email, response carries secret', async () => {
    const u = await t().user();
    const r = await t().request('POST', '/api/v0/tfa/authorize-new-method/', {
      key: u.apiKey,
      body: { tfa_method: 'totp' },
    });
    expect(r.status).toBe(200);
    // It says where the code went, masked as every send does.
    expect(r.body).toEqual({
      success: true,
      secret: expect.any(String),
      msg: `Code e-mailed to ${u.email[0]}***${u.email.slice(u.email.lastIndexOf('@'))}`,
    });
    expect(await lastEmailCode(t(), u.email)).toMatch(/^\d{6}$/);
    expect((await status(u.apiKey)).new_method_authorized).toBe(false);
  });

  it('not authorized → POST (code flow), with methods: response carries secret', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    t().clock.advance(31 * 60_000); // the first window closes
    expect((await status(u.apiKey)).new_method_authorized).toBe(false);
    const r = await t().request('POST', '/api/v0/tfa/authorize-new-method/', {
      key: u.apiKey,
      body: { tfa_method: 'totp' },
    });
    expect(r.status).toBe(200);
    expect(typeof r.body.secret).toBe('string');
    const put = await t().request('PUT', '/api/v0/tfa/authorize-new-method/', {
      key: u.apiKey,
      body: { code: totpAt(totp.secret, t().clock.now()), secret: r.body.secret },
    });
    expect(put.body).toEqual({ success: true, msg: expect.any(String) });
  });

  it('not authorized → POST with a valid backup_code: authorized, no send/verify round trip', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    t().clock.advance(31 * 60_000);
    const before = (await emailsTo(u.email)).length;
    const r = await t().request('POST', '/api/v0/tfa/authorize-new-method/', {
      key: u.apiKey,
      body: { backup_code: totp.backupCodes[0] },
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, msg: expect.any(String) });
    expect((await emailsTo(u.email)).length).toBe(before);
    const s = await status(u.apiKey);
    expect(s.new_method_authorized).toBe(true);
    expect(s.backup_codes_remaining).toBe(9);
  });

  it('challenge pending → PUT with code and secret: authorized for 30 minutes', async () => {
    const u = await t().user();
    const r = await t().request('POST', '/api/v0/tfa/authorize-new-method/', { key: u.apiKey, body: {} });
    const put = await t().request('PUT', '/api/v0/tfa/authorize-new-method/', {
      key: u.apiKey,
      body: { code: await lastEmailCode(t(), u.email), secret: r.body.secret },
    });
    expect(put.status).toBe(200);
    expect(put.body.success).toBe(true);
    expect((await status(u.apiKey)).new_method_authorized).toBe(true);
    t().clock.advance(29 * 60_000);
    expect((await status(u.apiKey)).new_method_authorized).toBe(true);
    t().clock.advance(2 * 60_000);
    expect((await status(u.apiKey)).new_method_authorized).toBe(false);
  });

  it('authorized → confirm-new: method added; the first returns 10 backup codes, the next none', async () => {
    const u = await t().user();
    await authorize(t(), u.apiKey, u.email);
    const setup = await t().request('POST', '/api/v0/tfa/totp-setup/', { key: u.apiKey });
    expect(setup.body).toEqual({
      secret: expect.stringMatching(/^[A-Z2-7]+$/),
      provisioning_uri: expect.stringMatching(/^otpauth:\/\/totp\//),
    });
    // totp-setup adds nothing by itself.
    expect((await status(u.apiKey)).methods).toEqual([]);
    const first = await t().request('POST', '/api/v0/tfa/confirm-new/', {
      key: u.apiKey,
      body: {
        tfa_method: 'totp',
        code: totpAt(setup.body.secret, t().clock.now()),
        secret: setup.body.secret,
      },
    });
    expect(first.status).toBe(200);
    expect(first.body.backup_codes).toHaveLength(10);
    for (const c of first.body.backup_codes) expect(c).toMatch(/^[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}$/);
    const sms = await addSms(t(), u.apiKey, u.email, '+14155550111', { skipAuthorize: true });
    expect(sms.backupCodes).toEqual([]);
    const s = await status(u.apiKey);
    expect(s.tfa_enabled).toBe(true);
    expect(s.methods.map((m: { method: string }) => m.method)).toEqual(['totp', 'sms']);
    expect(s.backup_codes_remaining).toBe(10);
  });

  it('authorized → confirm-new of a duplicate method: duplicate_tfa_method, nothing added', async () => {
    const u = await t().user();
    await enableTotp(t(), u.apiKey, u.email);
    const setup = await t().request('POST', '/api/v0/tfa/totp-setup/', { key: u.apiKey });
    const r = await t().request('POST', '/api/v0/tfa/confirm-new/', {
      key: u.apiKey,
      body: {
        tfa_method: 'totp',
        code: totpAt(setup.body.secret, t().clock.now()),
        secret: setup.body.secret,
      },
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('duplicate_tfa_method');
    expect((await status(u.apiKey)).methods).toHaveLength(1);
  });

  it('authorized → 30 minutes elapse: not authorized; confirm-new yields authorization_required', async () => {
    const u = await t().user();
    await authorize(t(), u.apiKey, u.email);
    t().clock.advance(30 * 60_000 + 1000);
    const setup = await t().request('POST', '/api/v0/tfa/totp-setup/', { key: u.apiKey });
    const r = await t().request('POST', '/api/v0/tfa/confirm-new/', {
      key: u.apiKey,
      body: {
        tfa_method: 'totp',
        code: totpAt(setup.body.secret, t().clock.now()),
        secret: setup.body.secret,
      },
    });
    expect(r.status).toBe(403);
    expect(r.body.error).toBe('authorization_required');
    expect((await status(u.apiKey)).methods).toEqual([]);
  });

  it('method active → too many failed verifications: locked 15 minutes, per method, 429 tfa_locked', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const sms = await addSms(t(), u.apiKey, u.email, '+14155550112', { skipAuthorize: true });
    const max = t().config.tfa.maxFailures;
    const wrong = totpAt(totp.secret, t().clock.now() + 10 * 60_000);
    for (let i = 1; i <= max; i++) {
      const r = await t().request('POST', '/api/v0/tfa/', {
        key: u.apiKey,
        body: { tfa_method: 'totp', code: wrong },
      });
      expect(r.status).toBe(400);
      expect(r.body.fail_count).toBe(i);
      if (i < max) expect(r.body.locked_until).toBeNull();
      else expect(r.body.locked_until).toBeGreaterThan(t().clock.now() / 1000);
    }
    const right = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', code: totpAt(totp.secret, t().clock.now()) },
    });
    expect(right.status).toBe(429);
    expect(right.body).toMatchObject({
      error: 'tfa_locked',
      fail_count: max,
      locked_until: Math.ceil((t().clock.now() + 15 * 60_000) / 1000),
    });
    // Not account-wide: the SMS method still works.
    const send = await t().request('POST', '/api/v0/tfa/sms/', {
      key: u.apiKey,
      body: { tfa_method_id: sms.id },
    });
    const viaSms = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'sms', code: lastSmsCode(t(), '+14155550112'), secret: send.body.secret },
    });
    expect(viaSms.status).toBe(200);
    const s = await status(u.apiKey);
    expect(s.methods.find((m: { id: number }) => m.id === totp.id)).toMatchObject({
      fail_count: max,
      locked_until: expect.any(Number),
    });
    // The user was told by e-mail.
    expect((await emailsTo(u.email)).some((e) => e.category === 'tfa.method_locked')).toBe(true);
    // A locked SMS method gets no SMS either.
    const sms2 = await t().request('POST', '/api/v0/tfa/sms/', {
      key: u.apiKey,
      body: { tfa_method_id: sms.id },
    });
    expect(sms2.status).toBe(200);
    const wrongSms = lastSmsCode(t(), '+14155550112') === '000000' ? '111111' : '000000';
    for (let i = 0; i < max; i++)
      await t().request('POST', '/api/v0/tfa/', {
        key: u.apiKey,
        body: { tfa_method: 'sms', code: wrongSms, secret: sms2.body.secret },
      });
    t().clock.advance(t().config.sms.resendAfterS * 1000);
    const refused = await t().request('POST', '/api/v0/tfa/sms/', {
      key: u.apiKey,
      body: { tfa_method_id: sms.id },
    });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ error: 'tfa_locked', fail_count: max });
    t().clock.advance(15 * 60_000 + 1000);
    const after = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', code: totpAt(totp.secret, t().clock.now()) },
    });
    expect(after.status).toBe(200);
    expect((await status(u.apiKey)).methods.find((m: { id: number }) => m.id === totp.id)).toMatchObject({
      fail_count: 0,
      locked_until: null,
    });
  });

  it('method active → DELETE, other methods remain: method removed, remaining_methods returned', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    await addSms(t(), u.apiKey, u.email, '+14155550113', { skipAuthorize: true });
    const r = await t().request('DELETE', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', code: totpAt(totp.secret, t().clock.now()) },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ msg: expect.any(String), remaining_methods: 1 });
    const s = await status(u.apiKey);
    expect(s.methods.map((m: { method: string }) => m.method)).toEqual(['sms']);
    expect(s.methods[0].is_primary).toBe(true); // the primary moved to what remains
    expect(s.tfa_enabled).toBe(true);
  });

  it('method active → DELETE the last method: 2FA disabled, all backup codes soft-deleted', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const r = await t().request('DELETE', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', code: totpAt(totp.secret, t().clock.now()) },
    });
    expect(r.status).toBe(200);
    expect(r.body.msg).toBe('2FA Successfully Disabled');
    expect(r.body.remaining_methods).toBeUndefined();
    const s = await status(u.apiKey);
    expect(s).toMatchObject({ tfa_enabled: false, methods: [], backup_codes_remaining: 0 });
    const rows = await t()
      .deps.db.selectFrom('tfa_backup_codes')
      .selectAll()
      .where('user_id', '=', u.id)
      .execute();
    expect(rows).toHaveLength(10);
    expect(rows.every((c) => c.deleted_at !== null)).toBe(true);
    const me = await t().request('GET', '/api/v0/users/current', { key: u.apiKey });
    expect(me.body.tfa_status).toBe('disabled');
  });

  it('legacy account → DELETE: 2FA disabled with "2FA Successfully Disabled", no backup codes touched', async () => {
    const u = await t().user({ legacyTfa: true, phone: '+14155550114' });
    expect((await status(u.apiKey)).tfa_enabled).toBe(true);
    const send = await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: {} });
    expect(send.status).toBe(200);
    const r = await t().request('DELETE', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'sms', code: lastSmsCode(t(), '+14155550114'), secret: send.body.secret },
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, msg: '2FA Successfully Disabled' });
    expect((await status(u.apiKey)).tfa_enabled).toBe(false);
    expect(
      await t().deps.db.selectFrom('tfa_backup_codes').selectAll().where('user_id', '=', u.id).execute(),
    ).toEqual([]);
  });

  it('a challenge (secret) expires after 10 minutes: 2fa_expired', async () => {
    const u = await t().user();
    const r = await t().request('POST', '/api/v0/tfa/authorize-new-method/', { key: u.apiKey, body: {} });
    const code = await lastEmailCode(t(), u.email);
    t().clock.advance(10 * 60_000 + 1);
    const put = await t().request('PUT', '/api/v0/tfa/authorize-new-method/', {
      key: u.apiKey,
      body: { code, secret: r.body.secret },
    });
    expect(put.status).toBe(400);
    expect(put.body.error).toBe('2fa_expired');
    expect((await status(u.apiKey)).new_method_authorized).toBe(false);
  });
});
