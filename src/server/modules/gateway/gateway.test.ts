// The gateway's pure parts: signed tokens, the served ports of an instance, the create body's
// portal, and which requests are gateway requests.
import { describe, expect, it } from 'vitest';
import type { IncomingMessage } from 'node:http';
import { makeToken, readToken } from './gateway.tokens.js';
import { portalOf } from './gateway.portal.js';
import { targetOf, cookieValues } from './gateway.access.js';
import { parsePortal } from '../instance-config/instance-config.parse.js';

const KEY = Buffer.alloc(32, 7);
const req = (url: string, host = 'rig.example.com') =>
  ({ url, headers: { host } }) as unknown as IncomingMessage;

describe('gateway tokens', () => {
  it('reads back what was signed, until it expires', () => {
    const t = makeToken(KEY, { i: 5, u: 9, e: 2000 });
    expect(readToken(KEY, t, 1000)).toEqual({ i: 5, u: 9, e: 2000 });
    expect(readToken(KEY, t, 2000)).toBeNull();
  });
  it('refuses another key, a changed payload and garbage', () => {
    const t = makeToken(KEY, { i: 5, u: 9, e: 2000 });
    expect(readToken(Buffer.alloc(32, 8), t, 0)).toBeNull();
    const [, sig] = t.split('.');
    const forged = `${Buffer.from(JSON.stringify({ i: 6, u: 9, e: 2000 })).toString('base64url')}.${sig}`;
    expect(readToken(KEY, forged, 0)).toBeNull();
    expect(readToken(KEY, 'nonsense', 0)).toBeNull();
    expect(readToken(KEY, '', 0)).toBeNull();
  });
});

describe('served ports', () => {
  it("lists the portal, then the env's -p TCP ports it does not name (owner only)", () => {
    const env = { '-p 8888:8888': '1', '-p 9000/udp': '1', '-p 8080': '1', FOO: 'bar' };
    const portal = JSON.stringify([{ name: 'jupyter', port: 8888, public: true, keep_prefix: false }]);
    expect(portalOf(3, portal, env)).toEqual([
      { name: 'jupyter', port: 8888, public: true, keep_prefix: false, path: '/i/3/8888/' },
      { name: '8080', port: 8080, public: false, keep_prefix: false, path: '/i/3/8080/' },
    ]);
    expect(portalOf(3, 'not json', {})).toEqual([]);
  });
  it("checks the create body's portal", () => {
    expect(parsePortal(undefined)).toEqual([]);
    expect(parsePortal([{ port: 80 }])).toEqual([
      { name: '80', port: 80, public: false, keep_prefix: false },
    ]);
    expect(() => parsePortal([{ port: 0 }])).toThrow(/1 to 65535/);
    expect(() => parsePortal([{ port: 80 }, { port: 80, name: 'x' }])).toThrow(/named twice/);
    expect(() => parsePortal([{ port: 80, public: 'yes' }])).toThrow(/true or false/);
    expect(() => parsePortal([{ port: 80, secret: 1 }])).toThrow(/unknown field/);
    expect(() => parsePortal('8888')).toThrow(/array/);
    expect(() => parsePortal(Array.from({ length: 17 }, (_, k) => ({ port: k + 1 })))).toThrow(/at most 16/);
  });
});

describe('gateway requests', () => {
  it('are /i/ID/PORT/… paths, and ID-PORT.DOMAIN hosts when a domain is set', () => {
    expect(targetOf(req('/i/12/8888/tree?x=1'), null)).toEqual({
      instanceId: 12,
      port: 8888,
      mode: 'path',
      rest: '/tree?x=1',
    });
    expect(targetOf(req('/i/12/8888'), null)?.rest).toBe('');
    expect(targetOf(req('/api/v0/instances/'), null)).toBeNull();
    expect(targetOf(req('/i/abc/8888/'), null)).toBeNull();
    expect(targetOf(req('/lab?x', '12-8888.gw.example.com:443'), 'gw.example.com')).toEqual({
      instanceId: 12,
      port: 8888,
      mode: 'host',
      rest: '/lab?x',
    });
    expect(targetOf(req('/', 'evil-8888.gw.example.com'), 'gw.example.com')).toBeNull();
    expect(targetOf(req('/', '12-8888.gw.example.com'), null)).toBeNull();
  });
  it('reads every value of a cookie', () => {
    expect(cookieValues('a=1; openrig_gw=x; b=2; openrig_gw=y%20z', 'openrig_gw')).toEqual(['x', 'y z']);
    expect(cookieValues(undefined, 'openrig_gw')).toEqual([]);
  });
});
