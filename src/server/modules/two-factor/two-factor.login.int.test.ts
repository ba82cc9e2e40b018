// POST /api/v0/tfa/ replies, e-mail notices, auth events and secrets at rest.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { addSms, enableTotp, lastEmailCode, lastSmsCode } from './two-factor.testkit.js';
import { totpAt } from './two-factor.codes.js';

describeEachDb('2FA login and records', (dialect) => {
  // The platform's per-route rate limits are tested by their module; here they would mask 2FA's own.
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off' });

  it('reply: the user object with tfa_status; backup_codes_remaining only after a backup-code login with codes left', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const viaTotp = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', code: totpAt(totp.secret, t().clock.now()) },
    });
    expect(viaTotp.body).toMatchObject({
      id: u.id,
      email: u.email,
      full_name: expect.any(String),
      tfa_status: 'enabled',
    });
    expect(viaTotp.body).not.toHaveProperty('backup_codes_remaining');
    expect(viaTotp.body).not.toHaveProperty('legacy_tfa_user');
    for (let i = 0; i < 9; i++) {
      const r = await t().request('POST', '/api/v0/tfa/', {
        key: u.apiKey,
        body: { backup_code: totp.backupCodes[i] },
      });
      expect(r.status).toBe(200);
      expect(r.body.backup_codes_remaining).toBe(9 - i);
    }
    const last = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { backup_code: totp.backupCodes[9] },
    });
    expect(last.status).toBe(200);
    expect(last.body).not.toHaveProperty('backup_codes_remaining');
  });

  it('admin: true gives an admin session only to admins', async () => {
    const admin = await t().user({ admin: true });
    const a = await enableTotp(t(), admin.apiKey, admin.email);
    const plain = await t().user();
    const p = await enableTotp(t(), plain.apiKey, plain.email);
    const ra = await t().request('POST', '/api/v0/tfa/', {
      key: admin.apiKey,
      body: { tfa_method: 'totp', code: totpAt(a.secret, t().clock.now()), admin: true },
    });
    const rp = await t().request('POST', '/api/v0/tfa/', {
      key: plain.apiKey,
      body: { tfa_method: 'totp', code: totpAt(p.secret, t().clock.now()), admin: true },
    });
    expect(ra.status).toBe(200);
    expect(rp.status).toBe(200);
    const rows = await t()
      .deps.db.selectFrom('sessions')
      .select(['user_id', 'is_admin'])
      .where('user_id', 'in', [admin.id, plain.id])
      .execute();
    expect(rows.find((r) => r.user_id === admin.id)!.is_admin).toBe(1);
    expect(rows.find((r) => r.user_id === plain.id)!.is_admin).toBe(0);
  });

  it('a TOTP step is accepted once; the next step works', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const code = totpAt(totp.secret, t().clock.now());
    expect(
      (await t().request('POST', '/api/v0/tfa/', { key: u.apiKey, body: { tfa_method: 'totp', code } }))
        .status,
    ).toBe(200);
    expect(
      (await t().request('POST', '/api/v0/tfa/', { key: u.apiKey, body: { tfa_method: 'totp', code } })).body
        .error,
    ).toBe('2fa_login_failed');
    t().clock.advance(30_000);
    expect(
      (
        await t().request('POST', '/api/v0/tfa/', {
          key: u.apiKey,
          body: { tfa_method: 'totp', code: totpAt(totp.secret, t().clock.now()) },
        })
      ).status,
    ).toBe(200);
  });

  it('success resets the failure count', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const wrong = totpAt(totp.secret, t().clock.now() + 3600_000);
    for (let i = 0; i < 3; i++)
      await t().request('POST', '/api/v0/tfa/', { key: u.apiKey, body: { tfa_method: 'totp', code: wrong } });
    expect(
      (
        await t().request('POST', '/api/v0/tfa/', {
          key: u.apiKey,
          body: { tfa_method: 'totp', code: totpAt(totp.secret, t().clock.now()) },
        })
      ).status,
    ).toBe(200);
    const s = await t().request('GET', '/api/v0/tfa/status/', { key: u.apiKey });
    expect(s.body.methods[0].fail_count).toBe(0);
    const r = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', code: wrong },
    });
    expect(r.body.fail_count).toBe(1);
  });

  it('a code is bound to its purpose: an authorize-new-method code does not log in', async () => {
    const u = await t().user();
    await enableTotp(t(), u.apiKey, u.email);
    const a = await t().request('POST', '/api/v0/tfa/authorize-new-method/', {
      key: u.apiKey,
      body: { tfa_method: 'email' },
    });
    expect(a.status).toBe(200);
    const r = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'email', code: await lastEmailCode(t(), u.email), secret: a.body.secret },
    });
    expect(r.body.error).toBe('no_challenge_found');
  });

  it('status: method records with masked phone numbers and never a TOTP secret', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    await addSms(t(), u.apiKey, u.email, '+14155550161', { skipAuthorize: true });
    const s = await t().request('GET', '/api/v0/tfa/status/', { key: u.apiKey });
    expect(s.body).toMatchObject({
      success: true,
      tfa_enabled: true,
      backup_codes_remaining: 10,
      new_method_authorized: true,
    });
    const sms = s.body.methods.find((m: { method: string }) => m.method === 'sms');
    expect(sms).toEqual({
      id: expect.any(Number),
      user_id: u.id,
      method: 'sms',
      label: '',
      phone_number: '***0161',
      is_primary: false,
      fail_count: 0,
      locked_until: null,
      created_at: expect.any(Number),
      last_used: expect.any(Number),
    });
    expect(s.raw).not.toContain(totp.secret);
    expect(s.raw).not.toContain('4155550161');
  });

  it('TOTP secrets are AES-256-GCM encrypted at rest; backup codes are stored as keyed hashes', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const m = await t()
      .deps.db.selectFrom('tfa_methods')
      .selectAll()
      .where('id', '=', totp.id)
      .executeTakeFirstOrThrow();
    expect(m.totp_secret_enc).toMatch(/^v1\./);
    expect(m.totp_secret_enc).not.toContain(totp.secret);
    const codes = await t()
      .deps.db.selectFrom('tfa_backup_codes')
      .selectAll()
      .where('user_id', '=', u.id)
      .execute();
    const dump = JSON.stringify(codes);
    for (const c of totp.backupCodes) {
      expect(dump).not.toContain(c);
      expect(dump).not.toContain(c.replace(/-/g, ''));
    }
  });

  it('e-mails the user when a method is added or removed, backup codes are regenerated, or a method locks', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    await addSms(t(), u.apiKey, u.email, '+14155550162', { skipAuthorize: true });
    await t().request('PUT', '/api/v0/tfa/regen-backup-codes/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', code: totpAt(totp.secret, t().clock.now()) },
    });
    t().clock.advance(30_000);
    await t().request('DELETE', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', code: totpAt(totp.secret, t().clock.now()) },
    });
    const send = await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: {} });
    const right = lastSmsCode(t(), '+14155550162');
    const wrong = right === '000000' ? '111111' : '000000';
    for (let i = 0; i < t().config.tfa.maxFailures; i++) {
      await t().request('POST', '/api/v0/tfa/', {
        key: u.apiKey,
        body: { tfa_method: 'sms', code: wrong, secret: send.body.secret },
      });
    }
    const mails = await t()
      .deps.db.selectFrom('email_outbox')
      .select(['category', 'text_body'])
      .where('to_addr', '=', u.email)
      .orderBy('id')
      .execute();
    const cats = mails.map((m) => m.category);
    expect(cats.filter((c) => c === 'tfa.method_added')).toHaveLength(2);
    expect(cats).toContain('tfa.backup_regenerated');
    expect(cats).toContain('tfa.method_removed');
    expect(cats).toContain('tfa.method_locked');
    // Notices never carry a code.
    for (const m of mails.filter((x) => x.category !== 'tfa.code'))
      expect(m.text_body).not.toMatch(/\b\d{6}\b/);
  });

  it('auth events: success, failure, lock and change, with the method type and never a code', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const good = totpAt(totp.secret, t().clock.now());
    const bad = totpAt(totp.secret, t().clock.now() + 3600_000);
    await t().request('POST', '/api/v0/tfa/', { key: u.apiKey, body: { tfa_method: 'totp', code: good } });
    for (let i = 0; i < t().config.tfa.maxFailures; i++)
      await t().request('POST', '/api/v0/tfa/', { key: u.apiKey, body: { tfa_method: 'totp', code: bad } });
    const events = await t()
      .deps.db.selectFrom('auth_events')
      .selectAll()
      .where('user_id', '=', u.id)
      .orderBy('id')
      .execute();
    const kinds = new Set(events.map((e) => `${e.kind}:${e.action}`));
    expect(kinds).toEqual(
      new Set(['success:authorize', 'change:method_added', 'success:login', 'failure:login', 'lock:login']),
    );
    expect(events.filter((e) => e.action === 'login').every((e) => e.method === 'totp')).toBe(true);
    const dump = JSON.stringify(events);
    expect(dump).not.toContain(good);
    expect(dump).not.toContain(bad);
    expect(dump).not.toContain(totp.secret);
  });

  it('a password login prunes challenges a day past their expiry', async () => {
    const u = await t().user({ password: 'correct horse battery' });
    await enableTotp(t(), u.apiKey, u.email);
    const first = await t().request('POST', '/api/v0/users/login/', {
      body: { email: u.email, password: 'correct horse battery' },
    });
    expect(first.body.tfa_secret).toBeDefined();
    const count = async () =>
      (await t().deps.db.selectFrom('tfa_challenges').select('id').where('user_id', '=', u.id).execute())
        .length;
    const before = await count();
    t().clock.advance(2 * 86_400_000);
    await t().request('POST', '/api/v0/users/login/', {
      body: { email: u.email, password: 'correct horse battery' },
    });
    expect(await count()).toBe(1);
    expect(before).toBeGreaterThan(1);
  });

  it('regenerating replaces the whole set: every old code stops working', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const r = await t().request('PUT', '/api/v0/tfa/regen-backup-codes/', {
      key: u.apiKey,
      body: { backup_code: totp.backupCodes[0] },
    });
    expect(r.status).toBe(200);
    expect(r.body.backup_codes).toHaveLength(10);
    for (const old of totp.backupCodes.slice(1, 3)) {
      expect(
        (await t().request('POST', '/api/v0/tfa/', { key: u.apiKey, body: { backup_code: old } })).body.error,
      ).toBe('invalid_backup_code');
    }
    const fresh = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { backup_code: r.body.backup_codes[0].toLowerCase() },
    });
    expect(fresh.status).toBe(200);
    expect(fresh.body.backup_codes_remaining).toBe(9);
  });
});
