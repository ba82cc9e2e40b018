// Verify-then-act is all or nothing: a verification's consuming writes (backup code
// used_at, challenge consumed_at, TOTP last step, fail-count reset) commit in the action's
// transaction, so an action that fails leaves the code usable, and a concurrent double use of
// one code acts once.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { findUserById } from '../accounts/accounts.repo.js';
import { enableTotp, lastEmailCode, lastSmsCode } from './two-factor.testkit.js';
import { totpAt } from './two-factor.codes.js';
import { countUnusedBackupCodes, grantAuthorization } from './two-factor.repo.js';
import { actOnVerified, verifyFactor, type FactorInput } from './two-factor.verify.js';
import { TfaErrors } from './two-factor.errors.js';

describeEachDb('2FA verify-then-act atomicity', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off' });
  const ctx = {
    action: 'test',
    purposes: ['verify' as const, 'login' as const],
    fail: TfaErrors.verificationFailed,
    ip: null,
  };

  /** Verifies `input`, then runs an action that writes and fails: nothing of either may remain. */
  async function failingAction(userId: number, input: FactorInput) {
    const deps = t().deps;
    const user = (await findUserById(deps.db, userId))!;
    const authRows = () =>
      deps.db.selectFrom('tfa_authorizations').selectAll().where('user_id', '=', userId).execute();
    const authBefore = await authRows();
    const v = await verifyFactor(deps, user, input, ctx);
    const boom = new Error('action failed');
    await expect(
      actOnVerified(deps, v, async (db) => {
        await grantAuthorization(db, user.id, deps.clock.now() + 7_000, deps.clock.now() - 7_000);
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await authRows()).toEqual(authBefore);
  }

  it('backup code: an action that fails leaves the code unused; it then works', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    await failingAction(u.id, { backup_code: totp.backupCodes[0] });
    expect(await countUnusedBackupCodes(t().deps.db, u.id)).toBe(10);
    const r = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { backup_code: totp.backupCodes[0] },
    });
    expect(r.status).toBe(200);
    expect(r.body.backup_codes_remaining).toBe(9);
  });

  it('TOTP: an action that fails stores no step and counts nothing (a right code claims no attempt); the same code then works', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const before = await t()
      .deps.db.selectFrom('tfa_methods')
      .select(['last_totp_step', 'fail_count'])
      .where('id', '=', totp.id)
      .executeTakeFirstOrThrow();
    const code = totpAt(totp.secret, t().clock.now());
    await failingAction(u.id, { tfa_method: 'totp', code });
    const after = await t()
      .deps.db.selectFrom('tfa_methods')
      .select(['last_totp_step', 'fail_count'])
      .where('id', '=', totp.id)
      .executeTakeFirstOrThrow();
    expect(after).toEqual({ last_totp_step: before.last_totp_step, fail_count: before.fail_count });
    const r = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', code },
    });
    expect(r.status).toBe(200);
    const done = await t()
      .deps.db.selectFrom('tfa_methods')
      .select(['fail_count'])
      .where('id', '=', totp.id)
      .executeTakeFirstOrThrow();
    expect(done.fail_count).toBe(0);
  });

  it('e-mail code: an action that fails leaves the challenge unconsumed; it then works', async () => {
    const u = await t().user();
    await enableTotp(t(), u.apiKey, u.email);
    const e = await t().request('POST', '/api/v0/tfa/email/', { key: u.apiKey });
    const code = await lastEmailCode(t(), u.email);
    await failingAction(u.id, { tfa_method: 'email', code, secret: e.body.secret });
    const r = await t().request('POST', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { tfa_method: 'email', code, secret: e.body.secret },
    });
    expect(r.status).toBe(200);
  });

  it('10 concurrent regenerations with one backup code: one new set, one notice, 10 live codes', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const rs = await Promise.all(
      Array.from({ length: 10 }, () =>
        t().request('PUT', '/api/v0/tfa/regen-backup-codes/', {
          key: u.apiKey,
          body: { backup_code: totp.backupCodes[2] },
        }),
      ),
    );
    expect(rs.filter((r) => r.status === 200)).toHaveLength(1);
    expect(rs.filter((r) => r.status !== 200).every((r) => r.body.error === 'invalid_backup_code')).toBe(
      true,
    );
    const codes = await t()
      .deps.db.selectFrom('tfa_backup_codes')
      .select(['used_at', 'deleted_at'])
      .where('user_id', '=', u.id)
      .execute();
    expect(codes).toHaveLength(20);
    expect(codes.filter((c) => c.used_at === null && c.deleted_at === null)).toHaveLength(10);
    const notices = await t()
      .deps.db.selectFrom('email_outbox')
      .select('id')
      .where('to_addr', '=', u.email)
      .where('category', '=', 'tfa.backup_regenerated')
      .execute();
    expect(notices).toHaveLength(1);
  });

  it('DELETE with a backup code whose target is gone: nothing removed, the code stays unused', async () => {
    const u = await t().user();
    const totp = await enableTotp(t(), u.apiKey, u.email);
    const r = await t().request('DELETE', '/api/v0/tfa/', {
      key: u.apiKey,
      body: { backup_code: totp.backupCodes[4], target_id: totp.id + 100000 },
    });
    expect(r.status).toBe(404);
    expect(await countUnusedBackupCodes(t().deps.db, u.id)).toBe(10);
  });

  it('legacy account: regen with a wrong code adopts no method and changes nothing; the right code adopts and regenerates', async () => {
    const p = '+1415555' + String(1000 + Math.floor(Math.random() * 9000));
    const u = await t().user({ legacyTfa: true, phone: p });
    const s = await t().request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: {} });
    const right = lastSmsCode(t(), p);
    const wrong = right === '000000' ? '111111' : '000000';
    const bad = await t().request('PUT', '/api/v0/tfa/regen-backup-codes/', {
      key: u.apiKey,
      body: { tfa_method: 'sms', code: wrong, secret: s.body.secret },
    });
    expect(bad.body.error).toBe('2fa_verification_failed');
    const rows = () =>
      t().deps.db.selectFrom('tfa_methods').select('id').where('user_id', '=', u.id).execute();
    expect(await rows()).toEqual([]);
    expect((await findUserById(t().deps.db, u.id))!.tfa_status).toBe('legacy');
    const ok = await t().request('PUT', '/api/v0/tfa/regen-backup-codes/', {
      key: u.apiKey,
      body: { tfa_method: 'sms', code: right, secret: s.body.secret },
    });
    expect(ok.status).toBe(200);
    expect(await rows()).toHaveLength(1);
    expect((await findUserById(t().deps.db, u.id))!.tfa_status).toBe('enabled');
  });
});
