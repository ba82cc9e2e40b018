// Audit retention: rows older than OPENRIG_AUDIT_RETENTION_DAYS and addresses not seen for that
// long are deleted by the hourly job, whose turn one process of all those sharing the database
// wins; bad settings stop the start.
import { describe, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp } from '../../../../test/helpers/app.js';
import { loadConfig } from '../../config.js';
import { claimTurn } from '../../jobs/turns.js';
import { auditRetentionPass, AUDIT_RETENTION_PERIOD_MS } from '../../jobs/audit-retention.js';
import { settleAudit } from './audit.testkit.js';

const DAY = 86_400_000;

describeEachDb('audit retention', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off', OPENRIG_AUDIT_RETENTION_DAYS: '30' });

  it('deletes rows and addresses past the configured days and keeps the rest, on the turn it wins', async () => {
    expect(t().config.audit.retentionDays).toBe(30);
    const u = await t().user();
    const req = (ip: string) =>
      t().app.inject({
        method: 'POST',
        url: '/api/v0/users/logout/',
        remoteAddress: ip,
        headers: { authorization: `Bearer ${u.apiKey}`, 'content-type': 'application/json' },
        payload: '{}',
      });
    await req('192.0.2.1'); // day 0: old by day 31
    await settleAudit(t());
    t().clock.advance(2 * DAY);
    await req('192.0.2.2'); // day 2: kept at day 31
    await settleAudit(t());
    t().clock.advance(29 * DAY + 1);
    const r = await auditRetentionPass(t().deps);
    expect(r).toEqual({ auditRows: 1, addresses: 1 });
    const rows = await t().request('GET', '/api/v0/audit_logs/', { key: u.apiKey });
    expect(rows.body.map((x: { ip_address: string }) => x.ip_address)).toEqual(['192.0.2.2']);
    const ips = await t().request('GET', '/api/v0/users/me/ipaddrs', { key: u.apiKey });
    expect(ips.body.results.map((x: { ip: string }) => x.ip)).toEqual(['192.0.2.2']);

    // The turn is taken for the hour: a second pass (this or another process) does nothing.
    expect(await auditRetentionPass(t().deps)).toBeNull();
    t().clock.advance(AUDIT_RETENTION_PERIOD_MS);
    expect(await auditRetentionPass(t().deps)).toEqual({ auditRows: 0, addresses: 0 });
  });

  it('deletes in chunks however much is due', async () => {
    const u = await t().user();
    const old = t().clock.now() - 40 * DAY;
    const rows = Array.from({ length: 12_345 }, (_, i) => ({
      user_id: u.id,
      created_at: old + i,
      ip: '192.0.2.9',
      api_key_id: null,
      credential: 'api_key' as const,
      method: 'POST',
      route: '/api/v0/x/',
      status: 200,
      args: '{}',
    }));
    for (let i = 0; i < rows.length; i += 1000)
      await t()
        .deps.db.insertInto('audit_logs')
        .values(rows.slice(i, i + 1000))
        .execute();
    t().clock.advance(2 * AUDIT_RETENTION_PERIOD_MS);
    const r = await auditRetentionPass(t().deps);
    expect(r?.auditRows).toBe(12_345);
    const left = await t()
      .deps.db.selectFrom('audit_logs')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('user_id', '=', u.id)
      .executeTakeFirstOrThrow();
    expect(Number(left.n)).toBe(0);
  });

  it('of processes claiming a turn at once, exactly one wins', async () => {
    const now = t().clock.now();
    for (const round of [0, 1, 2]) {
      const at = now + round * 60_000;
      const claims = await Promise.all(
        Array.from({ length: 16 }, () => claimTurn(t().deps.db, 'test-turn', at, 60_000)),
      );
      expect(claims.filter(Boolean), `round ${round}`).toHaveLength(1);
    }
    // Not yet due: nobody wins.
    expect(await claimTurn(t().deps.db, 'test-turn', now + 2 * 60_000 + 59_999, 60_000)).toBe(false);
  });
});

describe('OPENRIG_AUDIT_RETENTION_DAYS', () => {
  it('defaults to 90 and refuses a value below a day, naming the variable', () => {
    const base = { OPENRIG_SECRET_KEY: 'ab'.repeat(32) };
    expect(loadConfig(base, { dataDir: '/tmp/audit-cfg' }).audit.retentionDays).toBe(90);
    for (const bad of ['0', '-3', 'ninety'])
      expect(() =>
        loadConfig({ ...base, OPENRIG_AUDIT_RETENTION_DAYS: bad }, { dataDir: '/tmp/audit-cfg' }),
      ).toThrow(/OPENRIG_AUDIT_RETENTION_DAYS/);
  });
});
