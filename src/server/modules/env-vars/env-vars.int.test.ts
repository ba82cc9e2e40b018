// Account environment variables on /api/v0/secrets/: create, show, update, delete; each limit;
// bad input that writes nothing; races decided by the database; who may do what; values
// encrypted at rest and never in a log line or an error message.
import { PassThrough } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { scopedKey, useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { ENV_VAR_LIMITS } from '../../../contract/env-var-rules.js';
import { decryptSecret } from '../../crypto.js';
import { buildApp } from '../../app.js';

const P = '/api/v0/secrets/';

/** `n` variables V0, V1 … straight into the table (a stand-in ciphertext): an account near its limit. */
async function fill(t: TestApp, userId: number, n: number): Promise<void> {
  const now = t.clock.now();
  await t.deps.db
    .insertInto('env_vars')
    .values(
      Array.from({ length: n }, (_, i) => ({
        user_id: userId,
        name: `V${i}`,
        value_enc: 'v1.x.y.z',
        created_at: now,
        updated_at: now,
      })),
    )
    .execute();
}

async function rows(t: TestApp, userId: number) {
  return t.deps.db.selectFrom('env_vars').selectAll().where('user_id', '=', userId).orderBy('name').execute();
}

describeEachDb('account environment variables', (dialect) => {
  const t = useTestApp(dialect);
  const call = (method: string, key: string | null, body?: unknown) => t().request(method, P, { key, body });
  const show = async (key: string) => {
    const r = await call('GET', key);
    expect(r.status, r.raw).toBe(200);
    return r.body.secrets as Record<string, string>;
  };

  describe('create, show, update, delete', () => {
    let u: { id: number; apiKey: string };
    beforeAll(async () => {
      u = await t().user();
    });

    it('an account starts with none', async () => {
      const r = await call('GET', u.apiKey);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ success: true, secrets: {} });
    });

    it('creates variables and shows them with their values, by name', async () => {
      const c = await call('POST', u.apiKey, { key: 'HF_TOKEN', value: 'hf_abc 123' });
      expect(c.status, c.raw).toBe(200);
      expect(c.body).toEqual({ success: true, msg: 'Environment variable HF_TOKEN created' });
      // Any string: empty, several lines, non-ASCII, the longest allowed.
      const long = 'x'.repeat(ENV_VAR_LIMITS.value);
      for (const [key, value] of [
        ['EMPTY', ''],
        ['PEM', '-----BEGIN KEY-----\nabc\n-----END KEY-----\n'],
        ['greeting', 'grüß dich ☃'],
        ['_LONG', long],
        ['N'.repeat(ENV_VAR_LIMITS.name), 'max name'],
      ]) {
        const r = await call('POST', u.apiKey, { key, value });
        expect(r.status, `${key}: ${r.raw}`).toBe(200);
      }
      expect(await show(u.apiKey)).toEqual({
        EMPTY: '',
        HF_TOKEN: 'hf_abc 123',
        ['N'.repeat(ENV_VAR_LIMITS.name)]: 'max name',
        PEM: '-----BEGIN KEY-----\nabc\n-----END KEY-----\n',
        _LONG: long,
        greeting: 'grüß dich ☃',
      });
    });

    it('names are case-sensitive: hf_token is another variable than HF_TOKEN', async () => {
      expect((await call('POST', u.apiKey, { key: 'hf_token', value: 'lower' })).status).toBe(200);
      const all = await show(u.apiKey);
      expect(all.hf_token).toBe('lower');
      expect(all.HF_TOKEN).toBe('hf_abc 123');
      expect((await call('DELETE', u.apiKey, { key: 'hf_token' })).status).toBe(200);
    });

    it('a second create of a name is 409 conflict and keeps the first value', async () => {
      const r = await call('POST', u.apiKey, { key: 'HF_TOKEN', value: 'other' });
      expect(r.status).toBe(409);
      expect(r.body).toMatchObject({ success: false, error: 'conflict' });
      expect(r.body.msg).toBe(
        'An environment variable named HF_TOKEN already exists: change its value with update env-var',
      );
      expect((await show(u.apiKey)).HF_TOKEN).toBe('hf_abc 123');
    });

    it('update replaces the value; update of a missing name is 404 and creates nothing', async () => {
      t().clock.advance(1000);
      const before = (await rows(t(), u.id)).find((r) => r.name === 'HF_TOKEN')!;
      const r = await call('PUT', u.apiKey, { key: 'HF_TOKEN', value: 'hf_new' });
      expect(r.status, r.raw).toBe(200);
      expect(r.body).toEqual({ success: true, msg: 'Environment variable HF_TOKEN updated' });
      expect((await show(u.apiKey)).HF_TOKEN).toBe('hf_new');
      const after = (await rows(t(), u.id)).find((x) => x.name === 'HF_TOKEN')!;
      expect(Number(after.updated_at)).toBe(Number(before.updated_at) + 1000);
      expect(Number(after.created_at)).toBe(Number(before.created_at));

      const missing = await call('PUT', u.apiKey, { key: 'NOPE', value: 'x' });
      expect(missing.status).toBe(404);
      expect(missing.body).toMatchObject({
        success: false,
        error: 'not_found',
        msg: 'You have no environment variable named NOPE',
      });
      expect(await show(u.apiKey)).not.toHaveProperty('NOPE');
    });

    it('delete removes it; a second delete is 404', async () => {
      const r = await call('DELETE', u.apiKey, { key: 'EMPTY' });
      expect(r.status, r.raw).toBe(200);
      expect(r.body).toEqual({ success: true, msg: 'Environment variable EMPTY deleted' });
      expect(await show(u.apiKey)).not.toHaveProperty('EMPTY');
      const again = await call('DELETE', u.apiKey, { key: 'EMPTY' });
      expect(again.status).toBe(404);
      expect(again.body).toMatchObject({
        error: 'not_found',
        msg: 'You have no environment variable named EMPTY',
      });
    });

    it("another account neither sees nor changes them: its own list, and 404 for the first one's names", async () => {
      const other = await t().user();
      expect(await show(other.apiKey)).toEqual({});
      expect((await call('PUT', other.apiKey, { key: 'HF_TOKEN', value: 'stolen' })).status).toBe(404);
      expect((await call('DELETE', other.apiKey, { key: 'HF_TOKEN' })).status).toBe(404);
      // The same name is free in every account.
      expect((await call('POST', other.apiKey, { key: 'HF_TOKEN', value: 'theirs' })).status).toBe(200);
      expect((await show(other.apiKey)).HF_TOKEN).toBe('theirs');
      expect((await show(u.apiKey)).HF_TOKEN).toBe('hf_new');
    });
  });

  describe('bad input: a 400 naming the field, and nothing written', () => {
    let u: { id: number; apiKey: string };
    beforeAll(async () => {
      u = await t().user();
      expect((await call('POST', u.apiKey, { key: 'KEEP', value: 'kept' })).status).toBe(200);
    });

    it.each([
      [{ value: 'v' }, 'body.key is required'],
      [{ key: 'A' }, 'body.value is required'],
      [{ key: 'A', value: 5 }, 'body.value must be string'],
      [{ key: ['A'], value: 'v' }, 'body.key must be string'],
      [{ key: '', value: 'v' }, 'key must name the variable'],
      [{ key: '1ABC', value: 'v' }, 'key must be an environment variable name'],
      [{ key: 'A-B', value: 'v' }, 'key must be an environment variable name'],
      [{ key: 'A B', value: 'v' }, 'key must be an environment variable name'],
      [{ key: 'A=B', value: 'v' }, 'key must be an environment variable name'],
      [{ key: 'ÄBC', value: 'v' }, 'key must be an environment variable name'],
      [{ key: 'N'.repeat(ENV_VAR_LIMITS.name + 1), value: 'v' }, 'key must be at most 128 characters'],
      [{ key: 'BIG', value: 'x'.repeat(ENV_VAR_LIMITS.value + 1) }, 'value must be at most 16384 characters'],
    ])('create %#: %s', async (body, msg) => {
      for (const method of ['POST', 'PUT']) {
        const r = await call(method, u.apiKey, body);
        expect(r.status, `${method} ${r.raw}`).toBe(400);
        expect(r.body.error).toBe('bad_request');
        expect(r.body.msg).toContain(msg);
      }
      expect((await rows(t(), u.id)).map((x) => x.name)).toEqual(['KEEP']);
    });

    it('a body that is not an object, or none, is a 400', async () => {
      for (const method of ['POST', 'PUT', 'DELETE']) {
        const none = await t().request(method, P, { key: u.apiKey });
        expect(none.status, method).toBe(400);
        const arr = await call(method, u.apiKey, ['KEEP']);
        expect(arr.status, method).toBe(400);
        expect(arr.body.error).toBe('bad_request');
      }
      const noKey = await call('DELETE', u.apiKey, {});
      expect(noKey.status).toBe(400);
      expect(noKey.body.msg).toBe('body.key is required');
      expect((await rows(t(), u.id)).map((x) => x.name)).toEqual(['KEEP']);
    });

    it('refuses the names the platform sets in every instance, naming the rule', async () => {
      for (const key of [
        'CONTAINER_API_KEY',
        'CONTAINER_ID',
        'PUBLIC_IPADDR',
        'CUDA_VISIBLE_DEVICES',
        'NVIDIA_VISIBLE_DEVICES',
        'OPENRIG_INSTANCE_ID',
        'OPENRIG_ANYTHING',
        'VAST_TCP_PORT_22',
        'VAST_UDP_PORT_5000',
      ]) {
        const r = await call('POST', u.apiKey, { key, value: 'v' });
        expect(r.status, key).toBe(400);
        expect(r.body.msg).toContain(`${key} is set by openrig in every instance`);
      }
      // Near misses are ordinary names.
      for (const key of ['openrig_lower', 'CONTAINER_IDS', 'VAST_CONTAINERLABEL_X', 'HOME']) {
        const r = await call('POST', u.apiKey, { key, value: 'v' });
        expect(r.status, `${key}: ${r.raw}`).toBe(200);
        expect((await call('DELETE', u.apiKey, { key })).status).toBe(200);
      }
      expect((await rows(t(), u.id)).map((x) => x.name)).toEqual(['KEEP']);
    });

    it('no error message ever holds a value, even one given as the name', async () => {
      const secret = 'sk-live-9f8e7d6c5b4a';
      const replies = [
        await call('POST', u.apiKey, { key: secret, value: 'OPENAI_KEY' }),
        await call('POST', u.apiKey, { key: 'KEEP', value: secret }),
        await call('PUT', u.apiKey, { key: 'MISSING', value: secret }),
        await call('POST', u.apiKey, { key: 'BIG', value: secret.repeat(2000) }),
      ];
      expect(replies.map((r) => r.status)).toEqual([400, 409, 404, 400]);
      for (const r of replies) expect(r.raw).not.toContain(secret);
    });
  });

  describe('limits and races', () => {
    it(`at most ${ENV_VAR_LIMITS.perAccount} per account; at the limit a create is a 400 (409 for an existing name)`, async () => {
      const u = await t().user();
      // The first 99 straight into the table, the 100th by the API.
      await fill(t(), u.id, ENV_VAR_LIMITS.perAccount - 1);
      expect((await call('POST', u.apiKey, { key: 'LAST', value: 'v' })).status).toBe(200);
      const over = await call('POST', u.apiKey, { key: 'ONE_MORE', value: 'v' });
      expect(over.status).toBe(400);
      expect(over.body.msg).toBe(
        'At most 100 environment variables per account: delete one (delete env-var) first',
      );
      expect((await call('POST', u.apiKey, { key: 'LAST', value: 'v' })).status).toBe(409);
      // Updates and deletes still work at the limit; a delete makes room.
      expect((await call('PUT', u.apiKey, { key: 'LAST', value: 'w' })).status).toBe(200);
      expect((await call('DELETE', u.apiKey, { key: 'V0' })).status).toBe(200);
      expect((await call('POST', u.apiKey, { key: 'ONE_MORE', value: 'v' })).status).toBe(200);
      expect(await rows(t(), u.id)).toHaveLength(ENV_VAR_LIMITS.perAccount);
    });

    it('of concurrent creates of one name exactly one wins (the unique index); the others get 409', async () => {
      const u = await t().user();
      const replies = await Promise.all(
        Array.from({ length: 8 }, (_, i) => call('POST', u.apiKey, { key: 'RACE', value: `v${i}` })),
      );
      const statuses = replies.map((r) => r.status).sort();
      expect(statuses).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
      const winner = replies.findIndex((r) => r.status === 200);
      expect(await show(u.apiKey)).toEqual({ RACE: `v${winner}` });
    });

    it('concurrent creates of different names never pass the per-account limit', async () => {
      const u = await t().user();
      await fill(t(), u.id, ENV_VAR_LIMITS.perAccount - 2);
      const replies = await Promise.all(
        Array.from({ length: 6 }, (_, i) => call('POST', u.apiKey, { key: `NEW${i}`, value: 'v' })),
      );
      expect(replies.filter((r) => r.status === 200)).toHaveLength(2);
      expect(replies.filter((r) => r.status === 400)).toHaveLength(4);
      expect(await rows(t(), u.id)).toHaveLength(ENV_VAR_LIMITS.perAccount);
    });
  });

  describe('who may', () => {
    let u: { id: number; apiKey: string };
    beforeAll(async () => {
      u = await t().user();
      expect((await call('POST', u.apiKey, { key: 'A', value: '1' })).status).toBe(200);
    });

    it('no key or an unknown one: 401 for every method, nothing changed', async () => {
      for (const key of [null, 'or_not-a-key']) {
        for (const [method, body] of [
          ['GET', undefined],
          ['POST', { key: 'B', value: '2' }],
          ['PUT', { key: 'A', value: '2' }],
          ['DELETE', { key: 'A' }],
        ] as const) {
          const r = await call(method, key, body);
          expect(r.status, `${method} ${key}`).toBe(401);
          expect(r.body.error).toBe('auth_error');
        }
      }
      expect(await show(u.apiKey)).toEqual({ A: '1' });
    });

    it('the user family: read shows them, write changes them; other families get 403', async () => {
      const readOnly = await scopedKey(t(), u.apiKey, 'read_only');
      const userRead = await scopedKey(t(), u.apiKey, { user: 'read' });
      const userWrite = await scopedKey(t(), u.apiKey, { user: 'write' });
      const instances = await scopedKey(t(), u.apiKey, { instances: 'write' });
      const marketplace = await scopedKey(t(), u.apiKey, { api: { user_write: {} } });

      expect(await show(readOnly)).toEqual({ A: '1' });
      expect(await show(userRead)).toEqual({ A: '1' });
      const denied = await call('GET', instances);
      expect(denied.status).toBe(403);
      expect(denied.body.error).toBe('forbidden');
      expect(denied.raw).not.toContain('"1"');

      for (const key of [readOnly, userRead, instances]) {
        for (const [method, body] of [
          ['POST', { key: 'B', value: '2' }],
          ['PUT', { key: 'A', value: '2' }],
          ['DELETE', { key: 'A' }],
        ] as const) {
          const r = await call(method, key, body);
          expect(r.status, method).toBe(403);
          expect(r.body.error).toBe('forbidden');
        }
      }
      expect(await show(u.apiKey)).toEqual({ A: '1' });

      for (const key of [userWrite, marketplace]) {
        expect((await call('POST', key, { key: 'B', value: '2' })).status).toBe(200);
        expect((await call('PUT', key, { key: 'B', value: '3' })).status).toBe(200);
        expect((await call('DELETE', key, { key: 'B' })).status).toBe(200);
      }
    });

    it("an instance's own key (instance_api_key) is refused", async () => {
      const { renter, offers } = await import('../../../../test/helpers/market.js');
      const { cliCreateBody } = await import('../../../../test/compat/official-cli.js');
      const r = await renter(t());
      const [offer] = await offers(t(), 1);
      const c = await t().request('PUT', `/api/v0/asks/${offer}/`, { key: r.apiKey, body: cliCreateBody() });
      expect(c.status, c.raw).toBe(200);
      const instanceKey = c.body.instance_api_key as string;
      expect((await call('GET', instanceKey)).status).toBe(403);
      expect((await call('POST', instanceKey, { key: 'B', value: '2' })).status).toBe(403);
    });
  });

  describe('secrets at rest and in logs', () => {
    it('values are AES-256-GCM encrypted with the server key; the plaintext is nowhere in the row', async () => {
      const u = await t().user();
      const value = 'plain-secret-value-4242';
      expect((await call('POST', u.apiKey, { key: 'S', value })).status).toBe(200);
      const [row] = await rows(t(), u.id);
      expect(row!.name).toBe('S');
      expect(row!.value_enc).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
      expect(JSON.stringify(row)).not.toContain(value);
      expect(decryptSecret(t().config.secretKey, row!.value_enc)).toBe(value);
      // Each write is a fresh encryption (new IV): the same value twice is two different boxes.
      expect((await call('PUT', u.apiKey, { key: 'S', value })).status).toBe(200);
      const [again] = await rows(t(), u.id);
      expect(again!.value_enc).not.toBe(row!.value_enc);
      expect(decryptSecret(t().config.secretKey, again!.value_enc)).toBe(value);
      expect(decryptSecret(Buffer.alloc(32, 1), again!.value_enc)).toBeNull();
    });

    it('no log line holds a value, at the most verbose level, whatever the outcome', async () => {
      const u = await t().user();
      const lines: string[] = [];
      const stream = new PassThrough();
      stream.on('data', (d: Buffer) => lines.push(d.toString()));
      const deps = { ...t().deps, config: { ...t().deps.config, logLevel: 'trace' } };
      const app = await buildApp(deps, { logStream: stream });
      const secret = 'zz-logged-secret-771';
      const send = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', body?: unknown) =>
        app.inject({
          method,
          url: P,
          headers: {
            authorization: `Bearer ${u.apiKey}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          payload: body === undefined ? undefined : JSON.stringify(body),
        });
      try {
        const statuses = [
          (await send('POST', { key: 'L', value: secret })).statusCode,
          (await send('POST', { key: 'L', value: secret })).statusCode,
          (await send('PUT', { key: 'L', value: `${secret}2` })).statusCode,
          (await send('PUT', { key: 'NOPE', value: secret })).statusCode,
          (await send('POST', { key: 'X', value: secret.repeat(1000) })).statusCode,
          (await send('GET')).statusCode,
          (await send('DELETE', { key: 'L' })).statusCode,
        ];
        expect(statuses).toEqual([200, 409, 200, 404, 400, 200, 200]);
        await new Promise((r) => setImmediate(r));
        const log = lines.join('');
        expect(log).toContain('"route":"/api/v0/secrets"');
        expect(log).not.toContain(secret);
      } finally {
        await app.close();
      }
    });
  });
});
