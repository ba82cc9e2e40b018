import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ApiError, NetworkError, OpenrigClient, newIdempotencyKey } from './client.js';

type Call = {
  url: string;
  method: string;
  auth: string | undefined;
  body: unknown;
  headers: Record<string, string>;
};

function fakeFetch(answer: (c: Call) => { status: number; body?: unknown; text?: string }) {
  const calls: Call[] = [];
  const f = (async (input: string | URL | Request, init?: RequestInit) => {
    const headers = (init?.headers ?? {}) as Record<string, string>;
    const c: Call = {
      url: input instanceof Request ? input.url : input.toString(),
      method: init?.method ?? 'GET',
      auth: headers.authorization,
      body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined,
      headers,
    };
    calls.push(c);
    const a = answer(c);
    const text = a.text ?? (a.body === undefined ? '' : JSON.stringify(a.body));
    return new Response(text, { status: a.status, headers: { 'content-type': 'application/json' } });
  }) as typeof fetch;
  return { f, calls };
}

describe('the typed client', () => {
  it('sends the API key as Bearer to the API paths and returns the body', async () => {
    const { f, calls } = fakeFetch(() => ({
      status: 200,
      body: { instances: { id: 3, actual_status: 'running' } },
    }));
    const c = new OpenrigClient({ url: 'http://h:1/', apiKey: 'k1', fetch: f });
    expect(await c.getInstance(3)).toEqual({ id: 3, actual_status: 'running' });
    expect(calls[0]).toMatchObject({
      url: 'http://h:1/api/v0/instances/3/?owner=me',
      method: 'GET',
      auth: 'Bearer k1',
    });
    expect(c.lastRaw).toBe('{"instances":{"id":3,"actual_status":"running"}}');
  });

  it('creates instances with PUT /asks/ID/, client_id me and an idempotency key', async () => {
    const { f, calls } = fakeFetch(() => ({
      status: 200,
      body: { success: true, new_contract: 9, instance_api_key: 'x' },
    }));
    const c = new OpenrigClient({ url: 'http://h', apiKey: 'k', fetch: f });
    expect((await c.createInstance(5, { image: 'img', disk: 10 })).new_contract).toBe(9);
    expect(calls[0]).toMatchObject({
      url: 'http://h/api/v0/asks/5/',
      method: 'PUT',
      body: { client_id: 'me', image: 'img', disk: 10 },
    });
    expect(calls[0]!.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('sends DELETE with a {} body, as existing clients do', async () => {
    const { f, calls } = fakeFetch(() => ({ status: 200, body: { success: true } }));
    await new OpenrigClient({ url: 'http://h', apiKey: 'k', fetch: f }).destroyInstance(4);
    expect(calls[0]).toMatchObject({ method: 'DELETE', body: {} });
  });

  it('turns {error, msg} into an ApiError carrying the server msg', async () => {
    const { f } = fakeFetch(() => ({
      status: 422,
      body: { error: 'bad_request', msg: 'sdate must be in the future' },
    }));
    const c = new OpenrigClient({ url: 'http://h', apiKey: 'k', fetch: f });
    const err = await c.scheduleMaintenanceBatch({ machine_ids: [1], sdate: 1 }).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 422, code: 'bad_request', message: 'sdate must be in the future' });
  });

  it('treats a 200 with success false as a failure, except where entries carry the outcome', async () => {
    const { f } = fakeFetch(() => ({ status: 200, body: { success: false, msg: 'nope' } }));
    const c = new OpenrigClient({ url: 'http://h', apiKey: 'k', fetch: f });
    await expect(c.setInstanceState(1, 'stopped')).rejects.toThrow('nope');
    await expect(c.scheduleMaintenanceBatch({ machine_ids: [1], sdate: 1 })).resolves.toMatchObject({
      success: false,
    });
  });

  it('refuses a 2xx that is not JSON (a wrong --url), and reads an empty body as {}', async () => {
    const html = fakeFetch(() => ({ status: 200, text: '<html>hello</html>' }));
    await expect(
      new OpenrigClient({ url: 'http://h', apiKey: 'k', fetch: html.f }).listInstances(),
    ).rejects.toThrow('did not answer with JSON');
    const empty = fakeFetch(() => ({ status: 200, text: '' }));
    await expect(
      new OpenrigClient({ url: 'http://h', apiKey: 'k', fetch: empty.f }).destroyInstance(1),
    ).resolves.toEqual({});
  });

  it('reports an unreachable server as a NetworkError', async () => {
    const c = new OpenrigClient({ url: 'http://127.0.0.1:1', apiKey: 'k' });
    await expect(c.currentUser()).rejects.toBeInstanceOf(NetworkError);
  });

  it.each([
    [404, 'Session expired. Please log in again.'],
    [401, 'Invalid user key'],
  ])('falls back from the session key to the API key on %i "%s"', async (status, msg) => {
    const { f, calls } = fakeFetch((c) =>
      c.auth === 'Bearer sess'
        ? { status, body: { error: 'auth_error', msg } }
        : { status: 200, body: { id: 1, email: 'e' } },
    );
    const reasons: string[] = [];
    const c = new OpenrigClient({
      url: 'http://h',
      apiKey: 'key',
      sessionKey: 'sess',
      fetch: f,
      onSessionFallback: (r) => reasons.push(r),
    });
    expect(await c.currentUser()).toEqual({ id: 1, email: 'e' });
    expect(calls.map((x) => x.auth)).toEqual(['Bearer sess', 'Bearer key']);
    expect(reasons).toEqual([msg]);
    await c.currentUser();
    expect(calls.map((x) => x.auth)).toEqual(['Bearer sess', 'Bearer key', 'Bearer key']);
  });

  it('does not fall back on other refusals', async () => {
    const { f, calls } = fakeFetch(() => ({ status: 404, body: { error: 'not_found', msg: 'Not found' } }));
    const c = new OpenrigClient({ url: 'http://h', apiKey: 'key', sessionKey: 'sess', fetch: f });
    await expect(c.getApiKey(1)).rejects.toThrow('Not found');
    expect(calls.length).toBe(1);
  });
});

describe('the cookie-session client (the console)', () => {
  it('sends the CSRF header on writes only, the cookie with same-origin credentials, and never an Authorization header', async () => {
    const inits: RequestInit[] = [];
    const { f, calls } = fakeFetch((c) =>
      c.method === 'GET'
        ? { status: 200, body: { instances_found: 0, instances: [] } }
        : { status: 200, body: { success: true } },
    );
    const spy = ((input: string | URL | Request, init?: RequestInit) => {
      inits.push(init ?? {});
      return f(input, init);
    }) as typeof fetch;
    const c = new OpenrigClient({ url: 'http://console.test', cookieSession: true, fetch: spy });
    await c.listInstances();
    await c.setInstanceState(3, 'stopped');
    await c.destroyInstance(3);
    await c.createEnvVar('A', 'b');
    await c.logout();
    expect(calls.map((x) => x.method)).toEqual(['GET', 'PUT', 'DELETE', 'POST', 'POST']);
    expect(calls.map((x) => x.headers['x-openrig-csrf'])).toEqual([undefined, '1', '1', '1', '1']);
    for (const x of calls) {
      expect(Object.keys(x.headers).map((h) => h.toLowerCase())).not.toContain('authorization');
    }
    expect(inits.map((i) => i.credentials)).toEqual(Array(5).fill('same-origin'));
  });

  it('sends no CSRF header and no cookie credentials with a key', async () => {
    const inits: RequestInit[] = [];
    const { f, calls } = fakeFetch(() => ({ status: 200, body: { success: true } }));
    const spy = ((input: string | URL | Request, init?: RequestInit) => {
      inits.push(init ?? {});
      return f(input, init);
    }) as typeof fetch;
    await new OpenrigClient({ url: 'http://h', apiKey: 'k', fetch: spy }).destroyInstance(1);
    expect(calls[0]!.headers['x-openrig-csrf']).toBeUndefined();
    expect(calls[0]!.auth).toBe('Bearer k');
    expect(inits[0]!.credentials).toBeUndefined();
  });

  it('refuses a key in cookie-session mode', () => {
    expect(() => new OpenrigClient({ url: 'http://h', cookieSession: true, apiKey: 'k' })).toThrow();
  });

  it('says the server cannot be reached, as the console words it, as an ApiError of status 0', async () => {
    const down = (async () => {
      throw new TypeError('Failed to fetch');
    }) as typeof fetch;
    const err = await new OpenrigClient({ url: 'http://h', cookieSession: true, fetch: down })
      .currentUser()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toBeInstanceOf(NetworkError);
    expect(err).toMatchObject({
      status: 0,
      code: 'network',
      message: 'The server cannot be reached. Check your connection and retry.',
    });
  });

  it('reads a result URL on its own origin', async () => {
    const { f, calls } = fakeFetch(() => ({ status: 200, text: 'log line' }));
    const c = new OpenrigClient({ url: 'http://console.test', cookieSession: true, fetch: f });
    expect(await c.readResult('http://elsewhere:8080/api/v0/results/ab/?x=1')).toEqual({
      status: 200,
      text: 'log line',
    });
    expect(calls[0]!.url).toBe('http://console.test/api/v0/results/ab/?x=1');
  });

  it('calls the trust, benchmark and payout routes as the API writes them', async () => {
    const { f, calls } = fakeFetch((c) => ({
      status: 200,
      body: c.url.includes('/trust/machines/') ? { machines: [{ machine_id: 4 }] } : {},
    }));
    const c = new OpenrigClient({ url: 'http://h:1', apiKey: 'k', fetch: f });
    await c.machineReliability(4);
    await c.machineVerification(4);
    await c.machineReports(4);
    await c.reportMachine(4, 'gpu', 'no GPU');
    expect(await c.hostTrust()).toEqual([{ machine_id: 4 }]);
    await c.searchBenchmarks({ machine_id: { in: [4, 5] }, name: { eq: 'cpu_score' } }, 50);
    await c.myPayouts('paid');
    await c.setPayoutDestination('internal', 'CC-1');
    await c.setPayoutDestination('none', 'ignored');
    expect(calls.map((x) => `${x.method} ${x.url.replace('http://h:1', '')}`)).toEqual([
      'GET /api/v0/machines/4/reliability/',
      'GET /api/v0/machines/4/verification',
      'GET /api/v0/machines/4/reports/',
      'POST /api/v0/machines/4/reports/',
      'GET /api/v0/trust/machines/',
      `GET /api/v0/benchmarks?select_filters=${encodeURIComponent('{"machine_id":{"in":[4,5]},"name":{"eq":"cpu_score"}}')}&limit=50`,
      'GET /api/v0/payouts/?status=paid',
      'PUT /api/v0/payouts/destination/',
      'PUT /api/v0/payouts/destination/',
    ]);
    expect(calls[3]!.body).toEqual({ problem: 'gpu', message: 'no GPU' });
    expect(calls[7]!.body).toEqual({ method: 'internal', destination: 'CC-1' });
    expect(calls[8]!.body).toEqual({ method: 'none' });
  });

  it('makes version-4 idempotency keys', () => {
    const k = newIdempotencyKey();
    expect(k).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(newIdempotencyKey()).not.toBe(k);
  });
});

describe('the client in the browser', () => {
  it('imports no Node module and reads no Node global, since the console bundles it', () => {
    const dir = new URL('.', import.meta.url);
    const files = readdirSync(dir).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    expect(files).toContain('client.ts');
    for (const f of files) {
      const text = readFileSync(new URL(f, dir), 'utf8');
      expect(text, f).not.toMatch(/from ['"]node:|require\(|\bprocess\.|\bBuffer\b|\b__dirname\b/);
    }
  });
});
