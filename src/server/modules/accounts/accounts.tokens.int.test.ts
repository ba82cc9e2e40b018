// Account basics against a real database: sign-up with e-mail verification (only when the
// operator switched it on), password reset by a single-use e-mailed link, password change. The
// links' tokens are read from the e-mail outbox, as their owner reads them.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';

const PW = 'correct horse battery';

async function mails(t: TestApp, to: string) {
  return t.deps.db.selectFrom('email_outbox').selectAll().where('to_addr', '=', to).orderBy('id').execute();
}
async function tokenIn(t: TestApp, to: string, page: string): Promise<string> {
  const all = await mails(t, to);
  const m = new RegExp(`/${page}\\?token=([A-Za-z0-9_-]+)`).exec(all[all.length - 1]!.text_body);
  return m![1]!;
}
const login = (t: TestApp, email: string, password: string) =>
  t.request('POST', '/api/v0/users/login/', { body: { email, password } });

describeEachDb('sign-up off (the default)', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off' });

  it('refuses with a 403 that says who makes accounts, and sends nothing', async () => {
    const r = await t().request('POST', '/api/v0/users/signup/', {
      body: { email: 'new@example.com', password: PW },
    });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ error: 'signup_disabled' });
    expect(await mails(t(), 'new@example.com')).toHaveLength(0);
  });

  it("tells a renter how to get credit here, in the operator's words", async () => {
    const u = await t().user();
    const r = await t().request('GET', '/api/v0/users/current', { key: u.apiKey });
    expect(r.body.credit_help).toBe('Ask the operator of this installation to add credit to your account.');
  });
});

