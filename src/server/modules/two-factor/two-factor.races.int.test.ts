// Races decided by the database, on both dialects: the lockout claim, one-time
// TOTP steps, single-use challenges and backup codes.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { addSms, enableTotp, lastEmailCode, lastSmsCode } from './two-factor.testkit.js';
import { totpAt } from './two-factor.codes.js';

describeEachDb('2FA races', (dialect) => {
  // The platform's per-route rate limits are tested by their module; here they would mask 2FA's own.
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off' });
  const tally = (rs: { status: number; body: any }[]) => {
    const out: Record<string, number> = {};
    for (const r of rs) {
      const k = r.status === 200 ? 'ok' : r.body.error;
      out[k] = (out[k] ?? 0) + 1;
    }
    return out;
  };

  it('50 concurrent wrong TOTP codes: no more than OPENRIG_TFA_MAX_FAILURES are evaluated', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const wrong = totpAt(totp.secret, t().clock.now() + 3600_000);
    const rs = await Promise.all(
      Array.from({ length: 50 }, () =>
        t().request('POST', '/api/v0/tfa/', { key: u.apiKey, body: { tfa_method: 'totp', code: wrong } }),
      ),
    );
    const max = t().config.tfa.maxFailures;
    expect(tally(rs)).toEqual({ '2fa_login_failed': max, tfa_locked: 50 - max });
    const failures = await t()
      .deps.db.selectFrom('auth_events')
      .selectAll()
      .where('user_id', '=', u.id)
      .where('kind', '=', 'failure')
      .execute();
    expect(failures).toHaveLength(max);
    const locks = await t()
      .deps.db.selectFrom('auth_events')
      .selectAll()
      .where('user_id', '=', u.id)
      .where('kind', '=', 'lock')
      .execute();
    expect(locks).toHaveLength(1);
  });

  it('20 concurrent uses of one right TOTP code succeed exactly once', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const code = totpAt(totp.secret, t().clock.now());
    const rs = await Promise.all(
      Array.from({ length: 20 }, () =>
        t().request('POST', '/api/v0/tfa/', { key: u.apiKey, body: { tfa_method: 'totp', code } }),
      ),
    );
    expect(rs.filter((r) => r.status === 200)).toHaveLength(1);
    const sessions = await t()
      .deps.db.selectFrom('sessions')
      .selectAll()
      .where('user_id', '=', u.id)
      .execute();
    expect(sessions).toHaveLength(1);
  });

  it('20 concurrent uses of one backup code succeed exactly once', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const code = totp.backupCodes[3];
    const rs = await Promise.all(
      Array.from({ length: 20 }, () =>
        t().request('POST', '/api/v0/tfa/', { key: u.apiKey, body: { backup_code: code } }),
      ),
    );
    expect(tally(rs)).toEqual({ ok: 1, invalid_backup_code: 19 });
    expect(rs.find((r) => r.status === 200)!.body.backup_codes_remaining).toBe(9);
  });

  it('20 concurrent uses of one right e-mail code succeed exactly once', async () => {
    const u = await t().user();
    await enableTotp(t(), u.apiKey, u.email);
    const e = await t().request('POST', '/api/v0/tfa/email/', { key: u.apiKey });
    const code = await lastEmailCode(t(), u.email);
    const rs = await Promise.all(
      Array.from({ length: 20 }, () =>
        t().request('POST', '/api/v0/tfa/', {
          key: u.apiKey,
          body: { tfa_method: 'email', code, secret: e.body.secret },
        }),
      ),
    );
    expect(rs.filter((r) => r.status === 200)).toHaveLength(1);
    expect(rs.filter((r) => r.status !== 200).every((r) => r.body.error === 'no_challenge_found')).toBe(true);
  });

  it('20 concurrent uses of one right SMS code succeed exactly once', async () => {
    const u = await t().user();
    const sms = await addSms(t(), u.apiKey, u.email, '+14155550131');
    const s = await t().request('POST', '/api/v0/tfa/sms/', {
      key: u.apiKey,
      body: { tfa_method_id: sms.id },
    });
    const code = lastSmsCode(t(), '+14155550131');
    const rs = await Promise.all(
      Array.from({ length: 20 }, () =>
        t().request('POST', '/api/v0/tfa/', {
          key: u.apiKey,
          body: { tfa_method: 'sms', code, secret: s.body.secret },
        }),
      ),
    );
    expect(rs.filter((r) => r.status === 200)).toHaveLength(1);
  });

  it('a challenge dies after OPENRIG_TFA_CHALLENGE_MAX_TRIES wrong codes, even before the method locks', async () => {
    const u = await t().user();
    await enableTotp(t(), u.apiKey, u.email);
    const e = await t().request('POST', '/api/v0/tfa/email/', { key: u.apiKey });
    const right = await lastEmailCode(t(), u.email);
    const wrong = right === '000000' ? '000001' : '000000';
    const rs = await Promise.all(
      Array.from({ length: 12 }, () =>
        t().request('POST', '/api/v0/tfa/', {
          key: u.apiKey,
          body: { tfa_method: 'email', code: wrong, secret: e.body.secret },
        }),
      ),
    );
    const max = t().config.tfa.challengeMaxTries;
    expect(tally(rs)).toEqual({ '2fa_login_failed': max, no_challenge_found: 12 - max });
    const late = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'email', code: right, secret: e.body.secret },
    });
    expect(late.body.error).toBe('no_challenge_found');
  });

  it('concurrent confirm-new of one SMS number add one method; a second send while one is live is tfa_challenge_exists', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    // Open a window again with a backup code, then race two SMS adds of one number.
    await t().request('POST', '/api/v0/tfa/authorize-new-method/', {
      key: u.apiKey,
      body: { backup_code: totp.backupCodes[0] },
    });
    const a = await t().request('POST', '/api/v0/tfa/sms/', {
      key: u.apiKey,
      body: { phone_number: '+14155550132' },
    });
    const codeA = lastSmsCode(t(), '+14155550132');
    // The second send to the same number is refused while the first is live.
    const b = await t().request('POST', '/api/v0/tfa/sms/', {
      key: u.apiKey,
      body: { phone_number: '+14155550132' },
    });
    expect(b.body.error).toBe('tfa_challenge_exists');
    const rs = await Promise.all(
      Array.from({ length: 5 }, () =>
        t().request('POST', '/api/v0/tfa/confirm-new/', {
          key: u.apiKey,
          body: { tfa_method: 'sms', code: codeA, secret: a.body.secret, phone_number: '+14155550132' },
        }),
      ),
    );
    expect(rs.filter((r) => r.status === 200)).toHaveLength(1);
    const rows = await t()
      .deps.db.selectFrom('tfa_methods')
      .selectAll()
      .where('user_id', '=', u.id)
      .where('method', '=', 'sms')
      .where('deleted_at', 'is', null)
      .execute();
    expect(rows).toHaveLength(1);
  });

  it('removing the last two methods concurrently leaves 2FA disabled, never enabled with no method', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const sms = await addSms(t(), u.apiKey, u.email, '+14155550133', { skipAuthorize: true });
    const [a, b] = await Promise.all([
      t().request('DELETE', '/api/v0/tfa/', {
        key: u.apiKey,
        body: { backup_code: totp.backupCodes[0], target_id: totp.id },
      }),
      t().request('DELETE', '/api/v0/tfa/', {
        key: u.apiKey,
        body: { backup_code: totp.backupCodes[1], target_id: sms.id },
      }),
    ]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect([a.body.msg, b.body.msg]).toContain('2FA Successfully Disabled');
    const s = await t().request('GET', '/api/v0/tfa/status/', { key: u.apiKey });
    expect(s.body).toMatchObject({ tfa_enabled: false, methods: [], backup_codes_remaining: 0 });
  });
});
