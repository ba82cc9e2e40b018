// Races on quotas and on balances, on both databases, with the requests spread over two app
// instances on one database (two `serve` processes): concurrent creates against one GPU quota
// make exactly as many instances as it allows, every loser a clean 403 quota_exceeded; concurrent
// credit transfers never take a balance below zero, and the sum of the balances never changes.
import { afterAll, beforeAll, expect, it } from 'vitest';
import pino from 'pino';
import type { FastifyInstance } from 'fastify';
import { describeEachDb } from '../helpers/db.js';
import { makeTestApp, type Reply, type TestApp } from '../helpers/app.js';
import { openStore, type Store } from '../../src/server/db/connection.js';
import { makeDeps } from '../../src/server/deps.js';
import { loadConfig } from '../../src/server/config.js';
import { buildApp } from '../../src/server/app.js';
import { offers, PUB } from '../helpers/market.js';
import { addCredit } from '../../src/server/modules/billing/billing.service.js';

const ENV = { OPENRIG_RATE_LIMITS: 'off' };

describeEachDb('race: quotas and credit transfers across two processes', (dialect) => {
  let t: TestApp;
  let store2: Store;
  let app2: FastifyInstance;

  beforeAll(async () => {
    t = await makeTestApp(dialect, ENV);
    store2 = openStore(t.db.url);
    const config = loadConfig(
      { OPENRIG_SECRET_KEY: 'ab'.repeat(32), OPENRIG_LOG_LEVEL: 'silent', ...ENV },
      { dataDir: t.db.dataDir, databaseUrl: t.db.url },
    );
    app2 = await buildApp(
      makeDeps({ store: store2, clock: t.clock, config, log: pino({ level: 'silent' }) }),
      {
        logger: false,
      },
    );
    await app2.ready();
  });
  afterAll(async () => {
    await app2.close();
    await store2.destroy();
    await t.app.close();
    await t.db.cleanup();
  });

  async function send(
    which: number,
    method: string,
    url: string,
    key: string,
    body?: unknown,
  ): Promise<Reply> {
    if (which % 2 === 0) return t.request(method, url, { key, body });
    const res = await app2.inject({
      method: method as 'PUT',
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

  /** The team's id; its account gets $1,000 and an SSH key (made with a team key). */
  async function teamAccount(name: string, teamKey: string) {
    const row = await t.deps.db
      .selectFrom('teams')
      .select(['id', 'account_user_id'])
      .where('name', '=', name)
      .executeTakeFirstOrThrow();
    await addCredit(t.deps, Number(row.account_user_id), 1000);
    const ssh = await t.request('POST', '/api/v0/ssh/', { key: teamKey, body: { ssh_key: PUB } });
    expect(ssh.status, ssh.raw).toBe(200);
    return { id: Number(row.id) };
  }

  const count = (replies: Reply[]) => {
    const by: Record<number, number> = {};
    for (const r of replies) by[r.status] = (by[r.status] ?? 0) + 1;
    return by;
  };

  it("60 concurrent creates by a team's members against a 5-GPU team quota: exactly 5 instances", async () => {
    const name = `race-team-${Date.now()}`;
    // The first is the team's owner.
    const members: Awaited<ReturnType<typeof t.user>>[] = [await t.user({ team: name })];
    members.push(...(await Promise.all(Array.from({ length: 5 }, () => t.user({ team: name })))));
    const team = await teamAccount(name, members[0]!.teamApiKey!);
    const set = await t.request('PUT', '/api/v0/quotas/', {
      key: members[0]!.teamApiKey,
      body: { max_gpus: 5 },
    });
    expect(set.status, set.raw).toBe(200);
    const ids = await offers(t, 60);
    const replies = await Promise.all(
      ids.map((offer, i) =>
        send(i, 'PUT', `/api/v0/asks/${offer}/`, members[i % members.length]!.teamApiKey!, {
          image: 'x',
          disk: 10,
        }),
      ),
    );
    expect(count(replies)).toEqual({ 200: 5, 403: 55 });
    for (const r of replies.filter((x) => x.status === 403))
      expect(r.body).toMatchObject({
        error: 'quota_exceeded',
        limit: 'max_gpus',
        limit_value: 5,
        requested: 1,
      });
    const live = await t.deps.db
      .selectFrom('instances')
      .select('id')
      .where('team_id', '=', team.id)
      .where('destroyed_at', 'is', null)
      .execute();
    expect(live).toHaveLength(5);
    // The losers left their offers free: no machine is held but the winners'.
    const rented = await t.deps.db
      .selectFrom('machines')
      .select('id')
      .where('id', 'in', ids)
      .where('rented', '=', 1)
      .execute();
    expect(rented).toHaveLength(5);
  });

  it('40 concurrent creates by one member against their 3-GPU cap (2-GPU offers): exactly one, then none', async () => {
    const name = `race-member-${Date.now()}`;
    const owner = await t.user({ team: name });
    const member = await t.user({ team: name });
    const team = await teamAccount(name, owner.teamApiKey!);
    const set = await t.request('PUT', '/api/v0/quotas/', {
      key: owner.teamApiKey,
      body: { team_id: team.id, user_id: member.id, max_gpus: 3 },
    });
    expect(set.status, set.raw).toBe(200);
    const ids = await offers(t, 40, { numGpus: 2 });
    const replies = await Promise.all(
      ids.map((offer, i) =>
        send(i, 'PUT', `/api/v0/asks/${offer}/`, member.teamApiKey!, { image: 'x', disk: 10 }),
      ),
    );
    expect(count(replies)).toEqual({ 200: 1, 403: 39 });
  });

  it('200 concurrent transfers among 5 accounts: no balance below zero, the sum unchanged, each ledger adding up', async () => {
    const users = await Promise.all(Array.from({ length: 5 }, () => t.user({ balanceUsd: 10 })));
    const before = 50_000_000;
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) => {
        const from = users[i % 5]!;
        const to = users[(i * 7 + 1 + (i % 4)) % 5 === i % 5 ? (i + 1) % 5 : (i * 7 + 1 + (i % 4)) % 5]!;
        return send(i, 'PUT', '/api/v0/commands/transfer_credit/', from.apiKey, {
          sender: 'me',
          recipient: to.email,
          amount: 0.75,
        });
      }),
    );
    expect(replies.filter((r) => r.status >= 500)).toEqual([]);
    for (const r of replies) expect([200, 402]).toContain(r.status);
    const rows = await t.deps.db
      .selectFrom('users')
      .select(['id', 'balance_micros'])
      .where(
        'id',
        'in',
        users.map((u) => u.id),
      )
      .execute();
    const sum = rows.reduce((s, r) => s + Number(r.balance_micros), 0);
    expect(sum).toBe(before);
    for (const r of rows) expect(Number(r.balance_micros)).toBeGreaterThanOrEqual(0);
    // Each account's ledger (its starting credit and its transfers) adds up to its balance.
    for (const r of rows) {
      const l = await t.deps.db
        .selectFrom('billing_ledger')
        .select((eb) => eb.fn.sum<number>('amount_micros').as('s'))
        .where('user_id', '=', r.id)
        .executeTakeFirstOrThrow();
      expect(-Number(l.s)).toBe(Number(r.balance_micros));
    }
    const ok = replies.filter((r) => r.status === 200).length;
    const moved = await t.deps.db
      .selectFrom('billing_ledger')
      .select('id')
      .where('kind', '=', 'transfer_out')
      .where(
        'user_id',
        'in',
        users.map((u) => u.id),
      )
      .execute();
    expect(moved).toHaveLength(ok);
  });

  it('60 concurrent transfers of $1 from one $25 balance: exactly 25 go through', async () => {
    const sender = await t.user({ balanceUsd: 25 });
    const recipient = await t.user();
    const replies = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        send(i, 'PUT', '/api/v0/commands/transfer_credit/', sender.apiKey, {
          sender: 'me',
          recipient: recipient.id,
          amount: 1,
        }),
      ),
    );
    expect(count(replies)).toEqual({ 200: 25, 402: 35 });
    const bal = await t.deps.db
      .selectFrom('users')
      .select(['id', 'balance_micros'])
      .where('id', 'in', [sender.id, recipient.id])
      .orderBy('id')
      .execute();
    expect(bal.map((b) => Number(b.balance_micros))).toEqual([0, 125_000_000]);
  });
});
