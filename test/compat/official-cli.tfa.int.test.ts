// The official CLI's 2FA commands in the order a user runs them, each request as that CLI sends
// it (empty fields left out, tfa_method_id as a string of digits for `login -id`), each reply
// checked for what the CLI reads (docs/compatibility.md, rows marked "works").
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { totpAt } from '../../src/server/modules/two-factor/two-factor.codes.js';
import { lastEmailCode, lastSmsCode } from '../../src/server/modules/two-factor/two-factor.testkit.js';
import { cli, expectOk, expectTableFields } from './official-cli.js';

const PHONE = '+15551234567';

describeEachDb('official CLI: tfa commands', (dialect) => {
  const t = useTestApp(dialect);
  let key: string;
  let email: string;
  let totpSecret: string;
  let totpId: number;
  let backupCodes: string[];
  const totp = () => {
    // Each code is accepted once; the next step of the clock gives the next one.
    t().clock.advance(30_000);
    return totpAt(totpSecret, t().clock.now());
  };
  beforeAll(async () => {
    const u = await t().user();
    key = u.apiKey;
    email = u.email;
  });

  it('tfa status before any method: tfa_enabled false, no methods', async () => {
    const r = await cli(t(), { method: 'GET', path: '/tfa/status/', key });
    expectOk(r);
    expect(r.body.tfa_enabled).toBe(false);
    expect(r.body.methods ?? []).toEqual([]);
  });

  it('tfa auth-new (e-mail code), tfa totp-setup, tfa activate CODE --secret S --label L', async () => {
    const a = await cli(t(), {
      method: 'POST',
      path: '/api/v0/tfa/authorize-new-method/',
      key,
      json: { tfa_method: 'email' },
    });
    expectOk(a);
    expect(typeof a.body.secret).toBe('string');
    const b = await cli(t(), {
      method: 'PUT',
      path: '/api/v0/tfa/authorize-new-method/',
      key,
      json: { secret: a.body.secret, code: await lastEmailCode(t(), email) },
    });
    expectOk(b);
    const s = await cli(t(), { method: 'POST', path: '/api/v0/tfa/totp-setup/', key, json: {} });
    expectOk(s);
    expect(s.body.provisioning_uri).toMatch(/^otpauth:\/\/totp\//);
    totpSecret = s.body.secret;
    const c = await cli(t(), {
      method: 'POST',
      path: '/api/v0/tfa/confirm-new/',
      key,
      json: { code: totpAt(totpSecret, t().clock.now()), secret: totpSecret, label: 'phone' },
    });
    expectOk(c);
    expect(c.body.backup_codes).toHaveLength(10);
    backupCodes = c.body.backup_codes;
  });

  it('tfa status: the methods table and backup_codes_remaining', async () => {
    const r = await cli(t(), { method: 'GET', path: '/api/v0/tfa/status/', key });
    expectOk(r);
    expect(r.body.tfa_enabled).toBe(true);
    expect(r.body.backup_codes_remaining).toBe(10);
    const m = r.body.methods[0];
    expect(m).toMatchObject({ method: 'totp', label: 'phone' });
    expectTableFields(m, {
      id: 'int',
      created_at: 'num',
      last_used: 'num',
      locked_until: 'num',
      fail_count: 'int',
    });
    totpId = m.id;
  });

  it('tfa login -c CODE and tfa login -id ID -c CODE: session_key and backup_codes_remaining', async () => {
    for (const json of [{ code: totp() }, { tfa_method_id: String(totpId), code: totp() }]) {
      const r = await cli(t(), { method: 'POST', path: '/api/v0/tfa/', key, json });
      expectOk(r);
      expect(typeof r.body.session_key).toBe('string');
      // Printed when present.
      if (r.body.backup_codes_remaining !== undefined) expect(r.body.backup_codes_remaining).toBe(10);
      // The CLI sends the session key as its Bearer from then on.
      expect(
        (await cli(t(), { method: 'GET', path: '/users/current', key: r.body.session_key })).status,
      ).toBe(200);
    }
  });

  it('tfa update ID -l L -p true: the updated method', async () => {
    const r = await cli(t(), {
      method: 'PUT',
      path: '/api/v0/tfa/update/',
      key,
      json: { tfa_method_id: totpId, label: 'laptop', is_primary: true },
    });
    expectOk(r);
    expect(r.body.method).toMatchObject({ id: totpId, label: 'laptop', is_primary: true });
  });

  let smsId: number;
  it('tfa auth-new -t totp, tfa send-sms --phone-number, tfa resend-sms, tfa activate -t sms', async () => {
    const a = await cli(t(), {
      method: 'POST',
      path: '/api/v0/tfa/authorize-new-method/',
      key,
      json: { tfa_method: 'totp' },
    });
    expectOk(a);
    expectOk(
      await cli(t(), {
        method: 'PUT',
        path: '/api/v0/tfa/authorize-new-method/',
        key,
        json: { secret: a.body.secret, code: totp() },
      }),
    );
    const s = await cli(t(), {
      method: 'POST',
      path: '/api/v0/tfa/sms/',
      key,
      json: { phone_number: PHONE },
    });
    expectOk(s);
    expect(typeof s.body.secret).toBe('string');
    t().clock.advance(61_000);
    const re = await cli(t(), {
      method: 'POST',
      path: '/api/v0/tfa/sms/resend/',
      key,
      json: { secret: s.body.secret },
    });
    expectOk(re);
    expect(typeof re.body.msg).toBe('string');
    const c = await cli(t(), {
      method: 'POST',
      path: '/api/v0/tfa/confirm-new/',
      key,
      json: { tfa_method: 'sms', code: lastSmsCode(t(), PHONE), secret: s.body.secret, phone_number: PHONE },
    });
    expectOk(c);
    const st = await cli(t(), { method: 'GET', path: '/api/v0/tfa/status/', key });
    smsId = st.body.methods.find((m: { method: string }) => m.method === 'sms').id;
  });

  it('tfa send-sms then tfa login -t sms -s S -c CODE; tfa send-email returns a secret', async () => {
    t().clock.advance(61_000);
    const s = await cli(t(), { method: 'POST', path: '/api/v0/tfa/sms/', key, json: {} });
    expectOk(s);
    const r = await cli(t(), {
      method: 'POST',
      path: '/api/v0/tfa/',
      key,
      json: { tfa_method: 'sms', code: lastSmsCode(t(), PHONE), secret: s.body.secret },
    });
    expectOk(r);
    expect(typeof r.body.session_key).toBe('string');
    const e = await cli(t(), { method: 'POST', path: '/api/v0/tfa/email/', key, json: {} });
    expectOk(e);
    expect(typeof e.body.secret).toBe('string');
  });

  it('a second tfa send-sms within the resend window: tfa_challenge_exists, with a msg for CLI and API users', async () => {
    t().clock.advance(61_000);
    expectOk(await cli(t(), { method: 'POST', path: '/api/v0/tfa/sms/', key, json: {} }));
    t().clock.advance(20_000);
    const again = await cli(t(), { method: 'POST', path: '/api/v0/tfa/sms/', key, json: {} });
    expect(again.status).toBe(400);
    expect(again.contentType).toBe('application/json');
    expect(again.body.error).toBe('tfa_challenge_exists');
    // The CLI prints `msg`: it names the CLI's resend command and the API path, and when a plain
    // send works again (OPENRIG_SMS_RESEND_AFTER_S, 60 s by default, after the first send).
    expect(again.body.msg).toContain('tfa resend-sms --secret SECRET');
    expect(again.body.msg).toContain('POST /api/v0/tfa/sms/resend/');
    expect(again.body.msg).toMatch(/A plain send works again in 40 s\.$/);
  });

  it('tfa regen-codes -id ID -c CODE, tfa login --backup-code, tfa delete -id ID --method-id ID -c CODE', async () => {
    const g = await cli(t(), {
      method: 'PUT',
      path: '/api/v0/tfa/regen-backup-codes/',
      key,
      json: { tfa_method_id: String(totpId), code: totp() },
    });
    expectOk(g);
    expect(g.body.backup_codes).toHaveLength(10);
    expect(g.body.backup_codes).not.toEqual(backupCodes);
    const b = await cli(t(), {
      method: 'POST',
      path: '/api/v0/tfa/',
      key,
      json: { backup_code: g.body.backup_codes[0] },
    });
    expectOk(b);
    expect(typeof b.body.session_key).toBe('string');
    expect(b.body.backup_codes_remaining).toBe(9);
    const d = await cli(t(), {
      method: 'DELETE',
      path: '/api/v0/tfa/',
      key,
      json: { tfa_method_id: String(totpId), code: totp(), target_id: smsId },
    });
    expectOk(d);
    expect(d.body.remaining_methods).toBe(1);
  });

  it('tfa login with a wrong code: 2fa_login_failed (the published code for a failed login), with fail_count', async () => {
    const r = await cli(t(), {
      method: 'POST',
      path: '/api/v0/tfa/',
      key,
      json: { tfa_method: 'totp', code: '000000' },
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('2fa_login_failed');
    expect(typeof r.body.msg).toBe('string');
    expect(Number.isInteger(r.body.fail_count)).toBe(true);
  });
});
