// What an audit row keeps of a request: the route pattern, path parameters, the query with
// credentials redacted, the names of the body's fields and never a value, the client address.
import { describe, expect, it } from 'vitest';
import {
  auditArgs,
  bodyFieldNames,
  clientAddress,
  MAX_ARGS,
  MAX_ARG_CHARS,
  queryArgs,
  routePattern,
} from './audit.args.js';
import { audited } from './audit.hooks.js';

describe('routePattern', () => {
  it('puts parameters in braces and ends with a slash', () => {
    expect(routePattern('/api/v0/instances/:id')).toBe('/api/v0/instances/{id}/');
    expect(routePattern('/api/v0/instances/:id/ssh/:key_id/')).toBe('/api/v0/instances/{id}/ssh/{key_id}/');
    expect(routePattern('/api/v0/users/login')).toBe('/api/v0/users/login/');
    expect(routePattern('/api/v0/x/:id(^\\d+)')).toBe('/api/v0/x/{id}/');
  });
});

describe('queryArgs', () => {
  it('keeps the query as sent, a repeated name as a list', () => {
    expect(queryArgs('/a?owner=me&ids=1&ids=2&q=%7B%22a%22%3A1%7D')).toEqual({
      owner: 'me',
      ids: ['1', '2'],
      q: '{"a":1}',
    });
    expect(queryArgs('/a')).toBeUndefined();
    expect(queryArgs('/a?')).toBeUndefined();
  });

  it('redacts credentials by their decoded name, as the access log does', () => {
    const q = queryArgs('/a?api_key=or_SECRET1&api%5Fkey=or_SECRET2&%61pi_key=or_SECRET3&CODE=123456&x=1');
    expect(JSON.stringify(q)).not.toContain('SECRET');
    expect(JSON.stringify(q)).not.toContain('123456');
    expect(q).toEqual({ api_key: ['[redacted]', '[redacted]', '[redacted]'], CODE: '[redacted]', x: '1' });
  });

  it('cuts long values and keeps at most MAX_ARGS names', () => {
    const q = queryArgs(`/a?v=${'x'.repeat(500)}`)!;
    expect((q.v as string).length).toBe(MAX_ARG_CHARS + 1);
    const many = queryArgs(`/a?${Array.from({ length: 100 }, (_, i) => `p${i}=1`).join('&')}`)!;
    expect(Object.keys(many)).toHaveLength(MAX_ARGS);
  });
});

describe('bodyFieldNames', () => {
  it('names the top-level fields and never a value', () => {
    const body = { tfa_method: 'totp', code: '482913', env: { HF_TOKEN: 'hf_secretvalue' }, password: 'pw!' };
    const names = bodyFieldNames(body);
    expect(names).toEqual(['tfa_method', 'code', 'env', 'password']);
    const text = JSON.stringify(names);
    for (const v of ['482913', 'hf_secretvalue', 'HF_TOKEN', 'pw!', 'totp']) expect(text).not.toContain(v);
  });

  it('takes the fields of each object of an array body; nothing for no fields', () => {
    expect(bodyFieldNames([{ a: 1 }, { b: 2, a: 3 }, 'x'])).toEqual(['a', 'b']);
    expect(bodyFieldNames(undefined)).toBeUndefined();
    expect(bodyFieldNames({})).toBeUndefined();
    expect(bodyFieldNames('text')).toBeUndefined();
  });
});

describe('auditArgs', () => {
  it('gathers path, query and body names, leaving out what is empty', () => {
    expect(
      auditArgs({ params: { id: '7' }, url: '/api/v0/instances/7/?x=1', body: { state: 'stopped' } }),
    ).toEqual({
      path: { id: '7' },
      query: { x: '1' },
      body: ['state'],
    });
    expect(auditArgs({ params: {}, url: '/api/v0/users/logout/', body: undefined })).toEqual({});
  });
});

describe('clientAddress', () => {
  it('keeps IP addresses, IPv4 in its plain form, and nothing else', () => {
    expect(clientAddress('203.0.113.7')).toBe('203.0.113.7');
    expect(clientAddress('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(clientAddress('2001:DB8::1')).toBe('2001:db8::1');
    expect(clientAddress('not-an-ip')).toBeNull();
    expect(clientAddress(undefined)).toBeNull();
  });
});

describe('audited routes', () => {
  it('writes are, reads, the agent protocol and reads sent as POST are not', () => {
    expect(audited({ method: 'PUT', url: '/api/v0/instances/:id', config: {} })).toBe(true);
    expect(audited({ method: ['GET', 'POST'], url: '/api/v0/x', config: {} })).toBe(true);
    expect(audited({ method: 'GET', url: '/api/v0/instances/:id', config: {} })).toBe(false);
    expect(audited({ method: 'POST', url: '/api/agent/v1/sync', config: {} })).toBe(false);
    expect(
      audited({ method: 'POST', url: '/api/v0/bundles', config: { scope: 'offers', access: 'read' } }),
    ).toBe(false);
  });
});
