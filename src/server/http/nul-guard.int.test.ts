// U+0000 in request text: a clean 400 on both databases, before anything is read or written
// (http/nul-guard.ts). The first case is the fuzzer's find: a 500 on PostgreSQL.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../test/helpers/db.js';
import { useTestApp } from '../../../test/helpers/app.js';
import { NUL_MESSAGE, holdsNul, isPgNulError } from './nul-guard.js';

const ED25519 = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGJ5dGVzLWZvci1hLXRlc3Qta2V5LW9ubHktMzJi user@host';

describeEachDb('NUL characters in requests', (dialect) => {
  const t = useTestApp(dialect);

  it('a login with U+0000 in the e-mail or password: 400, not a 5xx', async () => {
    for (const body of [
      { email: '\u0000', password: '' },
      { email: 'a@example.com', password: 'x\u0000y' },
    ]) {
      const r = await t().request('POST', '/api/v0/users/login/', { body });
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ error: 'bad_request', msg: NUL_MESSAGE });
      expect(r.headers['content-type']).toBe('application/json');
    }
  });

  it('U+0000 anywhere in a JSON body is refused and nothing is written', async () => {
    const u = await t().user();
    const r = await t().request('POST', '/api/v0/ssh/', {
      key: u.apiKey,
      body: { ssh_key: `${ED25519}\u0000` },
    });
    expect(r.status).toBe(400);
    expect(r.body.msg).toBe(NUL_MESSAGE);
    const keys = await t()
      .db.store.db.selectFrom('ssh_keys')
      .select('id')
      .where('user_id', '=', u.id)
      .execute();
    expect(keys).toEqual([]);
    const nested = await t().request('POST', '/api/v0/bundles/', {
      key: u.apiKey,
      body: { gpu_name: { in: ['RTX 4090', 'A\u0000'] } },
    });
    expect(nested.status).toBe(400);
    expect(nested.body.msg).toBe(NUL_MESSAGE);
  });

  it('%00 in the path or the query (api_key included): 400 before authentication', async () => {
    const u = await t().user();
    for (const url of [
      '/api/v0/instances/%00/',
      `/api/v0/instances/?api_key=${u.apiKey}%00`,
      '/api/v0/users/current/?x=%00',
    ]) {
      const r = await t().request('GET', url, { key: url.includes('api_key') ? null : u.apiKey });
      expect(r.status, url).toBe(400);
      expect(r.body.msg, url).toBe(NUL_MESSAGE);
    }
  });

  it('the text "\\u0000" (a backslash, not a NUL) is ordinary input', async () => {
    const r = await t().request('POST', '/api/v0/users/login/', {
      body: { email: 'nobody@example.com', password: '\\u0000' },
    });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBeLessThan(500);
    expect(r.body.msg).not.toBe(NUL_MESSAGE);
  });

  if (dialect === 'postgres') {
    it("recognises PostgreSQL's own refusal of U+0000 (the handler's last line of defence)", async () => {
      const err = await t()
        .db.store.read('select $1::text as v', ['a\u0000b'])
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(isPgNulError(err)).toBe(true);
      expect(isPgNulError(new Error('other'))).toBe(false);
    });
  }
});

it('holdsNul finds U+0000 in strings, arrays and object keys only', () => {
  expect(holdsNul({ a: [1, { b: 'x\u0000' }] })).toBe(true);
  expect(holdsNul({ ['k\u0000']: 1 })).toBe(true);
  expect(holdsNul({ a: ['\\u0000', 0, null, true] })).toBe(false);
});
