// Every 2FA error code: one test each, asserting the code, the HTTP status and the
// `{error, msg}` body (plus fail_count / locked_until on the lockout codes).
// The SMS codes run against the outbox provider and, for the provider's own
// errors, against the twilio provider pointed at a local stand-in.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql } from 'kysely';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type Reply } from '../../../../test/helpers/app.js';
import { setSmsFraud } from '../accounts/accounts.service.js';
import { startTwilioStandin, type TwilioStandin } from '../sms/sms.twilio-standin.js';
import { addSms, authorize, enableTotp, lastEmailCode, lastSmsCode } from './two-factor.testkit.js';
import { totpAt } from './two-factor.codes.js';

function expectError(r: Reply, status: number, code: string): void {
  expect({ status: r.status, error: r.body?.error }).toEqual({ status, error: code });
  expect(typeof r.body.msg).toBe('string');
  expect(r.body.msg.length).toBeGreaterThan(0);
}

describeEachDb('2FA error table', (dialect) => {
  const t = useTestApp(dialect, {
    OPENRIG_RATE_LIMITS: 'off',
    OPENRIG_SMS_PER_USER_LIMIT: '3',
    OPENRIG_SMS_PREAUTH_PHONE_CAP: '2',
    OPENRIG_SMS_BLOCKED_PREFIXES: '+881,+99',
  });
  let phoneN = 200;
  const phone = () => `+1415555${String(++phoneN).padStart(4, '0')}`;

  it('bad_request 400: malformed JSON, wrong types', async () => {
    const u = await t().user();
    expectError(
      await t().request('POST', '/api/v0/tfa/', {
        key: u.apiKey,
        rawBody: '{"code":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'bad_request',
    );
    expectError(
      await t().request('POST', '/api/v0/tfa/', {
        key: u.apiKey,
        body: { tfa_method: 'totp', code: 123456 },
      }),
      400,
      'bad_request',
    );
    expectError(
      await t().request('PUT', '/api/v0/tfa/update/', {
        key: u.apiKey,
        body: { tfa_method: 'totp', is_primary: 'yes' },
      }),
      400,
      'bad_request',
    );
  });

  it('auth_error 403: no Bearer token and no tfa_secret', async () => {
    expectError(await t().request('GET', '/api/v0/tfa/status/'), 403, 'auth_error');
    expectError(await t().request('POST', '/api/v0/tfa/totp-setup/'), 403, 'auth_error');
  });

  it('invalid_tfa_method 400: an unsupported tfa_method value', async () => {
    const u = await t().user();
    expectError(
      await t().request('POST', '/api/v0/tfa/', {
        key: u.apiKey,
        body: { tfa_method: 'fax', code: '123456' },
      }),
      400,
      'invalid_tfa_method',
    );
    // E-mail cannot be added as a method.
    await authorize(t(), u.apiKey, u.email);
    expectError(
      await t().request('POST', '/api/v0/tfa/confirm-new/', {
        key: u.apiKey,
        body: { tfa_method: 'email', code: '123456', secret: 'x' },
      }),
      400,
      'invalid_tfa_method',
    );
  });

  it('missing_auth_value: 400 without code or backup_code; 401 without both tfa_secret and Bearer', async () => {
    const u = await t().user();
    await enableTotp(t(), u.apiKey, u.email);
    expectError(
      await t().request('POST', '/api/v0/tfa/', { key: u.apiKey, body: { tfa_method: 'totp' } }),
      400,
      'missing_auth_value',
    );
    expectError(
      await t().request('POST', '/api/v0/tfa/', { body: { tfa_method: 'totp', code: '123456' } }),
      401,
      'missing_auth_value',
    );
  });

  it('missing_params 400: code and secret not provided', async () => {
    const u = await t().user();
    expectError(
      await t().request('PUT', '/api/v0/tfa/authorize-new-method/', { key: u.apiKey, body: {} }),
      400,
      'missing_params',
    );
  });

  it('email_not_verified 400: before any code is sent by e-mail or SMS (admins exempt on the SMS endpoints)', async () => {
    const u = await t().user({ emailVerified: false, phone: phone() });
    expectError(
      await t().request('POST', '/api/v0/tfa/email/', { key: u.apiKey }),
      400,
      'email_not_verified',
    );
    expectError(
      await t().request('POST', '/api/v0/tfa/authorize-new-method/', { key: u.apiKey, body: {} }),
      400,
      'email_not_verified',
    );
    expectError(
      await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: {} }),
      400,
      'email_not_verified',
    );
    const admin = await t().user({ emailVerified: false, admin: true, phone: phone() });
    expect((await t().request('POST', '/api/v0/tfa/sms/', { key: admin.apiKey, body: {} })).status).toBe(200);
    expectError(
      await t().request('POST', '/api/v0/tfa/email/', { key: admin.apiKey }),
      400,
      'email_not_verified',
    );
  });

  it('2fa_expired 400: the challenge is older than 10 minutes', async () => {
    const u = await t().user();
    const r = await t().request('POST', '/api/v0/tfa/authorize-new-method/', { key: u.apiKey, body: {} });
    t().clock.advance(t().config.tfa.challengeTtlS * 1000);
    expectError(
      await t().request('PUT', '/api/v0/tfa/authorize-new-method/', {
        key: u.apiKey,
        body: { code: await lastEmailCode(t(), u.email), secret: r.body.secret },
      }),
      400,
      '2fa_expired',
    );
  });

  it("challenge_not_found 400: no challenge matches the secret (or it is another user's)", async () => {
    const u = await t().user();
    const other = await t().user();
    expectError(
      await t().request('PUT', '/api/v0/tfa/authorize-new-method/', {
        key: u.apiKey,
        body: { code: '123456', secret: 'tfa_nothing' },
      }),
      400,
      'challenge_not_found',
    );
    const theirs = await t().request('POST', '/api/v0/tfa/authorize-new-method/', {
      key: other.apiKey,
      body: {},
    });
    expectError(
      await t().request('PUT', '/api/v0/tfa/authorize-new-method/', {
        key: u.apiKey,
        body: { code: '123456', secret: theirs.body.secret },
      }),
      400,
      'challenge_not_found',
    );
  });

  it('no_challenge_found 400: the challenge was used (cleared)', async () => {
    const u = await t().user();
    await enableTotp(t(), u.apiKey, u.email);
    const e = await t().request('POST', '/api/v0/tfa/email/', { key: u.apiKey });
    const code = await lastEmailCode(t(), u.email);
    expect(
      (
        await t().request('POST', '/api/v0/tfa/', {
          key: u.apiKey,
          body: { tfa_method: 'email', code, secret: e.body.secret },
        })
      ).status,
    ).toBe(200);
    expectError(
      await t().request('POST', '/api/v0/tfa/', {
        key: u.apiKey,
        body: { tfa_method: 'email', code, secret: e.body.secret },
      }),
      400,
      'no_challenge_found',
    );
  });

  it('tfa_challenge_exists 400: a recent SMS code was already sent; use resend', async () => {
    const u = await t().user();
    const p = phone();
    expect(
      (await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: { phone_number: p } })).status,
    ).toBe(200);
    expectError(
      await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: { phone_number: p } }),
      400,
      'tfa_challenge_exists',
    );
    t().clock.advance(t().config.sms.resendAfterS * 1000);
    expect(
      (await t().request('POST', '/api/v0/tfa/sms/resend/', { key: u.apiKey, body: { phone_number: p } }))
        .status,
    ).toBe(200);
  });

  it('authorization_required 403: confirm-new without the add-method window', async () => {
    const u = await t().user();
    const setup = await t().request('POST', '/api/v0/tfa/totp-setup/', { key: u.apiKey });
    expectError(
      await t().request('POST', '/api/v0/tfa/confirm-new/', {
        key: u.apiKey,
        body: {
          tfa_method: 'totp',
          code: totpAt(setup.body.secret, t().clock.now()),
          secret: setup.body.secret,
        },
      }),
      403,
      'authorization_required',
    );
  });

  it('no_pending_authorization 400: PUT authorize with a secret that is not a pending authorization', async () => {
    const u = await t().user();
    const e = await t().request('POST', '/api/v0/tfa/email/', { key: u.apiKey });
    expectError(
      await t().request('PUT', '/api/v0/tfa/authorize-new-method/', {
        key: u.apiKey,
        body: { code: await lastEmailCode(t(), u.email), secret: e.body.secret },
      }),
      400,
      'no_pending_authorization',
    );
  });

  it('invalid_backup_code 401: invalid or already used', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    expectError(
      await t().request('POST', '/api/v0/tfa/', { key: u.apiKey, body: { backup_code: 'AAAA-BBBB-CCCC' } }),
      401,
      'invalid_backup_code',
    );
    expect(
      (
        await t().request('POST', '/api/v0/tfa/', {
          key: u.apiKey,
          body: { backup_code: totp.backupCodes[0] },
        })
      ).status,
    ).toBe(200);
    expectError(
      await t().request('POST', '/api/v0/tfa/', {
        key: u.apiKey,
        body: { backup_code: totp.backupCodes[0] },
      }),
      401,
      'invalid_backup_code',
    );
  });

  it('untracked_2fa_found 400: a legacy account calling the deprecated test-submit', async () => {
    const u = await t().user({ legacyTfa: true, phone: phone() });
    const r = await t().request('POST', '/api/v0/tfa/test-submit/', {
      key: u.apiKey,
      body: { tfa_method: 'sms', code: '123456', secret: 'x', phone_number: '+14155550000' },
    });
    expectError(r, 400, 'untracked_2fa_found');
    expect(r.headers.deprecation).toBe('true');
  });

  it('duplicate_tfa_method 400: the method is already configured', async () => {
    const u = await t().user();
    const p = phone();
    await addSms(t(), u.apiKey, u.email, p);
    const s = await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: { phone_number: p } });
    expect(s.status).toBe(200);
    expectError(
      await t().request('POST', '/api/v0/tfa/confirm-new/', {
        key: u.apiKey,
        body: { tfa_method: 'sms', code: lastSmsCode(t(), p), secret: s.body.secret, phone_number: p },
      }),
      400,
      'duplicate_tfa_method',
    );
  });

  it('preauth_phone_cap 429: one number used in too many authorization attempts across accounts', async () => {
    const p = phone();
    for (let i = 0; i < 2; i++) {
      const u = await t().user();
      expect(
        (await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: { phone_number: p } })).status,
      ).toBe(200);
    }
    const third = await t().user();
    expectError(
      await t().request('POST', '/api/v0/tfa/sms/', { key: third.apiKey, body: { phone_number: p } }),
      429,
      'preauth_phone_cap',
    );
  });

  it('sms_rate_limited 429: too many SMS codes for one account (Retry-After given)', async () => {
    const u = await t().user();
    for (let i = 0; i < 3; i++)
      expect(
        (await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: { phone_number: phone() } }))
          .status,
      ).toBe(200);
    const r = await t().request('POST', '/api/v0/tfa/sms/', {
      key: u.apiKey,
      body: { phone_number: phone() },
    });
    expectError(r, 429, 'sms_rate_limited');
    expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('tfa_locked 429: the method is locked, with fail_count and locked_until', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const wrong = totpAt(totp.secret, t().clock.now() + 3600_000);
    for (let i = 0; i < t().config.tfa.maxFailures; i++)
      await t().request('POST', '/api/v0/tfa/', { key: u.apiKey, body: { tfa_method: 'totp', code: wrong } });
    const r = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', code: wrong },
    });
    expectError(r, 429, 'tfa_locked');
    expect(Number(r.headers['retry-after'])).toBe(t().config.tfa.lockoutS);
    expect(r.body.fail_count).toBe(t().config.tfa.maxFailures);
    expect(r.body.locked_until).toBeGreaterThan(t().clock.now() / 1000);
  });

  it("phone_number_mismatch 400: the number differs from the challenge's", async () => {
    const u = await t().user();
    await authorize(t(), u.apiKey, u.email);
    const p = phone();
    const s = await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: { phone_number: p } });
    expectError(
      await t().request('POST', '/api/v0/tfa/confirm-new/', {
        key: u.apiKey,
        body: { tfa_method: 'sms', code: lastSmsCode(t(), p), secret: s.body.secret, phone_number: phone() },
      }),
      400,
      'phone_number_mismatch',
    );
  });

  it('2fa_login_failed 400: a wrong code on login (fail_count, locked_until null)', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const r = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', code: totpAt(totp.secret, t().clock.now() + 3600_000) },
    });
    expectError(r, 400, '2fa_login_failed');
    expect(r.body).toMatchObject({ fail_count: 1, locked_until: null });
  });

  it('2fa_verification_failed 400: a wrong code on a verification step (fail_count, locked_until null)', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const r = await t().request('DELETE', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', code: totpAt(totp.secret, t().clock.now() + 3600_000) },
    });
    expectError(r, 400, '2fa_verification_failed');
    expect(r.body).toMatchObject({ fail_count: 1, locked_until: null });
    expect((await t().request('GET', '/api/v0/tfa/status/', { key: u.apiKey })).body.methods).toHaveLength(1);
  });

  it('team_user_forbidden 403: called from a team context', async () => {
    const u = await t().user({ team: `errors-team-${dialect}` });
    expectError(
      await t().request('GET', '/api/v0/tfa/status/', { key: u.teamApiKey! }),
      403,
      'team_user_forbidden',
    );
  });

  it('missing_email 400: e-mail required but missing on the account', async () => {
    const u = await t().user();
    await t().deps.db.updateTable('users').set({ email: '' }).where('id', '=', u.id).execute();
    expectError(await t().request('POST', '/api/v0/tfa/email/', { key: u.apiKey }), 400, 'missing_email');
  });

  it('missing_phone_number 400: no phone_number, no tfa_method_id, no number on the account', async () => {
    const u = await t().user();
    expectError(
      await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: {} }),
      400,
      'missing_phone_number',
    );
    await authorize(t(), u.apiKey, u.email);
    expectError(
      await t().request('POST', '/api/v0/tfa/confirm-new/', {
        key: u.apiKey,
        body: { tfa_method: 'sms', code: '123456', secret: 'x' },
      }),
      400,
      'missing_phone_number',
    );
  });

  it('not_found 404: tfa_method_id matches no method of this user', async () => {
    const u = await t().user();
    const other = await t().user();
    const theirs = await enableTotp(t(), other.apiKey, other.email);
    await enableTotp(t(), u.apiKey, u.email);
    expectError(
      await t().request('PUT', '/api/v0/tfa/update/', {
        key: u.apiKey,
        body: { tfa_method_id: theirs.id, label: 'x' },
      }),
      404,
      'not_found',
    );
    expectError(
      await t().request('POST', '/api/v0/tfa/', {
        key: u.apiKey,
        body: { tfa_method: 'totp', tfa_method_id: String(theirs.id), code: '123456' },
      }),
      404,
      'not_found',
    );
  });

  it('tfa_method_not_configured 400: the TOTP secret is missing or unreadable', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    await t()
      .deps.db.updateTable('tfa_methods')
      .set({ totp_secret_enc: 'v1.garbage.garbage.garbage' })
      .where('id', '=', totp.id)
      .execute();
    expectError(
      await t().request('POST', '/api/v0/tfa/', {
        key: u.apiKey,
        body: { tfa_method: 'totp', code: totpAt(totp.secret, t().clock.now()) },
      }),
      400,
      'tfa_method_not_configured',
    );
  });

  it('challenge_creation_failed 500: the challenge could not be created in authorize-new-method', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const db = t().deps.db;
    if (dialect === 'sqlite') {
      await sql
        .raw(
          `create trigger fail_authz before insert on tfa_challenges when new.user_id = ${u.id} begin select raise(abort, 'injected'); end`,
        )
        .execute(db);
    } else {
      await sql
        .raw(
          `create function fail_authz() returns trigger as $$ begin if new.user_id = ${u.id} then raise exception 'injected'; end if; return new; end $$ language plpgsql`,
        )
        .execute(db);
      await sql
        .raw(
          'create trigger fail_authz before insert on tfa_challenges for each row execute function fail_authz()',
        )
        .execute(db);
    }
    try {
      expectError(
        await t().request('POST', '/api/v0/tfa/authorize-new-method/', {
          key: u.apiKey,
          body: { tfa_method: 'totp', tfa_method_id: totp.id },
        }),
        500,
        'challenge_creation_failed',
      );
    } finally {
      await sql
        .raw(
          dialect === 'sqlite'
            ? 'drop trigger fail_authz'
            : 'drop trigger fail_authz on tfa_challenges; drop function fail_authz()',
        )
        .execute(db);
    }
  });

  it('sms_blocked_number 400: a number with a high-risk prefix is refused before sending', async () => {
    const u = await t().user();
    const before = await t()
      .deps.db.selectFrom('sms_sends')
      .selectAll()
      .where('user_id', '=', u.id)
      .execute();
    expectError(
      await t().request('POST', '/api/v0/tfa/sms/', {
        key: u.apiKey,
        body: { phone_number: '+8816123456789' },
      }),
      400,
      'sms_blocked_number',
    );
    expect(
      await t().deps.db.selectFrom('sms_sends').selectAll().where('user_id', '=', u.id).execute(),
    ).toEqual(before);
  });

  it('sms_fraud_detected 403: the account is flagged for SMS fraud', async () => {
    const u = await t().user({ phone: phone() });
    await setSmsFraud(t().deps, u.email, true);
    expectError(
      await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: {} }),
      403,
      'sms_fraud_detected',
    );
    await setSmsFraud(t().deps, u.email, false);
    expect((await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: {} })).status).toBe(200);
  });
});

