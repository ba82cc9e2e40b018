// last_used_at of an API key: written when the key is used, at most once a minute per key, and
// not on the request's critical path; shown by GET /auth/apikeys/{id}/.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { flushKeyUses } from '../../http/key-uses.js';

async function lastUsed(t: TestApp, key: string, id: number): Promise<number | null> {
  const r = await t.request('GET', `/api/v0/auth/apikeys/${id}/`, { key });
  expect(r.status).toBe(200);
  return r.body.apikey.last_used_at as number | null;
}

async function until<T>(f: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const v = await f();
    if (ok(v)) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
  return f();
}

describeEachDb('API key last_used_at', (dialect) => {
  const t = useTestApp(dialect);

  it('is written on use, at most once a minute, and shown', async () => {
    const u = await t().user();
    const made = await t().request('POST', '/api/v0/auth/apikeys/', {
      key: u.apiKey,
      body: { name: 'probe' },
    });
    const { id, key } = made.body as { id: number; key: string };
    const row = () =>
      t()
        .deps.db.selectFrom('api_keys')
        .select('last_used_at')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
    expect((await row()).last_used_at).toBeNull();

    const t0 = t().clock.now();
    expect((await t().request('GET', '/api/v0/users/current/', { key })).status).toBe(200);
    const first = await until(row, (r) => r.last_used_at !== null);
    expect(first.last_used_at).toBe(t0);

    // Within the minute: many uses, no further write.
    t().clock.advance(30_000);
    await Promise.all(
      Array.from({ length: 10 }, () => t().request('GET', '/api/v0/users/current/', { key })),
    );
    await new Promise((r) => setTimeout(r, 100));
    expect((await row()).last_used_at).toBe(t0);

    // After it: written again, and the API shows it in seconds.
    t().clock.advance(31_000);
    const t1 = t().clock.now();
    await t().request('GET', '/api/v0/users/current/', { key });
    await until(row, (r) => r.last_used_at === t1);
    expect(await lastUsed(t(), u.apiKey, id)).toBe(t1 / 1000);
  });

  it('writes the uses of many keys together, each with its own time, and a flush writes what is queued', async () => {
    const u = await t().user();
    const keys: { id: number; key: string }[] = [];
    for (let i = 0; i < 3; i++)
      keys.push(
        (await t().request('POST', '/api/v0/auth/apikeys/', { key: u.apiKey, body: { name: `k${i}` } }))
          .body as { id: number; key: string },
      );
    const times: number[] = [];
    for (const k of keys) {
      times.push(t().clock.now());
      expect((await t().request('GET', '/api/v0/users/current/', { key: k.key })).status).toBe(200);
      t().clock.advance(5);
    }
    expect(t().deps.keyUses.uses.size).toBeGreaterThanOrEqual(3);
    await flushKeyUses(t().deps);
    expect(t().deps.keyUses.uses.size).toBe(0);
    const rows = await t()
      .deps.db.selectFrom('api_keys')
      .select(['id', 'last_used_at'])
      .where(
        'id',
        'in',
        keys.map((k) => k.id),
      )
      .orderBy('id')
      .execute();
    expect(rows.map((r) => Number(r.last_used_at))).toEqual(times);
  });
});
