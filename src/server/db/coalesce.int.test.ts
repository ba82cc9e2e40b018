// Coalesced reads on a real PostgreSQL: concurrent polls of different users and instances share
// statements, each gets exactly the row a statement of its own gives, and a key revoked before a
// call is made is refused by it.
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { pgUnavailable } from '../../../test/helpers/db.js';
import { useTestApp } from '../../../test/helpers/app.js';
import { offers, renter, runningInstance } from '../../../test/helpers/market.js';
import { genericPlanPool, pgReads, type Store } from './connection.js';
import { keyWithJoinedRead } from './credentials.js';
import { polledInstance } from '../modules/instances/instances.routes.js';
import { sha256Hex } from '../crypto.js';

const skip = await pgUnavailable();

describe.skipIf(skip !== null)('coalesced reads [postgres]', () => {
  const t = useTestApp('postgres');

  /** The poll's statement and its parameters, as the authentication hook would run them. */
  async function pollStatement(key: string, id: number, now: number) {
    let captured: { text: string; params: readonly unknown[] } | null = null;
    const capture = (text: string, params: readonly unknown[]) => {
      captured = { text, params };
      return Promise.resolve([]);
    };
    const store: Store = { ...t().deps.store, read: capture, readCoalesced: capture };
    await keyWithJoinedRead(polledInstance)(store, sha256Hex(key), id, now);
    return captured!;
  }

  it('shares statements among concurrent polls, each answered as a statement of its own', async () => {
    const users = [await renter(t()), await renter(t()), await renter(t())];
    const machines = await offers(t(), 6);
    const polls: { key: string; id: number }[] = [];
    for (const [i, m] of machines.entries()) {
      const u = users[i % users.length]!;
      polls.push({ key: u.apiKey, id: await runningInstance(t(), u.apiKey, m) });
    }
    // Another user's instance and an unknown key: no row, or a key without its instance.
    polls.push({ key: users[0]!.apiKey, id: polls[1]!.id }, { key: 'or_unknown', id: polls[0]!.id });

    const pool = new pg.Pool({ connectionString: t().db.url, max: 4 });
    let statements = 0;
    const query = pool.query.bind(pool) as (...a: unknown[]) => unknown;
    (pool as unknown as { query: (...a: unknown[]) => unknown }).query = (...a) => {
      statements++;
      return query(...a);
    };
    try {
      const { read, readCoalesced } = pgReads(pool);
      const now = t().clock.now();
      const calls = await Promise.all(polls.map((p) => pollStatement(p.key, p.id, now)));
      const alone = await Promise.all(calls.map((c) => read(c.text, c.params)));
      expect(alone.filter((rows) => rows.length === 1)).toHaveLength(polls.length - 1);
      // The first call also asks the parameters' types; later rounds run only their batches.
      await readCoalesced(calls[0]!.text, calls[0]!.params);
      await new Promise((r) => setTimeout(r, 50));
      for (let round = 0; round < 3; round++) {
        const before = statements;
        const many = Array.from({ length: 5 }, () => calls).flat();
        const together = await Promise.all(many.map((c) => readCoalesced(c.text, c.params)));
        expect(together).toEqual(Array.from({ length: 5 }, () => alone).flat());
        // One statement alone and the rest together (a statement carries up to MAX_BATCH).
        expect(statements - before).toBeLessThanOrEqual(3);
      }
    } finally {
      await pool.end();
    }
  });

  it('plans each batched statement once: generic plans on the batch connections, never one per batch', async () => {
    const u = await renter(t());
    const ids = [];
    for (const m of await offers(t(), 4)) ids.push(await runningInstance(t(), u.apiKey, m));
    const pool = new pg.Pool({ connectionString: t().db.url, max: 2 });
    const batchPool = genericPlanPool(t().db.url, 1);
    try {
      const { readCoalesced } = pgReads(pool, batchPool);
      const now = t().clock.now();
      const calls = await Promise.all(ids.map((id) => pollStatement(u.apiKey, id, now)));
      await readCoalesced(calls[0]!.text, calls[0]!.params);
      await new Promise((r) => setTimeout(r, 50));
      // Batches of every size from 2 to 9: PostgreSQL would plan each anew for its arrays' lengths.
      for (let n = 2; n <= 9; n++) {
        const rows = await Promise.all(
          Array.from({ length: n }, (_, i) =>
            readCoalesced(calls[i % calls.length]!.text, calls[i % calls.length]!.params),
          ),
        );
        expect(rows.every((r) => r.length === 1)).toBe(true);
      }
      const { rows } = await batchPool.query<{ generic: number; custom: number }>(
        `SELECT sum(generic_plans)::int AS generic, sum(custom_plans)::int AS custom
           FROM pg_prepared_statements WHERE statement LIKE 'SELECT b.n AS b%'`,
      );
      expect(rows[0]!.custom).toBe(0);
      expect(rows[0]!.generic).toBeGreaterThanOrEqual(7);
    } finally {
      await Promise.all([pool.end(), batchPool.end()]);
    }
  });

  it('refuses a key revoked before the call, while other calls of the statement are in flight', async () => {
    const u = await renter(t());
    const [m] = await offers(t(), 1);
    const id = await runningInstance(t(), u.apiKey, m!);
    const created = await t().request('POST', '/api/v0/auth/apikeys/', {
      key: u.apiKey,
      body: { name: 'r' },
    });
    const key = created.body.key as string;
    const now = t().clock.now();
    const call = await pollStatement(key, id, now);
    const { readCoalesced } = t().deps.store;
    type Row = { key: { k_revoked: number | null } | null };
    const first = Array.from({ length: 20 }, () => readCoalesced<Row>(call.text, call.params));
    await t()
      .deps.store.db.updateTable('api_keys')
      .set({ revoked_at: now })
      .where('id', '=', created.body.id)
      .execute();
    const later = await Promise.all(
      Array.from({ length: 20 }, () => readCoalesced<Row>(call.text, call.params)),
    );
    await Promise.all(first);
    for (const rows of later) expect(rows[0]!.key!.k_revoked).toBe(now);
  });
});
