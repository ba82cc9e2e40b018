// Rate limits across two real `serve` processes on one database, on SQLite and
// PostgreSQL: 40 concurrent logins from one IP, spread over both processes, let exactly the
// limit through; the rest are 429 with Retry-After and the RateLimit headers.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDb, describeEachDb, type TestDb } from '../helpers/db.js';
import { startServe } from '../helpers/process.js';

const ENV = {
  OPENRIG_SECRET_KEY: 'd1'.repeat(32),
  OPENRIG_LOG_LEVEL: 'warn',
  OPENRIG_RATE_LIMIT_LOGINS: '7/3600',
};

describeEachDb('race: rate limits shared by two serve processes', (dialect) => {
  let db: TestDb;
  let urls: string[] = [];
  let procs: Awaited<ReturnType<typeof startServe>>[] = [];
  beforeAll(async () => {
    db = await createTestDb(dialect);
    procs = [
      await startServe(['--data', db.dataDir, '--database-url', db.url], ENV),
      await startServe(['--data', db.dataDir, '--database-url', db.url], ENV),
    ];
    urls = procs.map((p) => p.url);
  }, 60_000);
  afterAll(async () => {
    for (const p of procs) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
    await db.cleanup();
  });

  it('lets exactly the limit through, whichever process answers', async () => {
    const replies = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        fetch(`${urls[i % 2]}/api/v0/users/login/`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: 'nobody@example.com', password: 'x' }),
        }).then(async (r) => ({
          status: r.status,
          headers: r.headers,
          body: (await r.json()) as { error?: string },
        })),
      ),
    );
    expect(replies.filter((r) => r.status >= 500)).toEqual([]);
    const limited = replies.filter((r) => r.status === 429);
    expect(limited).toHaveLength(33);
    for (const r of limited) {
      expect(r.body.error).toBe('rate_limited');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(r.headers.get('ratelimit-policy')).toBe('"logins";q=7;w=3600');
      expect(r.headers.get('ratelimit')).toMatch(/^"logins";r=0;t=\d+$/);
      expect(r.headers.get('content-type')).toBe('application/json');
    }
    // Both processes refused some: the count is shared, not per process.
    expect(new Set(replies.map((r, i) => (r.status === 429 ? i % 2 : -1)).filter((x) => x >= 0)).size).toBe(
      2,
    );
  }, 60_000);
});
