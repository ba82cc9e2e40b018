// Login addresses (GET /users/me/ipaddrs): recorded from audited requests and from API key uses
// at the key's once-a-minute mark, batched; one row per (user, address) however many writers
// race; each user sees their own. And a failed audit write never changes the reply.
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { Writable } from 'node:stream';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { settleAudit } from './audit.testkit.js';
import { upsertAddresses, type AddressUse } from './audit.repo.js';
import { flushAddressUses, recordAddressUse } from './audit.addresses.js';

/** A request from `ip` (the socket's address: no proxy is trusted here). */
async function from(t: TestApp, ip: string, method: string, url: string, key: string, body?: unknown) {
  const res = await t.app.inject({
    method: method as 'GET',
    url,
    remoteAddress: ip,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    payload: body === undefined ? undefined : JSON.stringify(body),
  });
  return res;
}

interface Addr {
  ip: string;
  first_seen: number;
  last_seen: number;
  first_location: null;
}

async function addresses(t: TestApp, key: string): Promise<Addr[]> {
  const r = await t.request('GET', '/api/v0/users/me/ipaddrs?owner=me', { key });
  expect(r.status, r.raw).toBe(200);
  return r.body.results as Addr[];
}

describeEachDb('login addresses', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off' });

  describe('what is recorded', () => {
    it('an audited write records its address with first_seen and last_seen in epoch seconds', async () => {
      const u = await t().user();
      // The user's first key use (from 127.0.0.1) is marked too: clear it to see the write's own.
      const t0 = t().clock.now();
      const r = await from(t(), '198.51.100.7', 'POST', '/api/v0/ssh/', u.apiKey, {
        ssh_key: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl a@b',
      });
      expect(r.statusCode, r.body).toBe(200);
      await settleAudit(t());
      t().clock.advance(5000);
      await from(t(), '198.51.100.7', 'DELETE', `/api/v0/ssh/${JSON.parse(r.body).key.id}/`, u.apiKey);
      await settleAudit(t());
      const rows = await addresses(t(), u.apiKey);
      expect(rows.find((x) => x.ip === '198.51.100.7')).toEqual({
        ip: '198.51.100.7',
        first_seen: t0 / 1000,
        last_seen: (t0 + 5000) / 1000,
        first_location: null,
      });
    });

    it('an API key used for reads is recorded at its once-a-minute mark, without a statement per request', async () => {
      const u = await t().user();
      await settleAudit(t());
      // First use of the key: marked, its address queued (no statement until the batch).
      expect((await from(t(), '203.0.113.1', 'GET', '/api/v0/instances/', u.apiKey)).statusCode).toBe(200);
      expect(t().deps.addressUses.uses.size).toBe(1);
      await settleAudit(t());
      // Within the minute another address's read is not sampled (the documented resolution) ...
      t().clock.advance(10_000);
      expect((await from(t(), '203.0.113.2', 'GET', '/api/v0/instances/', u.apiKey)).statusCode).toBe(200);
      expect(t().deps.addressUses.uses.size).toBe(0);
      await settleAudit(t());
      expect((await addresses(t(), u.apiKey)).map((x) => x.ip)).toEqual(['203.0.113.1']);
      // ... and is at the key's next mark.
      t().clock.advance(60_000);
      expect((await from(t(), '203.0.113.2', 'GET', '/api/v0/instances/', u.apiKey)).statusCode).toBe(200);
      await settleAudit(t());
      expect((await addresses(t(), u.apiKey)).map((x) => x.ip)).toEqual(['203.0.113.2', '203.0.113.1']);
    });

    it('each user sees only their own addresses', async () => {
      const a = await t().user();
      const b = await t().user();
      await from(t(), '192.0.2.10', 'POST', '/api/v0/users/logout/', a.apiKey, {});
      await from(t(), '192.0.2.20', 'POST', '/api/v0/users/logout/', b.apiKey, {});
      await settleAudit(t());
      expect((await addresses(t(), a.apiKey)).map((x) => x.ip)).toEqual(['192.0.2.10']);
      expect((await addresses(t(), b.apiKey)).map((x) => x.ip)).toEqual(['192.0.2.20']);
    });

    it('owner other than me is a 400 naming it', async () => {
      const u = await t().user();
      const r = await t().request('GET', '/api/v0/users/me/ipaddrs?owner=7', { key: u.apiKey });
      expect(r.status).toBe(400);
      expect(r.body.msg).toContain('owner');
    });
  });

  describe('concurrent writers', () => {
    it('one row per (user, address) however many writers race; first_seen the earliest, last_seen the latest', async () => {
      const users = [(await t().user()).id, (await t().user()).id];
      const ips = ['10.1.0.1', '10.1.0.2', '10.1.0.3', '2001:db8::5'];
      // 24 writers (as many processes would), each writing every pair at its own times.
      const writers = Array.from({ length: 24 }, (_, w) => {
        const batch: AddressUse[] = [];
        for (const userId of users)
          for (const ip of ips) batch.push({ userId, ip, first: 1_000_000 + w, last: 2_000_000 + w });
        // Different writers list the pairs in different orders; the upsert orders them itself.
        if (w % 2) batch.reverse();
        return batch;
      });
      await Promise.all(writers.map((b) => upsertAddresses(t().deps.db, b)));
      const rows = await t()
        .deps.db.selectFrom('user_ipaddrs')
        .selectAll()
        .where('user_id', 'in', users)
        .execute();
      expect(rows).toHaveLength(users.length * ips.length);
      for (const r of rows) {
        expect(r.first_seen).toBe(1_000_000);
        expect(r.last_seen).toBe(2_000_000 + 23);
      }
    });

    it('a batch that could not be written is kept for the next write', async () => {
      const u = await t().user();
      await settleAudit(t());
      recordAddressUse(t().deps, u.id, '10.9.9.9', 5_000);
      // A database that refuses the write: the pair stays queued.
      const down = () => {
        throw new Error('database down');
      };
      const broken = { ...t().deps, db: { insertInto: down } as never };
      await flushAddressUses(broken);
      expect([...t().deps.addressUses.uses.values()]).toEqual([
        { userId: u.id, ip: '10.9.9.9', first: 5_000, last: 5_000 },
      ]);
      await flushAddressUses(t().deps);
      expect(t().deps.addressUses.uses.size).toBe(0);
      const row = await t()
        .deps.db.selectFrom('user_ipaddrs')
        .selectAll()
        .where('user_id', '=', u.id)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({ ip: '10.9.9.9', first_seen: 5_000, last_seen: 5_000 });
    });
  });
});

describeEachDb('a failed audit write', (dialect) => {
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off' });

  it('never changes the reply, and is a warning in the log without secrets', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const saved = t().deps.log;
    t().deps.log = pino({ level: 'warn' }, sink);
    try {
      const u = await t().user({ password: 'failing audit pw' });
      await t().deps.db.schema.dropTable('audit_logs').execute();
      const r = await t().request('POST', `/api/v0/template/?api_key=${u.apiKey}`, {
        body: { name: 'x', image: 'ubuntu', env: '-e TOKEN=tok_never_logged' },
      });
      expect(r.status, r.raw).toBe(200);
      const login = await t().request('POST', '/api/v0/users/login/', {
        body: { email: u.email, password: 'failing audit pw' },
      });
      expect(login.status).toBe(200);
      await settleAudit(t());
      const warnings = lines.filter((l) => l.includes('writing the audit log failed'));
      expect(warnings).toHaveLength(2);
      expect(JSON.parse(warnings[0]!)).toMatchObject({ level: 40, method: 'POST', user: u.id });
      const all = lines.join('\n');
      for (const s of [u.apiKey, 'tok_never_logged', 'failing audit pw']) expect(all).not.toContain(s);
    } finally {
      t().deps.log = saved;
    }
  });
});
