// Race: concurrent revocations and uses of one API key, on both databases.
// The database decides (a conditional UPDATE … WHERE revoked_at IS NULL): exactly one revoke
// wins, the others are clean 4xx, no 5xx, and once the revoke is acknowledged no use succeeds.
// On PostgreSQL concurrent polls share statements (db/coalesce.ts): a poll made after the revoke
// is acknowledged is refused even while polls made before it are still in flight.
import { expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { offers, renter, runningInstance } from '../helpers/market.js';

describeEachDb('race: API-key revocation and use', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off' });

  it('one revoke wins among 40, uses are 200 or 401, never 5xx, and none succeeds afterwards', async () => {
    const u = await t().user();
    const created = await t().request('POST', '/api/v0/auth/apikeys/', {
      key: u.apiKey,
      body: { name: 'ci' },
    });
    expect(created.status).toBe(200);
    const k2 = created.body.key as string;
    const id = created.body.id as number;
    const ops = [
      ...Array.from({ length: 20 }, () =>
        t().request('DELETE', `/api/v0/auth/apikeys/${id}/`, { key: u.apiKey, body: {} }),
      ),
      // A key may revoke itself.
      ...Array.from({ length: 20 }, () =>
        t().request('DELETE', `/api/v0/auth/apikeys/${id}/`, { key: k2, body: {} }),
      ),
      ...Array.from({ length: 60 }, () => t().request('GET', '/api/v0/users/current', { key: k2 })),
    ];
    // Awaited in an interleaved order (they all run at once anyway).
    const order = ops.map((p, i) => ({ p, k: (i * 7919) % ops.length })).sort((a, b) => a.k - b.k);
    const replies = await Promise.all(order.map((o) => o.p));
    expect(replies.filter((r) => r.status >= 500)).toEqual([]);
    const all = await Promise.all(ops); // the same replies, in the original order
    const revokes = all.slice(0, 40);
    const uses = all.slice(40);
    expect(revokes.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of revokes.filter((x) => x.status !== 200)) {
      expect([401, 404]).toContain(r.status);
      expect(typeof r.body.error).toBe('string');
      expect(typeof r.body.msg).toBe('string');
    }
    for (const r of uses) expect([200, 401]).toContain(r.status);
    // Acknowledged: every later use is refused, on every path.
    const after = await Promise.all(
      Array.from({ length: 20 }, () => t().request('GET', '/api/v0/users/current', { key: k2 })),
    );
    expect(after.every((r) => r.status === 401 && r.body.error === 'auth_error')).toBe(true);
    const row = await t()
      .db.store.db.selectFrom('api_keys')
      .select('revoked_at')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row.revoked_at).not.toBeNull();
    // The account key is untouched.
    expect((await t().request('GET', '/api/v0/users/current', { key: u.apiKey })).status).toBe(200);
  });

  it('polls running all along: none made after the revoke is acknowledged succeeds', async () => {
    const u = await renter(t());
    const created = await t().request('POST', '/api/v0/auth/apikeys/', {
      key: u.apiKey,
      body: { name: 'p' },
    });
    const k2 = created.body.key as string;
    const [m1, m2] = await offers(t(), 2);
    const ids = [await runningInstance(t(), u.apiKey, m1!), await runningInstance(t(), u.apiKey, m2!)];
    let acknowledged = false;
    let stop = false;
    const after: number[] = [];
    const before: number[] = [];
    const loop = async (n: number) => {
      for (let i = 0; !stop && before.length + after.length < 20_000; i++) {
        const made = acknowledged;
        const r = await t().request('GET', `/api/v0/instances/${ids[(n + i) % 2]}/`, { key: k2 });
        (made ? after : before).push(r.status);
        // Room for the revoke's own request between polls.
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
    };
    const loops = Array.from({ length: 16 }, (_, n) => loop(n));
    while (before.filter((s) => s === 200).length < 64 && before.length < 10_000)
      await new Promise((r) => setTimeout(r, 1));
    expect(before.filter((s) => s === 200).length, JSON.stringify(before.slice(0, 5))).toBeGreaterThanOrEqual(
      64,
    );
    const revoke = await t().request('DELETE', `/api/v0/auth/apikeys/${created.body.id}/`, {
      key: u.apiKey,
      body: {},
    });
    expect(revoke.status, revoke.raw).toBe(200);
    acknowledged = true;
    while (after.length < 64 && before.length + after.length < 20_000)
      await new Promise((r) => setTimeout(r, 1));
    stop = true;
    await Promise.all(loops);
    expect(new Set(before.filter((s) => s !== 200 && s !== 401))).toEqual(new Set());
    expect(after.length).toBeGreaterThanOrEqual(64);
    expect(after.filter((s) => s !== 401)).toEqual([]);
  });
});
