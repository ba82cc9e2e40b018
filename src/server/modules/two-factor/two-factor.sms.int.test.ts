// SMS sending and resending, abuse controls, legacy accounts and the deprecated
// endpoints.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { addSms, lastEmailCode, lastSmsCode } from './two-factor.testkit.js';

const PASSWORD = 'correct horse battery';

describeEachDb('2FA by SMS, legacy accounts, deprecated endpoints', (dialect) => {
  // The platform's per-route rate limits are tested by their module; here they would mask 2FA's own.
  const t = useTestApp(dialect, {
    OPENRIG_RATE_LIMITS: 'off',
    OPENRIG_SMS_PER_NUMBER_LIMIT: '4',
    OPENRIG_SMS_PER_USER_LIMIT: '50',
  });
  let n = 400;
  const phone = () => `+1415555${String(++n).padStart(4, '0')}`;
  const wait = () => t().clock.advance(t().config.sms.resendAfterS * 1000);
  const other = (code: string) => (code === '000000' ? '111111' : '000000');

  it('POST tfa/sms/: phone_number must be E.164; the number on file is used when none is given', async () => {
    const p = phone();
    const u = await t().user({ phone: p });
    const bad = await t().request('POST', '/api/v0/tfa/sms/', {
      key: u.apiKey,
      body: { phone_number: '4155550100' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('bad_request');
    const r = await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: {} });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      msg: expect.stringContaining(p.slice(-4)),
      secret: expect.any(String),
    });
    expect(lastSmsCode(t(), p)).toMatch(/^\d{6}$/);
  });

  it('a resend invalidates the previous code', async () => {
    const u = await t().user();
    const p = phone();
    const m = await addSms(t(), u.apiKey, u.email, p);
    const s = await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: { tfa_method_id: m.id } });
    const first = lastSmsCode(t(), p);
    wait();
    const rs = await t().request('POST', '/api/v0/tfa/sms/resend/', {
      key: u.apiKey,
      body: { secret: s.body.secret, tfa_method_id: m.id },
    });
    expect(rs.status).toBe(200);
    expect(rs.body.secret).toBe(s.body.secret);
    const second = lastSmsCode(t(), p);
    if (first !== second) {
      const old = await t().request('POST', '/api/v0/tfa/', {
        key: u.apiKey,
        body: { tfa_method: 'sms', code: first, secret: s.body.secret },
      });
      expect(old.body.error).toBe('2fa_login_failed');
    }
    const ok = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'sms', code: second, secret: s.body.secret },
    });
    expect(ok.status).toBe(200);
  });

  it('resend with a Bearer and no secret recovers a lost secret (the old one dies)', async () => {
    const u = await t().user();
    const p = phone();
    await addSms(t(), u.apiKey, u.email, p);
    const s = await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: { phone_number: p } });
    wait();
    const rs = await t().request('POST', '/api/v0/tfa/sms/resend/', {
      key: u.apiKey,
      body: { phone_number: p },
    });
    expect(rs.status).toBe(200);
    expect(rs.body.secret).not.toBe(s.body.secret);
    const code = lastSmsCode(t(), p);
    expect(
      (
        await t().request('POST', '/api/v0/tfa/', {
          key: u.apiKey,
          body: { tfa_method: 'sms', code, secret: s.body.secret },
        })
      ).body.error,
    ).toBe('no_challenge_found');
    expect(
      (
        await t().request('POST', '/api/v0/tfa/', {
          key: u.apiKey,
          body: { tfa_method: 'sms', code, secret: rs.body.secret },
        })
      ).status,
    ).toBe(200);
  });

  it('send vs resend: resend works at once; a plain send is tfa_challenge_exists for OPENRIG_SMS_RESEND_AFTER_S, then replaces the code', async () => {
    const u = await t().user();
    const p = phone();
    const m = await addSms(t(), u.apiKey, u.email, p);
    const none = await t().request('POST', '/api/v0/tfa/sms/resend/', {
      key: u.apiKey,
      body: { tfa_method_id: m.id },
    });
    expect(none.body.error).toBe('no_challenge_found');
    const s = await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: { tfa_method_id: m.id } });
    const again = await t().request('POST', '/api/v0/tfa/sms/', {
      key: u.apiKey,
      body: { tfa_method_id: m.id },
    });
    expect(again.body.error).toBe('tfa_challenge_exists');
    const now = await t().request('POST', '/api/v0/tfa/sms/resend/', {
      key: u.apiKey,
      body: { secret: s.body.secret },
    });
    expect(now.status).toBe(200);
    const mismatch = await t().request('POST', '/api/v0/tfa/sms/resend/', {
      key: u.apiKey,
      body: { secret: s.body.secret, phone_number: phone() },
    });
    expect(mismatch.body.error).toBe('phone_number_mismatch');
    wait();
    const later = await t().request('POST', '/api/v0/tfa/sms/', {
      key: u.apiKey,
      body: { tfa_method_id: m.id },
    });
    expect(later.status).toBe(200);
    expect(later.body.secret).not.toBe(s.body.secret);
    const code = lastSmsCode(t(), p);
    expect(
      (
        await t().request('POST', '/api/v0/tfa/', {
          key: u.apiKey,
          body: { tfa_method: 'sms', code, secret: s.body.secret },
        })
      ).body.error,
    ).toBe('no_challenge_found');
    expect(
      (
        await t().request('POST', '/api/v0/tfa/', {
          key: u.apiKey,
          body: { tfa_method: 'sms', code, secret: later.body.secret },
        })
      ).status,
    ).toBe(200);
  });

  it('sms_rate_limited per number, across accounts', async () => {
    const p = phone();
    // Legacy accounts: their codes verify (not add) a number, so the pre-authorization cap is out of play.
    for (let i = 0; i < t().config.sms.perNumberLimit; i++) {
      const u = await t().user({ phone: p, legacyTfa: true });
      expect((await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: {} })).status).toBe(200);
    }
    const u = await t().user({ phone: p, legacyTfa: true });
    const r = await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: {} });
    expect(r.status).toBe(429);
    expect(r.body.error).toBe('sms_rate_limited');
    t().clock.advance(t().config.sms.windowS * 1000);
    expect((await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: {} })).status).toBe(200);
  });

  it('SMS methods work everywhere: authorize, regen-backup-codes, DELETE; several numbers are told apart by tfa_method_id', async () => {
    const u = await t().user();
    const p1 = phone();
    const p2 = phone();
    const a = await addSms(t(), u.apiKey, u.email, p1);
    const b = await addSms(t(), u.apiKey, u.email, p2, { skipAuthorize: true });
    const ambiguous = await t().request('POST', '/api/v0/tfa/authorize-new-method/', {
      key: u.apiKey,
      body: { tfa_method: 'sms' },
    });
    expect(ambiguous.status).toBe(400);
    const auth = await t().request('POST', '/api/v0/tfa/authorize-new-method/', {
      key: u.apiKey,
      body: { tfa_method_id: b.id },
    });
    expect(auth.status).toBe(200);
    const put = await t().request('PUT', '/api/v0/tfa/authorize-new-method/', {
      key: u.apiKey,
      body: { code: lastSmsCode(t(), p2), secret: auth.body.secret },
    });
    expect(put.status).toBe(200);
    const s1 = await t().request('POST', '/api/v0/tfa/sms/', {
      key: u.apiKey,
      body: { tfa_method_id: a.id },
    });
    const regen = await t().request('PUT', '/api/v0/tfa/regen-backup-codes/', {
      key: u.apiKey,
      body: { tfa_method: 'sms', code: lastSmsCode(t(), p1), secret: s1.body.secret },
    });
    expect(regen.status).toBe(200);
    expect(regen.body.backup_codes).toHaveLength(10);
    const s2 = await t().request('POST', '/api/v0/tfa/sms/', {
      key: u.apiKey,
      body: { tfa_method_id: a.id },
    });
    const wrongTarget = await t().request('DELETE', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'sms', tfa_method_id: b.id, code: lastSmsCode(t(), p1), secret: s2.body.secret },
    });
    expect(wrongTarget.body.error).toBe('phone_number_mismatch');
    const del = await t().request('DELETE', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'sms', code: lastSmsCode(t(), p1), secret: s2.body.secret },
    });
    expect(del.status).toBe(200);
    expect(del.body.remaining_methods).toBe(1);
    const st = await t().request('GET', '/api/v0/tfa/status/', { key: u.apiKey });
    expect(st.body.methods.map((m: { id: number }) => m.id)).toEqual([b.id]);
  });

  it('logged-out flow: an SMS goes only to a number that protects the account', async () => {
    const u = await t().user({ password: PASSWORD });
    const p = phone();
    await addSms(t(), u.apiKey, u.email, p);
    const login = await t().request('POST', '/api/v0/users/login/', {
      body: { email: u.email, password: PASSWORD },
    });
    expect(login.body.methods).toEqual([
      { id: expect.any(Number), method: 'sms', label: '', is_primary: true },
    ]);
    const elsewhere = await t().request('POST', '/api/v0/tfa/sms/', {
      body: { secret: login.body.tfa_secret, phone_number: phone() },
    });
    expect(elsewhere.body.error).toBe('phone_number_mismatch');
    const s = await t().request('POST', '/api/v0/tfa/sms/', { body: { secret: login.body.tfa_secret } });
    expect(s.status).toBe(200);
    const wrong = await t().request('POST', '/api/v0/tfa/', {
      body: { tfa_method: 'sms', code: other(lastSmsCode(t(), p)), secret: login.body.tfa_secret },
    });
    expect(wrong.body).toMatchObject({ error: '2fa_login_failed', fail_count: 1, locked_until: null });
    const done = await t().request('POST', '/api/v0/tfa/', {
      body: { tfa_method: 'sms', code: lastSmsCode(t(), p), secret: login.body.tfa_secret },
    });
    expect(done.status).toBe(200);
    expect(done.body.session_key).toBeUndefined();
  });

  it("logged-out flow: the login may switch to another of the account's numbers; the first code then stops working", async () => {
    const u = await t().user({ password: PASSWORD });
    const pa = phone();
    const pb = phone();
    await addSms(t(), u.apiKey, u.email, pa);
    const b = await addSms(t(), u.apiKey, u.email, pb, { skipAuthorize: true });
    const login = await t().request('POST', '/api/v0/users/login/', {
      body: { email: u.email, password: PASSWORD },
    });
    const secret = login.body.tfa_secret;
    expect((await t().request('POST', '/api/v0/tfa/sms/', { body: { secret } })).status).toBe(200);
    const codeA = lastSmsCode(t(), pa);
    const toB = await t().request('POST', '/api/v0/tfa/sms/', { body: { secret, tfa_method_id: b.id } });
    expect(toB.status).toBe(200);
    const codeB = lastSmsCode(t(), pb);
    if (codeA !== codeB) {
      expect(
        (await t().request('POST', '/api/v0/tfa/', { body: { tfa_method: 'sms', code: codeA, secret } })).body
          .error,
      ).toBe('2fa_login_failed');
    }
    const done = await t().request('POST', '/api/v0/tfa/', {
      body: { tfa_method: 'sms', code: codeB, secret },
    });
    expect(done.status).toBe(200);
  });

  it('legacy account: tfa_status legacy, login by SMS to the number on file, legacy_tfa_user: true', async () => {
    const p = phone();
    const u = await t().user({ password: PASSWORD, legacyTfa: true, phone: p });
    const me = await t().request('GET', '/api/v0/users/current', { key: u.apiKey });
    expect(me.body.tfa_status).toBe('legacy');
    const st = await t().request('GET', '/api/v0/tfa/status/', { key: u.apiKey });
    expect(st.body).toMatchObject({ tfa_enabled: true, methods: [], backup_codes_remaining: 0 });
    const login = await t().request('POST', '/api/v0/users/login/', {
      body: { email: u.email, password: PASSWORD },
    });
    expect(login.body.tfa_required).toBe(true);
    const s = await t().request('POST', '/api/v0/tfa/sms/', { body: { secret: login.body.tfa_secret } });
    expect(s.status).toBe(200);
    const done = await t().request('POST', '/api/v0/tfa/', {
      body: { tfa_method: 'sms', code: lastSmsCode(t(), p), secret: login.body.tfa_secret },
    });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ tfa_status: 'legacy', legacy_tfa_user: true });
    // CLI flow too.
    const s2 = await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: {} });
    const cli = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { code: lastSmsCode(t(), p), secret: s2.body.secret },
    });
    expect(cli.status).toBe(200);
    expect(cli.body).toMatchObject({ legacy_tfa_user: true, session_key: expect.any(String) });
  });

  it('legacy account: regen-backup-codes first creates the SMS method from the number on file', async () => {
    const p = phone();
    const u = await t().user({ legacyTfa: true, phone: p });
    const s = await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: {} });
    const r = await t().request('PUT', '/api/v0/tfa/regen-backup-codes/', {
      key: u.apiKey,
      body: { tfa_method: 'sms', code: lastSmsCode(t(), p), secret: s.body.secret },
    });
    expect(r.status).toBe(200);
    expect(r.body.backup_codes).toHaveLength(10);
    const st = await t().request('GET', '/api/v0/tfa/status/', { key: u.apiKey });
    expect(st.body.methods).toEqual([
      expect.objectContaining({
        method: 'sms',
        phone_number: `***${p.slice(-4)}`,
        is_primary: true,
        // Its number verified the request that made it.
        last_used: t().clock.now() / 1000,
      }),
    ]);
    expect(st.body.backup_codes_remaining).toBe(10);
    // Now tracked: the deprecated test-submit no longer answers untracked_2fa_found.
    const ts = await t().request('POST', '/api/v0/tfa/test-submit/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', code: '123456', secret: 'x' },
    });
    expect(ts.body.error).not.toBe('untracked_2fa_found');
  });

  it('legacy account with soft-deleted method rows: regen does not recreate the method', async () => {
    const p = phone();
    const u = await t().user({ legacyTfa: true, phone: p });
    await t()
      .deps.db.insertInto('tfa_methods')
      .values({
        user_id: u.id,
        method: 'sms',
        label: '',
        phone_number: p,
        totp_secret_enc: null,
        last_totp_step: null,
        is_primary: 0,
        fail_count: 0,
        locked_until: null,
        created_at: 1,
        last_used: null,
        deleted_at: 2,
      })
      .execute();
    const s = await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: {} });
    const r = await t().request('PUT', '/api/v0/tfa/regen-backup-codes/', {
      key: u.apiKey,
      body: { tfa_method: 'sms', code: lastSmsCode(t(), p), secret: s.body.secret },
    });
    expect(r.status).toBe(200);
    const rows = await t()
      .deps.db.selectFrom('tfa_methods')
      .selectAll()
      .where('user_id', '=', u.id)
      .execute();
    expect(rows).toHaveLength(1);
  });

  it('deprecated /tfa/test/, /tfa/resend/, /tfa/test-submit/ work like their replacements, with a Deprecation header', async () => {
    const u = await t().user();
    const p = phone();
    const auth = await t().request('POST', '/api/v0/tfa/authorize-new-method/', { key: u.apiKey, body: {} });
    await t().request('PUT', '/api/v0/tfa/authorize-new-method/', {
      key: u.apiKey,
      body: { code: await lastEmailCode(t(), u.email), secret: auth.body.secret },
    });
    const test = await t().request('POST', '/api/v0/tfa/test/', { key: u.apiKey, body: { phone_number: p } });
    expect(test.status).toBe(200);
    expect(test.headers.deprecation).toBe('true');
    expect(String(test.headers.link)).toContain('/api/v0/tfa/sms/');
    const again = await t().request('POST', '/api/v0/tfa/test/', {
      key: u.apiKey,
      body: { phone_number: p },
    });
    expect(again.body.error).toBe('tfa_challenge_exists');
    expect(again.headers.deprecation).toBe('true');
    wait();
    const resend = await t().request('POST', '/api/v0/tfa/resend/', {
      key: u.apiKey,
      body: { secret: test.body.secret, phone_number: p },
    });
    expect(resend.status).toBe(200);
    expect(resend.headers.deprecation).toBe('true');
    const submit = await t().request('POST', '/api/v0/tfa/test-submit/', {
      key: u.apiKey,
      body: { tfa_method: 'sms', code: lastSmsCode(t(), p), secret: test.body.secret, phone_number: p },
    });
    expect(submit.status).toBe(200);
    expect(submit.headers.deprecation).toBe('true');
    expect(submit.body.backup_codes).toHaveLength(10);
    const fresh = await t().request('POST', '/api/v0/tfa/sms/', {
      key: u.apiKey,
      body: { phone_number: phone() },
    });
    expect(fresh.headers.deprecation).toBeUndefined();
  });
});
