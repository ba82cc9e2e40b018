// Per-account failure counting across every channel (passwords, TOTP, e-mail codes, backup
// codes), independent of the caller's address, with a growing lock and one e-mail to the owner;
// and a replayed TOTP code, which is refused without counting, so that 20 concurrent logins with
// one valid code end in the same state on both databases.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type Reply, type TestApp } from '../../../../test/helpers/app.js';
import { totpAt } from './two-factor.codes.js';
import { enableTotp, lastEmailCode } from './two-factor.testkit.js';
import { recordSignInFailure } from '../accounts/accounts.lockout.js';
import { checkPassword } from '../accounts/accounts.service.js';
import { AppError } from '../../errors.js';
import { openStore, type Store } from '../../db/connection.js';
import { findUserByEmail } from '../accounts/accounts.repo.js';
import { verifyFactor } from './two-factor.verify.js';
import { TfaErrors } from './two-factor.errors.js';

const ENV = { OPENRIG_RATE_LIMITS: 'off', OPENRIG_TRUST_PROXY: '127.0.0.1' };

function tally(rs: Reply[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of rs) {
    const k = r.status === 200 ? 'ok' : String(r.body.error);
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

async function lockEmails(t: TestApp, to: string): Promise<number> {
  const rows = await t.deps.db
    .selectFrom('email_outbox')
    .select('id')
    .where('to_addr', '=', to)
    .where('category', '=', 'account.locked')
    .execute();
  return rows.length;
}

async function methodRow(t: TestApp, id: number) {
  return t.deps.db
    .selectFrom('tfa_methods')
    .select(['fail_count', 'locked_until'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
}

/** A wrong e-mail code on a fresh challenge, from a different client address each time. */
async function wrongEmailCode(t: TestApp, key: string, email: string, i: number): Promise<Reply> {
  const headers = { 'x-forwarded-for': `203.0.113.${i + 1}` };
  const e = await t.request('POST', '/api/v0/tfa/email/', { key, headers });
  expect(e.status, JSON.stringify(e.body)).toBe(200);
  const right = await lastEmailCode(t, email);
  const wrong = right === '000000' ? '111111' : '000000';
  return t.request('POST', '/api/v0/tfa/', {
    key,
    headers,
    body: { tfa_method: 'email', code: wrong, secret: e.body.secret },
  });
}

describeEachDb('replayed TOTP codes', (dialect) => {
  const t = useTestApp(dialect, ENV);

  it('20 concurrent logins with one valid code: one session, 19 refusals that count nothing, no lock, no e-mail', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const code = totpAt(totp.secret, t().clock.now());
    const rs = await Promise.all(
      Array.from({ length: 20 }, () =>
        t().request('POST', '/api/v0/tfa/', { key: u.apiKey, body: { tfa_method: 'totp', code } }),
      ),
    );
    expect(tally(rs)).toEqual({ ok: 1, '2fa_login_failed': 19 });
    for (const r of rs.filter((x) => x.status !== 200)) {
      // A replay says it was used and when the next code comes (within one 30 s period).
      const m = /already used; the next code of your authenticator app comes in (\d+) s/.exec(r.body.msg);
      expect(m).not.toBeNull();
      expect(Number(m![1])).toBeGreaterThanOrEqual(1);
      expect(Number(m![1])).toBeLessThanOrEqual(60);
    }
    expect(await methodRow(t(), totp.id)).toEqual({ fail_count: 0, locked_until: null });
    const sessions = await t()
      .deps.db.selectFrom('sessions')
      .select('id')
      .where('user_id', '=', u.id)
      .execute();
    expect(sessions).toHaveLength(1);
    const lockMails = await t()
      .deps.db.selectFrom('email_outbox')
      .select('id')
      .where('to_addr', '=', u.email)
      .where('category', 'in', ['tfa.method_locked', 'account.locked'])
      .execute();
    expect(lockMails).toEqual([]);
    const account = await t()
      .deps.db.selectFrom('account_lockouts')
      .selectAll()
      .where('subject', '=', u.email)
      .executeTakeFirst();
    expect(account?.failures ?? 0).toBe(0);
    // The method still works with the next step's code.
    t().clock.advance(30_000);
    const next = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', code: totpAt(totp.secret, t().clock.now()) },
    });
    expect(next.status).toBe(200);
  });

  it('a code replayed later is refused and never locks the method', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const code = totpAt(totp.secret, t().clock.now());
    const body = { tfa_method: 'totp', code };
    expect((await t().request('POST', '/api/v0/tfa/', { key: u.apiKey, body })).status).toBe(200);
    for (let i = 0; i < 8; i++) {
      const r = await t().request('POST', '/api/v0/tfa/', { key: u.apiKey, body });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('2fa_login_failed');
    }
    expect(await methodRow(t(), totp.id)).toEqual({ fail_count: 0, locked_until: null });
  });
});