describeEachDb('sign-up, reset and change', (dialect) => {
  const t = useTestApp(dialect, {
    OPENRIG_SIGNUP: 'on',
    OPENRIG_RATE_LIMITS: 'off',
    OPENRIG_PUBLIC_URL: 'https://rig.example.com/',
    OPENRIG_CREDIT_HELP: 'Pay by bank transfer: see https://rig.example.com/pay',
  });

  it('signs up: no account until the link is followed, then one with its e-mail verified; the link works once', async () => {
    const email = 'Signup-1@Example.com';
    const r = await t().request('POST', '/api/v0/users/signup/', { body: { email, password: PW } });
    expect(r.status).toBe(200);
    expect((await login(t(), 'signup-1@example.com', PW)).status).toBe(401);
    const sent = await mails(t(), 'signup-1@example.com');
    expect(sent[0]!.text_body).toContain('https://rig.example.com/verify-email?token=');
    const token = await tokenIn(t(), 'signup-1@example.com', 'verify-email');
    // Two concurrent follows of the link: one account, one winner.
    const both = await Promise.all([
      t().request('POST', '/api/v0/users/signup/verify/', { body: { token } }),
      t().request('POST', '/api/v0/users/signup/verify/', { body: { token } }),
    ]);
    expect(both.map((x) => x.status).sort()).toEqual([200, 400]);
    const signedIn = await login(t(), 'signup-1@example.com', PW);
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.email_verified).toBe(true);
    const again = await t().request('POST', '/api/v0/users/signup/verify/', { body: { token } });
    expect(again).toMatchObject({ status: 400, body: { error: 'invalid_token' } });
    // The operator's credit text reaches the new renter.
    const cookie = String(signedIn.headers['set-cookie']).split(';')[0]!;
    const me = await t().request('GET', '/api/v0/users/current', { headers: { cookie } });
    expect(me.body.credit_help).toBe('Pay by bank transfer: see https://rig.example.com/pay');
  });

  it('a sign-up for a taken e-mail answers the same words and tells only the address', async () => {
    const u = await t().user();
    const fresh = await t().request('POST', '/api/v0/users/signup/', {
      body: { email: 'nobody-yet@example.com', password: PW },
    });
    const taken = await t().request('POST', '/api/v0/users/signup/', {
      body: { email: u.email, password: PW },
    });
    expect(taken.status).toBe(200);
    expect(taken.body).toEqual(fresh.body);
    const note = await mails(t(), u.email);
    expect(note).toHaveLength(1);
    expect(note[0]!.subject).toBe('You already have an openrig account');
    expect(note[0]!.text_body).not.toMatch(/token=/);
  });

  it('refuses a short password and a bad e-mail with a 400, sending nothing', async () => {
    const short = await t().request('POST', '/api/v0/users/signup/', {
      body: { email: 'short@example.com', password: 'abc' },
    });
    expect(short).toMatchObject({ status: 400, body: { error: 'bad_request' } });
    const bad = await t().request('POST', '/api/v0/users/signup/', {
      body: { email: 'no-at', password: PW },
    });
    expect(bad.status).toBe(400);
    expect(await mails(t(), 'short@example.com')).toHaveLength(0);
  });

  it('resets a password by a single-use link; never says whether the e-mail exists', async () => {
    const u = await t().user({ password: 'old password 1' });
    const known = await t().request('POST', '/api/v0/users/password-reset/', { body: { email: u.email } });
    const unknown = await t().request('POST', '/api/v0/users/password-reset/', {
      body: { email: 'ghost@example.com' },
    });
    expect(known.status).toBe(200);
    expect(unknown.status).toBe(200);
    expect(unknown.body).toEqual(known.body);
    expect(await mails(t(), 'ghost@example.com')).toHaveLength(0);
    const token = await tokenIn(t(), u.email, 'reset-password');
    // The database stores no token: only the verifier's hash, under its selector.
    const rows = await t()
      .deps.db.selectFrom('account_tokens')
      .selectAll()
      .where('email', '=', u.email)
      .execute();
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(token.slice(16));
    // A wrong verifier with the right selector is refused, and uses nothing up.
    const forged = token.slice(0, 16) + 'A'.repeat(32);
    const f = await t().request('POST', '/api/v0/users/password-reset/confirm/', {
      body: { token: forged, password: 'new password 2' },
    });
    expect(f).toMatchObject({ status: 400, body: { error: 'invalid_token' } });
    const session = await login(t(), u.email, 'old password 1');
    const cookie = String(session.headers['set-cookie']).split(';')[0]!;
    const both = await Promise.all(
      ['new password 2', 'new password 3'].map((password) =>
        t().request('POST', '/api/v0/users/password-reset/confirm/', { body: { token, password } }),
      ),
    );
    expect(both.map((x) => x.status).sort()).toEqual([200, 400]);
    const winner = both[0]!.status === 200 ? 'new password 2' : 'new password 3';
    expect((await login(t(), u.email, winner)).status).toBe(200);
    expect((await login(t(), u.email, 'old password 1')).status).toBe(401);
    // The reset ended the sessions signed in before it.
    expect((await t().request('GET', '/api/v0/users/current', { headers: { cookie } })).status).toBe(401);
    expect((await mails(t(), u.email)).map((m) => m.subject)).toContain('Your openrig password was changed');
  });

  it('an expired link and an older link after a newer one are refused', async () => {
    const u = await t().user({ password: 'old password 1' });
    await t().request('POST', '/api/v0/users/password-reset/', { body: { email: u.email } });
    const older = await tokenIn(t(), u.email, 'reset-password');
    await t().request('POST', '/api/v0/users/password-reset/', { body: { email: u.email } });
    const newer = await tokenIn(t(), u.email, 'reset-password');
    const o = await t().request('POST', '/api/v0/users/password-reset/confirm/', {
      body: { token: older, password: 'new password 2' },
    });
    expect(o.status).toBe(400);
    t().clock.advance(3601_000);
    const n = await t().request('POST', '/api/v0/users/password-reset/confirm/', {
      body: { token: newer, password: 'new password 2' },
    });
    expect(n).toMatchObject({ status: 400, body: { error: 'invalid_token' } });
    expect((await login(t(), u.email, 'old password 1')).status).toBe(200);
  });

  it('changes the password with the current one; a wrong current one changes nothing', async () => {
    const u = await t().user({ password: 'old password 1' });
    const wrong = await t().request('PUT', '/api/v0/users/password/', {
      key: u.apiKey,
      body: { current_password: 'not it', new_password: 'new password 2' },
    });
    expect(wrong).toMatchObject({ status: 400, body: { error: 'wrong_password' } });
    expect((await login(t(), u.email, 'old password 1')).status).toBe(200);
    const ok = await t().request('PUT', '/api/v0/users/password/', {
      key: u.apiKey,
      body: { current_password: 'old password 1', new_password: 'new password 2' },
    });
    expect(ok.status).toBe(200);
    expect((await login(t(), u.email, 'new password 2')).status).toBe(200);
    expect((await login(t(), u.email, 'old password 1')).status).toBe(401);
  });
});

describeEachDb('reset requests are rate limited per client address', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMIT_CODE_SENDS: '2/600' });

  it('the third request in the window is a 429, and sends nothing more', async () => {
    const u = await t().user();
    const codes = [];
    for (let i = 0; i < 3; i++)
      codes.push(
        (await t().request('POST', '/api/v0/users/password-reset/', { body: { email: u.email } })).status,
      );
    expect(codes).toEqual([200, 200, 429]);
    expect(await mails(t(), u.email)).toHaveLength(2);
  });
});
