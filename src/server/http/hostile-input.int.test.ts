// Hostile requests get a clean, short 4xx in the product's {error, msg} shape and leave nothing
// behind: JSON nested thousands deep, huge bad values, credentials in disguised query names, and
// requests Node's HTTP parser itself refuses (too-large headers, garbage request lines).
import { connect } from 'node:net';
import { PassThrough } from 'node:stream';
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../test/helpers/db.js';
import { useTestApp } from '../../../test/helpers/app.js';
import { buildApp } from '../app.js';
import { MAX_JSON_DEPTH, jsonTooDeep } from './json-limits.js';
import { redactUrl } from './redact.js';

const nested = (depth: number, leaf = '1'): string => '['.repeat(depth) + leaf + ']'.repeat(depth);

/** Sends raw bytes to a listening server and returns what it answered before closing. */
function rawRequest(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1');
    let got = '';
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => (got += d));
    sock.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? resolve(got) : reject(e)));
    sock.on('close', () => resolve(got));
    sock.write(bytes);
  });
}

function parseRaw(text: string): { status: number; contentType: string; body: unknown } {
  const [head, body = ''] = text.split('\r\n\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head ?? '')?.[1]);
  const contentType = /content-type:\s*([^\r\n]+)/i.exec(head ?? '')?.[1] ?? '';
  return { status, contentType, body: JSON.parse(body) };
}

it('jsonTooDeep counts arrays and objects, not brackets inside strings', () => {
  expect(jsonTooDeep(nested(MAX_JSON_DEPTH))).toBe(false);
  expect(jsonTooDeep(nested(MAX_JSON_DEPTH + 1))).toBe(true);
  expect(jsonTooDeep(JSON.stringify({ a: '['.repeat(1000) }))).toBe(false);
  expect(jsonTooDeep(JSON.stringify({ a: '\\"['.repeat(100) }))).toBe(false);
  expect(jsonTooDeep('{"a":'.repeat(40) + '1' + '}'.repeat(40))).toBe(true);
});

it('redactUrl hides credentials by their decoded parameter name', () => {
  for (const name of [
    'api_key',
    'api%5Fkey',
    '%61pi_key',
    'api%5fkey',
    '%61%70%69%5f%6b%65%79',
    'secret',
    'code',
  ]) {
    const out = redactUrl(`/api/v0/users/current/?x=1&${name}=or_SECRETVALUE&y=2`);
    expect(out, name).not.toContain('SECRETVALUE');
    expect(out, name).toContain('x=1');
    expect(out, name).toContain('y=2');
  }
  expect(redactUrl('/api/v0/bundles/?q=abc')).toBe('/api/v0/bundles/?q=abc');
});

describeEachDb('hostile input', (dialect) => {
  const t = useTestApp(dialect);

  it('a body nested 6,000 deep in any search field is a 400 naming the depth limit, never a 500', async () => {
    const u = await t().user();
    const deep = nested(6000);
    const bodies = [
      `{"limit": ${deep}}`,
      `{"order": ${deep}}`,
      `{"type": ${deep}}`,
      `{"allocated_storage": ${deep}}`,
      `{"num_gpus": {"eq": ${deep}}}`,
      `{"gpu_name": {"in": ${deep}}}`,
    ];
    for (const rawBody of bodies) {
      const r = await t().request('POST', '/api/v0/bundles/', {
        key: u.apiKey,
        rawBody,
        headers: { 'content-type': 'application/json' },
      });
      expect(r.status, rawBody.slice(0, 30)).toBe(400);
      expect(r.body.error).toBe('bad_request');
      expect(r.body.msg).toContain(String(MAX_JSON_DEPTH));
    }
    // Every JSON route, not only search: the limit sits in the body parser.
    const ssh = await t().request('POST', '/api/v0/ssh/', {
      key: u.apiKey,
      rawBody: `{"ssh_key": ${deep}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(ssh.status).toBe(400);
    expect(ssh.body.msg).toContain(String(MAX_JSON_DEPTH));
    // The older clients' ?q=JSON search form too.
    const q = await t().request('GET', `/api/v0/bundles/?q=${encodeURIComponent(`{"limit": ${deep}}`)}`, {
      key: u.apiKey,
    });
    expect(q.status).toBe(400);
    expect(q.body.msg).toContain(String(MAX_JSON_DEPTH));
  });

  it('a body at the depth limit is still parsed (and judged by the route)', async () => {
    const u = await t().user();
    const r = await t().request('POST', '/api/v0/bundles/', {
      key: u.apiKey,
      rawBody: `{"limit": ${nested(MAX_JSON_DEPTH - 1)}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(r.status).toBe(400);
    expect(r.body.msg).toMatch(/^Invalid limit/);
  });

  it('an error message quotes at most about 100 characters of a bad value', async () => {
    const u = await t().user();
    const huge = 'x'.repeat(900_000);
    for (const body of [
      { limit: huge },
      { gpu_name: { [huge.slice(0, 5000)]: 1 } },
      { order: [[huge, 'asc']] },
      { [huge.slice(0, 5000)]: { eq: 1 } },
    ]) {
      const r = await t().request('POST', '/api/v0/bundles/', { key: u.apiKey, body });
      expect(r.status).toBe(400);
      expect(r.raw.length).toBeLessThan(400);
    }
    const unknownRoute = await t().request('GET', `/api/v0/${'y'.repeat(5000)}`, { key: u.apiKey });
    expect(unknownRoute.status).toBe(404);
    expect(unknownRoute.raw.length).toBeLessThan(400);
  });

  it('an api_key in a disguised query name authenticates but never reaches the log', async () => {
    const u = await t().user();
    const lines: string[] = [];
    const stream = new PassThrough();
    stream.on('data', (d: Buffer) => lines.push(d.toString()));
    const deps = { ...t().deps, config: { ...t().deps.config, logLevel: 'info' } };
    const app = await buildApp(deps, { logStream: stream });
    try {
      for (const name of ['api%5Fkey', '%61pi_key', 'api_key']) {
        const r = await app.inject({ method: 'GET', url: `/api/v0/users/current/?${name}=${u.apiKey}` });
        expect(r.statusCode, name).toBe(200);
      }
      await new Promise((r) => setImmediate(r));
      const log = lines.join('');
      expect(log).toContain('/api/v0/users/current/');
      expect(log).not.toContain(u.apiKey);
    } finally {
      await app.close();
    }
  });

  it("the HTTP parser's own refusals (431, malformed requests) answer {error, msg}", async () => {
    const deps = t().deps;
    const app = await buildApp(deps, { logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    try {
      const cases: [string, number][] = [
        [`GET /api/v0/users/current/?${'a'.repeat(70_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431],
        [`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(70_000)}\r\n\r\n`, 431],
        ['GARBAGE\r\n\r\n', 400],
        ['POST /api/v0/bundles/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', 400],
        [
          'POST /api/v0/bundles/ HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
          400,
        ],
      ];
      for (const [bytes, status] of cases) {
        const r = parseRaw(await rawRequest(port, bytes));
        expect(r.status, bytes.slice(0, 40)).toBe(status);
        expect(r.contentType).toBe('application/json');
        expect(Object.keys(r.body as object).sort()).toEqual(['error', 'msg']);
      }
    } finally {
      await app.close();
    }
  });
});
