// Races on 2FA codes, on both databases, with the requests spread over two
// app instances on one database (two `serve` processes) and, for backup codes, over several
// endpoints at once: the database decides, exactly one winner, every loser a clean 4xx, no 5xx.
// (The 2FA module's own races test covers the 20-way, single-process forms.)
import { afterAll, beforeAll, expect, it } from 'vitest';
import pino from 'pino';
import type { FastifyInstance } from 'fastify';
import { describeEachDb } from '../helpers/db.js';
import { makeTestApp, type TestApp, type Reply } from '../helpers/app.js';
import { openStore, type Store } from '../../src/server/db/connection.js';
import { makeDeps } from '../../src/server/deps.js';
import { loadConfig } from '../../src/server/config.js';
import { buildApp } from '../../src/server/app.js';
import { addSms, enableTotp, lastSmsCode } from '../../src/server/modules/two-factor/two-factor.testkit.js';
import { totpAt } from '../../src/server/modules/two-factor/two-factor.codes.js';

const ENV = {
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_TFA_MAX_FAILURES: '1000',
  OPENRIG_TFA_CHALLENGE_MAX_TRIES: '1000',
  OPENRIG_ACCOUNT_MAX_FAILURES: '1000',
};

describeEachDb('race: 2FA codes across two processes', (dialect) => {
  let t: TestApp;
  let store2: Store;
  let app2: FastifyInstance;

  beforeAll(async () => {
    t = await makeTestApp(dialect, ENV);
    // A second "process": its own connections to the same database, the same clock and config.
    store2 = openStore(t.db.url);
    const config = loadConfig(
      { OPENRIG_SECRET_KEY: 'ab'.repeat(32), OPENRIG_LOG_LEVEL: 'silent', ...ENV },
      { dataDir: t.db.dataDir, databaseUrl: t.db.url },
    );
    app2 = await buildApp(
      makeDeps({ store: store2, clock: t.clock, config, log: pino({ level: 'silent' }) }),
      { logger: false },
    );
    await app2.ready();
  });
  afterAll(async () => {
    await app2.close();
    await store2.destroy();
    await t.app.close();
    await t.db.cleanup();
  });

  /** The same request, sent to process 1 or 2. */
  async function send(
    which: number,
    method: string,
    url: string,
    key: string,
    body?: unknown,
  ): Promise<Reply> {
    if (which % 2 === 0) return t.request(method, url, { key, body });
    const res = await app2.inject({
      method: method as 'POST',
      url,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      payload: JSON.stringify(body ?? {}),
    });
    return {
      status: res.statusCode,
      body: JSON.parse(res.body || 'null'),
      headers: res.headers,
      raw: res.body,
    };
  }

  function expectOneWinner(rs: Reply[]): Reply {
    expect(rs.filter((r) => r.status >= 500)).toEqual([]);
    const won = rs.filter((r) => r.status === 200);
    expect(won).toHaveLength(1);
    for (const r of rs.filter((x) => x.status !== 200)) {
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      expect(typeof r.body.error).toBe('string');
      expect(typeof r.body.msg).toBe('string');
    }
    return won[0]!;
  }

  it('50 concurrent uses of one backup code over login, authorize and regenerate: exactly one', async () => {
    const u = await t.user();
    const totp = await enableTotp(t, u.apiKey, u.email);
    const code = totp.backupCodes[0]!;
    const calls: [string, string, unknown][] = [
      ['POST', '/api/v0/tfa/', { backup_code: code }],
      ['POST', '/api/v0/tfa/authorize-new-method/', { backup_code: code }],
      ['PUT', '/api/v0/tfa/regen-backup-codes/', { backup_code: code }],
    ];
    const rs = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        send(i, calls[i % 3]![0], calls[i % 3]![1], u.apiKey, calls[i % 3]![2]),
      ),
    );
    expectOneWinner(rs);
    // The code is spent everywhere afterwards.
    const again = await send(0, 'POST', '/api/v0/tfa/', u.apiKey, { backup_code: code });
    expect(again.status).toBe(401);
    expect(again.body.error).toBe('invalid_backup_code');
  });

  it('50 concurrent uses of one TOTP code from two processes: exactly one session', async () => {
    const u = await t.user();
    const totp = await enableTotp(t, u.apiKey, u.email);
    const code = totpAt(totp.secret, t.clock.now());
    const rs = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        send(i, 'POST', '/api/v0/tfa/', u.apiKey, { tfa_method: 'totp', code }),
      ),
    );
    const won = expectOneWinner(rs);
    expect(won.body.session_key).toMatch(/^ors_/);
    const sessions = await t.deps.db
      .selectFrom('sessions')
      .select('id')
      .where('user_id', '=', u.id)
      .execute();
    expect(sessions).toHaveLength(1);
  });

  it('50 concurrent uses of one SMS code from two processes: exactly one session', async () => {
    const u = await t.user();
    const phone = '+14155550177';
    const sms = await addSms(t, u.apiKey, u.email, phone);
    const s = await t.request('POST', '/api/v0/tfa/sms/', { key: u.apiKey, body: { tfa_method_id: sms.id } });
    expect(s.status).toBe(200);
    const code = lastSmsCode(t, phone);
    const rs = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        send(i, 'POST', '/api/v0/tfa/', u.apiKey, { tfa_method: 'sms', code, secret: s.body.secret }),
      ),
    );
    expectOneWinner(rs);
    const sessions = await t.deps.db
      .selectFrom('sessions')
      .select('id')
      .where('user_id', '=', u.id)
      .execute();
    expect(sessions).toHaveLength(1);
  });

  it('50 concurrent wrong codes from two processes count 50 failures: no increment is lost', async () => {
    const u = await t.user();
    const totp = await enableTotp(t, u.apiKey, u.email);
    const wrong = totpAt(totp.secret, t.clock.now() + 3_600_000);
    const rs = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        send(i, 'POST', '/api/v0/tfa/', u.apiKey, { tfa_method: 'totp', code: wrong }),
      ),
    );
    expect(rs.filter((r) => r.status >= 500)).toEqual([]);
    expect(rs.every((r) => r.status === 400 && typeof r.body.error === 'string')).toBe(true);
    const m = await t.deps.db
      .selectFrom('tfa_methods')
      .select('fail_count')
      .where('id', '=', totp.id)
      .executeTakeFirstOrThrow();
    expect(m.fail_count).toBe(50);
    // The account's own counter (every method, every channel) lost none either.
    const a = await t.deps.db
      .selectFrom('account_lockouts')
      .select('failures')
      .where('subject', '=', u.email)
      .executeTakeFirstOrThrow();
    expect(a.failures).toBe(50);
  });
});
