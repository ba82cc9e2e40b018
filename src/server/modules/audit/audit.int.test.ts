// The audit log: which requests get a row (writes of authenticated users, sign-ins on existing
// accounts) and which never do (reads, refused credentials, the agent protocol), that no body
// value is ever stored, the listing (own rows only, newest first, limit) and its permission.
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { agentMachine } from '../../../../test/helpers/market.js';
import { enableTotp } from '../two-factor/two-factor.testkit.js';
import { totpAt } from '../two-factor/two-factor.codes.js';
import { settleAudit, auditRows, auditTableText } from './audit.testkit.js';
import { recordAudit, type AuditEntry } from './audit.service.js';

interface Row {
  id: number;
  created_at: number;
  ip_address: string | null;
  api_key_id: number | null;
  credential: string;
  api_route: string;
  status: number;
  args: { path?: Record<string, string>; query?: Record<string, unknown>; body?: string[] };
}

async function log(t: TestApp, key: string, query = ''): Promise<Row[]> {
  const r = await t.request('GET', `/api/v0/audit_logs/${query}`, { key });
  expect(r.status, r.raw).toBe(200);
  return r.body as Row[];
}

/** A POST without a credential from the address `ip` (a sign-in step). */
function postFrom(t: TestApp, url: string, body: Record<string, unknown>, ip: string) {
  return t.app.inject({
    method: 'POST',
    url,
    remoteAddress: ip,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
}

async function keyId(t: TestApp, apiKey: string): Promise<number> {
  const r = await t.request('GET', '/api/v0/auth/apikeys/', { key: apiKey });
  return (r.body.apikeys as { id: number }[])[0]!.id;
}

const template = (over: Record<string, unknown> = {}) => ({
  name: 'audited',
  image: 'pytorch/pytorch',
  env: '-e HF_TOKEN=hf_do_not_store_me -p 8080:8080',
  ...over,
});

describeEachDb('audit log', (dialect) => {
  // Rate limits are tested by their module; here they would cut the sign-in series short.
  const t = useTestApp(dialect, { OPENRIG_RATE_LIMITS: 'off' });

  describe('what is recorded', () => {
    it('a write with an API key: time, address, key id, route pattern, status, args without body values', async () => {
      const u = await t().user();
      const before = t().clock.now();
      const r = await t().request('POST', '/api/v0/template/?note=first', {
        key: u.apiKey,
        body: template(),
      });
      expect(r.status, r.raw).toBe(200);
      await settleAudit(t());
      const rows = await log(t(), u.apiKey);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toEqual({
        id: expect.any(Number),
        created_at: before / 1000,
        ip_address: '127.0.0.1',
        api_key_id: await keyId(t(), u.apiKey),
        member_id: null,
        credential: 'api_key',
        api_route: 'POST /api/v0/template/',
        status: 200,
        args: { query: { note: 'first' }, body: ['name', 'image', 'env'] },
      });
      expect(await auditTableText(t())).not.toContain('hf_do_not_store_me');
    });

    it('path parameters as the route names them; a refused write with its status', async () => {
      const u = await t().user();
      const made = await t().request('POST', '/api/v0/auth/apikeys/', {
        key: u.apiKey,
        body: { name: 'k2' },
      });
      expect(made.status).toBe(200);
      const id = made.body.id as number;
      const del = await t().request('DELETE', `/api/v0/auth/apikeys/${id}/`, { key: u.apiKey });
      expect(del.status, del.raw).toBe(200);
      const bad = await t().request('PUT', '/api/v0/instances/999999/', {
        key: u.apiKey,
        body: { state: 'stopped' },
      });
      expect(bad.status).toBe(404);
      await settleAudit(t());
      const rows = await log(t(), u.apiKey);
      expect(rows.map((r) => [r.api_route, r.status, r.args])).toEqual([
        ['PUT /api/v0/instances/{id}/', 404, { path: { id: '999999' }, body: ['state'] }],
        ['DELETE /api/v0/auth/apikeys/{id}/', 200, { path: { id: String(id) } }],
        ['POST /api/v0/auth/apikeys/', 200, { body: ['name'] }],
      ]);
      // The key created is shown once in the reply and never reaches the log.
      expect(await auditTableText(t())).not.toContain(made.body.key as string);
    });

    it('a key presented as ?api_key= is redacted from the query', async () => {
      const u = await t().user();
      const r = await t().request('POST', `/api/v0/template/?api_key=${u.apiKey}`, { body: template() });
      expect(r.status, r.raw).toBe(200);
      await settleAudit(t());
      const [row] = await log(t(), u.apiKey);
      expect(row!.args.query).toEqual({ api_key: '[redacted]' });
      expect(await auditTableText(t())).not.toContain(u.apiKey);
    });

    it('a write refused for its scope is recorded with its 403', async () => {
      const u = await t().user();
      const ro = await t().request('POST', '/api/v0/auth/apikeys/', {
        key: u.apiKey,
        body: { name: 'ro', permissions: 'read_only' },
      });
      const r = await t().request('POST', '/api/v0/template/', { key: ro.body.key, body: template() });
      expect(r.status).toBe(403);
      await settleAudit(t());
      const [row] = await log(t(), u.apiKey);
      expect(row).toMatchObject({ api_route: 'POST /api/v0/template/', status: 403, api_key_id: ro.body.id });
    });

    it('reads are not recorded, and a read runs no audit hook at all', async () => {
      const u = await t().user();
      const scheduled = vi.spyOn(t().deps.auditWrites.pending, 'add');
      for (const url of [
        '/api/v0/users/current/',
        '/api/v0/instances/',
        '/api/v0/template/',
        '/api/v0/audit_logs/',
      ]) {
        const r = await t().request('GET', url, { key: u.apiKey });
        expect(r.status, url).toBe(200);
      }
      // The instance poll's route (no such instance: the same route and hooks as a real poll).
      expect((await t().request('GET', '/api/v0/instances/999999/', { key: u.apiKey })).status).toBe(200);
      expect(scheduled).not.toHaveBeenCalled();
      scheduled.mockRestore();
      // A search sent as POST is a read too.
      const s = await t().request('POST', '/api/v0/bundles/', { key: u.apiKey, body: {} });
      expect(s.status).toBe(200);
      await settleAudit(t());
      expect(await log(t(), u.apiKey)).toEqual([]);
    });

    it('a refused credential records nothing: no account is known', async () => {
      const n = (await auditRows(t())).length;
      const r = await t().request('POST', '/api/v0/template/', { key: 'or_not_a_key', body: template() });
      expect(r.status).toBe(401);
      const none = await t().request('POST', '/api/v0/template/', { body: template() });
      expect(none.status).toBe(401);
      await settleAudit(t());
      expect((await auditRows(t())).length).toBe(n);
    });

    it("the host agent's protocol is not recorded", async () => {
      const host = await t().user();
      const r = await t().request('POST', '/api/agent/v1/register', {
        key: host.apiKey,
        body: { agent_uid: 'audit-agent-0001', machines: [agentMachine(0)] },
      });
      expect(r.status, r.raw).toBe(200);
      await settleAudit(t());
      expect(await log(t(), host.apiKey)).toEqual([]);
    });
  });

  describe('writing', () => {
    const entry = (userId: number, n: number): AuditEntry => ({
      userId,
      at: t().clock.now(),
      ip: '192.0.2.7',
      apiKeyId: null,
      credential: 'api_key',
      method: 'POST',
      route: `/api/v0/burst/${n}/`,
      status: 200,
      args: {},
      usedAccount: false,
    });

    it('rows that come within the batch window wait for each other and go in one write', async () => {
      const u = await t().user();
      const w = t().deps.auditWrites;
      const done: Promise<void>[] = [];
      for (let n = 0; n < 50; n++) done.push(recordAudit(t().deps, entry(u.id, n)));
      // Nothing is written yet: all 50 wait for the window, to share one statement.
      expect(w.writing).toBe(false);
      expect(w.timer).not.toBeNull();
      expect(w.queued.length).toBe(50);
      await Promise.all(done);
      expect(w.queued.length).toBe(0);
      expect(w.writing).toBe(false);
      expect(w.timer).toBeNull();
      const routes = (await auditRows(t())).filter((r) => r.user_id === u.id).map((r) => r.route);
      expect(routes.sort()).toEqual(Array.from({ length: 50 }, (_, n) => `/api/v0/burst/${n}/`).sort());
    });

    it('a row that cannot be written fails alone: the rest of its batch is stored', async () => {
      const u = await t().user();
      const first = recordAudit(t().deps, entry(u.id, 0));
      // No such user: the foreign key refuses this row, in the middle of a batch of four.
      const batch = [entry(u.id, 1), entry(2 ** 40, 2), entry(u.id, 3)].map((e) =>
        recordAudit(t().deps, e).then(
          () => 'stored',
          () => 'refused',
        ),
      );
      await first;
      expect(await Promise.all(batch)).toEqual(['stored', 'refused', 'stored']);
      const routes = (await auditRows(t())).filter((r) => r.user_id === u.id).map((r) => r.route);
      expect(routes.sort()).toEqual(['/api/v0/burst/0/', '/api/v0/burst/1/', '/api/v0/burst/3/']);
    });
  });

  describe('sign-ins', () => {
    it('password sign-ins on an existing account, success and failure; an unknown e-mail records nothing', async () => {
      const u = await t().user({ password: 'correct horse battery' });
      const n = (await auditRows(t())).length;
      const bad = await postFrom(
        t(),
        '/api/v0/users/login/',
        { email: u.email, password: 'wrong horse battery' },
        '198.51.100.66',
      );
      expect(bad.statusCode).toBe(401);
      const unknown = await t().request('POST', '/api/v0/users/login/', {
        body: { email: 'nobody-audit@example.com', password: 'whatever it is' },
      });
      expect(unknown.status).toBe(401);
      t().clock.advance(1000);
      const ok = await postFrom(
        t(),
        '/api/v0/users/login/',
        { email: u.email.toUpperCase(), password: 'correct horse battery' },
        '198.51.100.77',
      );
      expect(ok.statusCode).toBe(200);
      await settleAudit(t());
      expect((await auditRows(t())).length).toBe(n + 2);
      const rows = await log(t(), u.apiKey);
      expect(
        rows.map((r) => [r.api_route, r.credential, r.status, r.api_key_id, r.ip_address, r.args]),
      ).toEqual([
        [
          'POST /api/v0/users/login/',
          'password',
          200,
          null,
          '198.51.100.77',
          { body: ['email', 'password'] },
        ],
        [
          'POST /api/v0/users/login/',
          'password',
          401,
          null,
          '198.51.100.66',
          { body: ['email', 'password'] },
        ],
      ]);
      const text = await auditTableText(t());
      expect(text).not.toContain('horse');
      expect(text).not.toContain(u.email);
      // The completed sign-in's address used the account; the failed one did not.
      const ips = await t().request('GET', '/api/v0/users/me/ipaddrs?owner=me', { key: u.apiKey });
      expect(ips.body.results.map((x: { ip: string }) => x.ip)).toEqual(['198.51.100.77']);
    });

    it('a sign-in answered 429 (locked account) checked nothing and is not recorded', async () => {
      const u = await t().user({ password: 'locked password 1' });
      const max = t().config.accountLockout.maxFailures;
      for (let i = 0; i < max; i++) {
        const r = await t().request('POST', '/api/v0/users/login/', {
          body: { email: u.email, password: `no ${i}` },
        });
        expect(r.status).toBe(401);
      }
      const locked = await t().request('POST', '/api/v0/users/login/', {
        body: { email: u.email, password: 'locked password 1' },
      });
      expect(locked.status).toBe(429);
      await settleAudit(t());
      const rows = await log(t(), u.apiKey);
      expect(rows.map((r) => r.status)).toEqual(Array.from({ length: max }, () => 401));
    });

    it('a 2FA sign-in with an API key: the TOTP code is never stored, failures are recorded too', async () => {
      const u = await t().user();
      const totp = await enableTotp(t(), u.apiKey, u.email);
      await settleAudit(t());
      const n = (await log(t(), u.apiKey)).length;
      const wrong = totpAt(totp.secret, t().clock.now() + 300_000);
      const bad = await t().request('POST', '/api/v0/tfa/', {
        key: u.apiKey,
        body: { tfa_method: 'totp', code: wrong },
      });
      expect(bad.status).toBeGreaterThanOrEqual(400);
      const code = totpAt(totp.secret, t().clock.now());
      const ok = await t().request('POST', '/api/v0/tfa/', {
        key: u.apiKey,
        body: { tfa_method: 'totp', code },
      });
      expect(ok.status, ok.raw).toBe(200);
      await settleAudit(t());
      const rows = (await log(t(), u.apiKey)).slice(0, -n || undefined);
      expect(rows.map((r) => [r.api_route, r.credential, r.status, r.args.body])).toEqual([
        ['POST /api/v0/tfa/', 'api_key', 200, ['tfa_method', 'code']],
        ['POST /api/v0/tfa/', 'api_key', bad.status, ['tfa_method', 'code']],
      ]);
      const text = await auditTableText(t());
      expect(text).not.toContain(code);
      expect(text).not.toContain(wrong);
      expect(text).not.toContain(totp.secret);
      // The CLI session it returned: a write with it is a session_key row without a key id.
      const out = await t().request('POST', '/api/v0/users/logout/', { key: ok.body.session_key, body: {} });
      expect(out.status).toBe(200);
      await settleAudit(t());
      expect((await log(t(), u.apiKey))[0]).toMatchObject({
        api_route: 'POST /api/v0/users/logout/',
        credential: 'session_key',
        api_key_id: null,
        status: 200,
      });
    });

    it('a 2FA sign-in with the login secret alone is recorded on the account it belongs to', async () => {
      const u = await t().user({ password: 'tfa password one' });
      const totp = await enableTotp(t(), u.apiKey, u.email);
      const start = await t().request('POST', '/api/v0/users/login/', {
        body: { email: u.email, password: 'tfa password one' },
      });
      expect(start.body.tfa_required).toBe(true);
      const secret = start.body.tfa_secret as string;
      await settleAudit(t());
      // Only the 2FA step's addresses from here on (the set-up's key uses were 127.0.0.1).
      await t().deps.db.deleteFrom('user_ipaddrs').where('user_id', '=', u.id).execute();
      const wrong = totpAt(totp.secret, t().clock.now() + 300_000);
      const bad = await postFrom(
        t(),
        '/api/v0/tfa/',
        { secret, tfa_method: 'totp', code: wrong },
        '192.0.2.66',
      );
      expect(bad.statusCode).toBeGreaterThanOrEqual(400);
      // A secret that names no challenge names no account.
      const stray = await t().request('POST', '/api/v0/tfa/', {
        body: { secret: 'not-a-login-secret', tfa_method: 'totp', code: wrong },
      });
      expect(stray.status).toBeGreaterThanOrEqual(400);
      const code = totpAt(totp.secret, t().clock.now());
      const ok = await postFrom(t(), '/api/v0/tfa/', { secret, tfa_method: 'totp', code }, '192.0.2.77');
      expect(ok.statusCode, ok.body).toBe(200);
      await settleAudit(t());
      const rows = await log(t(), u.apiKey);
      expect(rows.slice(0, 3).map((r) => [r.api_route, r.credential, r.status, r.args.body])).toEqual([
        ['POST /api/v0/tfa/', 'login_secret', 200, ['secret', 'tfa_method', 'code']],
        ['POST /api/v0/tfa/', 'login_secret', bad.statusCode, ['secret', 'tfa_method', 'code']],
        ['POST /api/v0/users/login/', 'password', 200, ['email', 'password']],
      ]);
      const text = await auditTableText(t());
      expect(text).not.toContain(secret);
      expect(text).not.toContain(code);
      // The completed sign-in's address used the account; the failed step's did not.
      const ips = await t().request('GET', '/api/v0/users/me/ipaddrs', { key: u.apiKey });
      expect(ips.body.results.map((x: { ip: string }) => x.ip)).toEqual(['192.0.2.77']);
    });

    it('browser session writes are recorded as such; a cross-site write refused is not', async () => {
      const u = await t().user({ password: 'cookie password 9' });
      const login = await t().request('POST', '/api/v0/users/login/', {
        body: { email: u.email, password: 'cookie password 9' },
      });
      const cookie = String(login.headers['set-cookie']).split(';')[0]!;
      await settleAudit(t());
      const n = (await log(t(), u.apiKey)).length;
      const forged = await t().request('POST', '/api/v0/template/', {
        headers: { cookie },
        body: template(),
      });
      expect(forged.status).toBe(403);
      const r = await t().request('POST', '/api/v0/template/', {
        headers: { cookie, 'x-openrig-csrf': '1' },
        body: template(),
      });
      expect(r.status, r.raw).toBe(200);
      await settleAudit(t());
      const rows = await log(t(), u.apiKey);
      expect(rows).toHaveLength(n + 1);
      expect(rows[0]).toMatchObject({ credential: 'browser_session', api_key_id: null, status: 200 });
    });
  });

  describe('the listing', () => {
    let a: { id: number; apiKey: string };
    let b: { id: number; apiKey: string };
    beforeAll(async () => {
      a = await t().user();
      b = await t().user();
      for (let i = 0; i < 5; i++) {
        t().clock.advance(1000);
        await t().request('POST', `/api/v0/template/?n=${i}`, { key: a.apiKey, body: template() });
      }
      await t().request('POST', '/api/v0/template/?n=b', { key: b.apiKey, body: template() });
      await settleAudit(t());
    });

    it('each user sees only their own rows, newest first', async () => {
      const ra = await log(t(), a.apiKey);
      expect(ra.map((r) => r.args.query!.n)).toEqual(['4', '3', '2', '1', '0']);
      for (let i = 1; i < ra.length; i++) expect(ra[i - 1]!.created_at).toBeGreaterThan(ra[i]!.created_at);
      const rb = await log(t(), b.apiKey);
      expect(rb.map((r) => r.args.query!.n)).toEqual(['b']);
      const aKeyId = await keyId(t(), a.apiKey);
      expect(rb.every((r) => r.api_key_id !== aKeyId)).toBe(true);
    });

    it('limit gives the latest N; a bad limit is a 400 naming it', async () => {
      expect((await log(t(), a.apiKey, '?limit=2')).map((r) => r.args.query!.n)).toEqual(['4', '3']);
      for (const bad of ['0', '1001', 'x', '-1', '2.5']) {
        const r = await t().request('GET', `/api/v0/audit_logs/?limit=${bad}`, { key: a.apiKey });
        expect(r.status, bad).toBe(400);
        expect(r.body.error).toBe('bad_request');
        expect(r.body.msg).toContain('limit');
      }
    });

    it('needs user read: 401 without a key, 403 for a key without it', async () => {
      const none = await t().request('GET', '/api/v0/audit_logs/');
      expect(none.status).toBe(401);
      const scoped = await t().request('POST', '/api/v0/auth/apikeys/', {
        key: a.apiKey,
        body: { name: 'inst', permissions: { instances: 'write' } },
      });
      expect(scoped.status, scoped.raw).toBe(200);
      for (const url of ['/api/v0/audit_logs/', '/api/v0/users/me/ipaddrs?owner=me']) {
        const r = await t().request('GET', url, { key: scoped.body.key });
        expect(r.status, url).toBe(403);
        expect(r.body.error).toBe('forbidden');
      }
      const reader = await t().request('POST', '/api/v0/auth/apikeys/', {
        key: a.apiKey,
        body: { name: 'reader', permissions: { user: 'read' } },
      });
      expect((await t().request('GET', '/api/v0/audit_logs/', { key: reader.body.key })).status).toBe(200);
    });
  });
});