describeEachDb('per-account lockout across channels', (dialect) => {
  const t = useTestApp(dialect, ENV);

  it('wrong e-mail codes on fresh challenges from many addresses lock the account at 10, with one e-mail', async () => {
    const u = await t().user();
    await enableTotp(t(), u.apiKey, u.email);
    for (let i = 0; i < 10; i++) {
      const r = await wrongEmailCode(t(), u.apiKey, u.email, i);
      expect(r.status).toBe(400);
    }
    // Now even a right code on a fresh challenge is refused, before it is evaluated.
    const e = await t().request('POST', '/api/v0/tfa/email/', { key: u.apiKey });
    const right = await lastEmailCode(t(), u.email);
    const r = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'email', code: right, secret: e.body.secret },
    });
    expect(r.status).toBe(429);
    expect(r.body.error).toBe('account_locked');
    expect(r.headers['retry-after']).toBe('900');
    expect(await lockEmails(t(), u.email)).toBe(1);
  });

  it('e-mail codes do not get around a TOTP lockout: the account locks after 5 more', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const wrong = totpAt(totp.secret, t().clock.now() + 3_600_000);
    for (let i = 0; i < 5; i++)
      await t().request('POST', '/api/v0/tfa/', { key: u.apiKey, body: { tfa_method: 'totp', code: wrong } });
    const locked = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', code: wrong },
    });
    // The per-method lockout keeps its code and fields.
    expect(locked.status).toBe(429);
    expect(locked.body).toMatchObject({ error: 'tfa_locked', fail_count: 5 });
    for (let i = 0; i < 5; i++) expect((await wrongEmailCode(t(), u.apiKey, u.email, i)).status).toBe(400);
    const after = await wrongEmailCode(t(), u.apiKey, u.email, 99);
    expect(after.status).toBe(429);
    expect(after.body.error).toBe('account_locked');
    const backup = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { backup_code: totp.backupCodes[0] },
    });
    expect(backup.status).toBe(429);
    expect(backup.body.error).toBe('account_locked');
  });

  it('wrong passwords lock sign-in; while locked a right password gets the very same reply as a wrong one', async () => {
    const u = await t().user({ password: 'the right password' });
    const login = (password: string, i = 0) =>
      t().request('POST', '/api/v0/users/login/', {
        body: { email: u.email, password },
        headers: { 'x-forwarded-for': `198.51.100.${i + 1}` },
      });
    for (let i = 0; i < 10; i++) expect((await login(`wrong ${i}`, i)).status).toBe(401);
    const right = await login('the right password');
    const wrong = await login('still wrong');
    expect(right.status).toBe(429);
    expect(right.body).toEqual(wrong.body);
    expect(right.headers['set-cookie']).toBeUndefined();
    expect(right.body.error).toBe('account_locked');
    // An e-mail with no account locks the same way: the lock does not reveal which e-mails exist.
    const ghost = `ghost-${Date.now()}@example.com`;
    for (let i = 0; i < 10; i++)
      await t().request('POST', '/api/v0/users/login/', { body: { email: ghost, password: 'x' } });
    const g = await t().request('POST', '/api/v0/users/login/', { body: { email: ghost, password: 'x' } });
    expect(g.status).toBe(429);
    expect(g.body.msg).toBe(right.body.msg);
    expect(await lockEmails(t(), u.email)).toBe(1);

    // The lock ends after 15 minutes; the next one lasts twice as long.
    t().clock.advance(900_000 + 1);
    for (let i = 0; i < 10; i++) expect((await login(`wrong again ${i}`)).status).toBe(401);
    const second = await login('the right password');
    expect(second.status).toBe(429);
    expect(second.headers['retry-after']).toBe('1800');
    expect(await lockEmails(t(), u.email)).toBe(2);
    // A completed sign-in clears the count and the growth.
    t().clock.advance(1_800_000 + 1);
    expect((await login('the right password')).status).toBe(200);
    const row = await t()
      .deps.db.selectFrom('account_lockouts')
      .selectAll()
      .where('subject', '=', u.email)
      .executeTakeFirst();
    expect(row).toBeUndefined();
  });

  it('a right password does not clear the count of failed second factors', async () => {
    const u = await t().user({ password: 'pw with tfa on' });
    await enableTotp(t(), u.apiKey, u.email);
    for (let round = 0; round < 2; round++) {
      const pw = await t().request('POST', '/api/v0/users/login/', {
        body: { email: u.email, password: 'pw with tfa on' },
      });
      expect(pw.body.tfa_required).toBe(true);
      for (let i = 0; i < 5; i++) {
        const e = await t().request('POST', '/api/v0/tfa/email/', { body: { secret: pw.body.tfa_secret } });
        expect(e.status).toBe(200);
        const code = await lastEmailCode(t(), u.email);
        await t().request('POST', '/api/v0/tfa/', {
          body: { tfa_method: 'email', code: code === '000000' ? '111111' : '000000', secret: e.body.secret },
        });
      }
    }
    const pw = await t().request('POST', '/api/v0/users/login/', {
      body: { email: u.email, password: 'pw with tfa on' },
    });
    expect(pw.status).toBe(429);
    expect(pw.body.error).toBe('account_locked');
  });

  it('30 concurrent wrong passwords: one lock, one e-mail, on both databases alike', async () => {
    const u = await t().user({ password: 'concurrent right pw' });
    const rs = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        t().request('POST', '/api/v0/users/login/', { body: { email: u.email, password: `nope ${i}` } }),
      ),
    );
    expect(rs.filter((r) => r.status >= 500)).toEqual([]);
    // Exactly the limit's worth learn that they were wrong; the rest, checked meanwhile or not,
    // get the lock's answer.
    expect(tally(rs)).toEqual({ auth_error: 10, account_locked: 20 });
    expect(await lockEmails(t(), u.email)).toBe(1);
    const row = await t()
      .deps.db.selectFrom('account_lockouts')
      .select(['lock_level', 'locked_until'])
      .where('subject', '=', u.email)
      .executeTakeFirstOrThrow();
    expect(row.lock_level).toBe(1);
    expect(row.locked_until).toBe(t().clock.now() + 900_000);
  });

  it('a right password checked after concurrent failures filled the count gets the lock, not a session', async () => {
    const u = await t().user({ password: 'right but late' });
    // The count as 10 concurrent wrong guesses leave it when the right one's check ends: full,
    // its lock not yet set.
    await t()
      .deps.db.insertInto('account_lockouts')
      .values({
        subject: u.email,
        failures: 10,
        window_started_at: t().clock.now(),
        lock_level: 0,
        updated_at: 0,
      })
      .execute();
    const right = await t().request('POST', '/api/v0/users/login/', {
      body: { email: u.email, password: 'right but late' },
    });
    expect(right.status).toBe(429);
    expect(right.body.error).toBe('account_locked');
    expect(right.headers['set-cookie']).toBeUndefined();
    expect(await lockEmails(t(), u.email)).toBe(1);
  });

  /**
   * The store's Kysely with one hook: right after the first read returning a row with `column`
   * (the row a check is about to judge), `overtake` runs on a connection of its own, as concurrent
   * requests would. Returns the db and whether the hook ran.
   */
  function overtakenAfterReading(column: string, overtake: (other: Store) => Promise<void>) {
    const deps = t().deps;
    const other = openStore(t().db.url);
    const state = { overtaken: false };
    const db = deps.db.withPlugin({
      transformQuery: (a) => a.node,
      async transformResult(a) {
        if (!state.overtaken && a.result.rows.some((r) => column in r)) {
          state.overtaken = true;
          await overtake(other);
        }
        return a.result;
      },
    });
    return { deps: { ...deps, db }, state, done: () => other.destroy() };
  }

  it('a right password whose check ends after concurrent wrong ones locked the account gets the lock, not the user', async () => {
    const u = await t().user({ password: 'right and racing' });
    // While the right password is being checked, ten concurrent wrong guesses lock the account.
    const race = overtakenAfterReading('password_hash', async (other) => {
      const od = { ...t().deps, store: other, db: other.db };
      for (let i = 0; i < 10; i++) await recordSignInFailure(od, u.email);
    });
    const err = await checkPassword(race.deps, u.email, 'right and racing')
      .catch((e: unknown) => e)
      .finally(race.done);
    expect(race.state.overtaken).toBe(true);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('account_locked');
    expect(await lockEmails(t(), u.email)).toBe(1);
  });

  it('a right TOTP code whose check ends after concurrent wrong ones locked the method gets the lock', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    // Right after the method's row is read, concurrent wrong codes lock the method.
    const race = overtakenAfterReading('totp_secret_enc', async (other) => {
      await other.db
        .updateTable('tfa_methods')
        .set({ fail_count: 5, locked_until: t().clock.now() + 900_000 })
        .where('id', '=', totp.id)
        .execute();
    });
    const user = await findUserByEmail(t().deps.db, u.email);
    const code = totpAt(totp.secret, t().clock.now());
    const ctx = {
      action: 'login',
      purposes: ['verify' as const, 'login' as const],
      fail: TfaErrors.loginFailed,
      ip: null,
    };
    const err = await verifyFactor(race.deps, user!, { tfa_method: 'totp', code }, ctx)
      .catch((e: unknown) => e)
      .finally(race.done);
    expect(race.state.overtaken).toBe(true);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('tfa_locked');
  });

  it('30 concurrent wrong backup codes: exactly 10 told they were wrong, one lock', async () => {
    const u = await t().user();
    await enableTotp(t(), u.apiKey, u.email);
    const rs = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        t().request('POST', '/api/v0/tfa/', {
          key: u.apiKey,
          body: { backup_code: `zzzz-zzzz-${String(i).padStart(4, '0')}` },
        }),
      ),
    );
    expect(rs.filter((r) => r.status >= 500)).toEqual([]);
    expect(tally(rs)).toEqual({ invalid_backup_code: 10, account_locked: 20 });
    expect(await lockEmails(t(), u.email)).toBe(1);
  });
});