describeEachDb('2FA error table: the SMS provider rows (twilio stand-in)', (dialect) => {
  let standin: TwilioStandin;
  beforeAll(async () => {
    standin = await startTwilioStandin();
  });
  afterAll(() => standin.close());
  const env: Record<string, string> = {
    OPENRIG_RATE_LIMITS: 'off',
    OPENRIG_SMS_PROVIDER: 'twilio',
    TWILIO_ACCOUNT_SID: 'AC1',
    TWILIO_AUTH_TOKEN: 'tok',
    TWILIO_VERIFY_SERVICE_SID: 'VA1',
  };
  // The stand-in's URL is known only after it starts: the app reads it from this object.
  const t = useTestApp(
    dialect,
    new Proxy(env, {
      get: (o, k: string) => (k === 'TWILIO_API_BASE' ? standin.url : o[k]),
      ownKeys: (o) => [...Reflect.ownKeys(o), 'TWILIO_API_BASE'],
      getOwnPropertyDescriptor: (o, k) =>
        k === 'TWILIO_API_BASE'
          ? { value: standin.url, enumerable: true, configurable: true }
          : Reflect.getOwnPropertyDescriptor(o, k),
    }),
  );

  async function smsUser(p: string) {
    const u = await t().user();
    await authorize(t(), u.apiKey, u.email);
    const s = await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: { phone_number: p } });
    expect(s.status).toBe(200);
    const add = await t().request('POST', '/api/v0/tfa/confirm-new/', {
      key: u.apiKey,
      body: { tfa_method: 'sms', code: standin.codes.get(p), secret: s.body.secret, phone_number: p },
    });
    expect(add.status).toBe(200);
    return u;
  }

  it('the twilio provider carries the whole SMS flow: add the method, log in with the code it sent', async () => {
    const p = '+14155550301';
    const u = await smsUser(p);
    const s = await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: {} });
    const login = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'sms', code: standin.codes.get(p), secret: s.body.secret },
    });
    expect(login.status).toBe(200);
    expect(login.body.session_key).toBeDefined();
  });

  it('twilio_error 400: the SMS could not be sent', async () => {
    const u = await t().user();
    standin.mode.send = 'fail';
    try {
      expectError(
        await t().request('POST', '/api/v0/tfa/sms/', {
          key: u.apiKey,
          body: { phone_number: '+14155550302' },
        }),
        400,
        'twilio_error',
      );
    } finally {
      standin.mode.send = 'ok';
    }
    // Nothing was left usable: a new send is not "tfa_challenge_exists".
    expect(
      (
        await t().request('POST', '/api/v0/tfa/sms/', {
          key: u.apiKey,
          body: { phone_number: '+14155550302' },
        })
      ).status,
    ).toBe(200);
  });

  it("twilio_rate_limited 429: the provider's verification API rate-limited the call", async () => {
    const u = await t().user();
    standin.mode.send = 'rate_limited';
    try {
      expectError(
        await t().request('POST', '/api/v0/tfa/sms/', {
          key: u.apiKey,
          body: { phone_number: '+14155550303' },
        }),
        429,
        'twilio_rate_limited',
      );
    } finally {
      standin.mode.send = 'ok';
    }
  });

  it('service_unavailable 503: the provider is unreachable while checking a code (a gate check)', async () => {
    const p = '+14155550304';
    const u = await smsUser(p);
    const s = await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: {} });
    standin.mode.check = 'down';
    try {
      expectError(
        await t().request('POST', '/api/v0/tfa/', {
          key: u.apiKey,
          body: { tfa_method: 'sms', code: standin.codes.get(p), secret: s.body.secret },
        }),
        503,
        'service_unavailable',
      );
    } finally {
      standin.mode.check = 'ok';
    }
  });
});
