// OPENRIG_TRUST_PROXY: behind a load balancer, anonymous callers are told apart by the client
// address the proxy puts in X-Forwarded-For, and only a proxy named in the setting is believed.
// Without it, the header is ignored (a client cannot choose its own rate-limit bucket).
import { describe, expect, it } from 'vitest';
import { describeEachDb } from '../../../test/helpers/db.js';
import { useTestApp } from '../../../test/helpers/app.js';
import { loadConfig } from '../config.js';

const LIMITS = { OPENRIG_RATE_LIMIT_LOGINS: '2/600' };
const login = (
  app: ReturnType<ReturnType<typeof useTestApp>>['app'],
  remoteAddress: string,
  forwardedFor?: string,
) =>
  app.inject({
    method: 'POST',
    url: '/api/v0/users/login/',
    remoteAddress,
    headers: {
      'content-type': 'application/json',
      ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}),
    },
    payload: JSON.stringify({ username: 'nobody@example.com', password: 'wrong-password' }),
  });

describeEachDb('trusted proxies', (dialect) => {
  const behind = useTestApp(dialect, { ...LIMITS, OPENRIG_TRUST_PROXY: '10.0.0.0/8' });
  const direct = useTestApp(dialect, LIMITS);

  it('counts anonymous logins per forwarded client when the proxy is trusted', async () => {
    const app = behind().app;
    for (let i = 0; i < 2; i++)
      expect((await login(app, '10.0.0.5', '203.0.113.7')).statusCode).not.toBe(429);
    expect((await login(app, '10.0.0.5', '203.0.113.7')).statusCode).toBe(429);
    // Another client behind the same proxy has its own bucket.
    expect((await login(app, '10.0.0.5', '203.0.113.8')).statusCode).not.toBe(429);
    // A caller outside the trusted range is keyed by its own address, whatever it forwards.
    for (let i = 0; i < 2; i++)
      expect((await login(app, '198.51.100.1', `192.0.2.${i}`)).statusCode).not.toBe(429);
    expect((await login(app, '198.51.100.1', '192.0.2.99')).statusCode).toBe(429);
  });

  it('ignores X-Forwarded-For when no proxy is trusted', async () => {
    const app = direct().app;
    for (let i = 0; i < 2; i++)
      expect((await login(app, '10.0.0.6', `203.0.113.${i}`)).statusCode).not.toBe(429);
    const r = await login(app, '10.0.0.6', '203.0.113.50');
    expect(r.statusCode).toBe(429);
    expect(JSON.parse(r.body).error).toBe('rate_limited');
  });
});

describe('OPENRIG_TRUST_PROXY', () => {
  const base = { OPENRIG_SECRET_KEY: 'ab'.repeat(32) };
  const load = (v?: string) =>
    loadConfig(v === undefined ? base : { ...base, OPENRIG_TRUST_PROXY: v }, {
      dataDir: '/tmp/openrig-config-test',
    }).trustProxy;

  it('trusts no proxy by default, and reads addresses, CIDR ranges and range names', () => {
    expect(load()).toBe(false);
    expect(load('')).toBe(false);
    expect(load('10.0.0.0/8, 127.0.0.1,::1,fd00::/8,loopback')).toEqual([
      '10.0.0.0/8',
      '127.0.0.1',
      '::1',
      'fd00::/8',
      'loopback',
    ]);
  });

  it('refuses true, hop counts and malformed entries at start, naming the variable', () => {
    for (const bad of [
      'true',
      '1',
      '10.0.0.0/33',
      '10.0.0.0/8/1',
      'proxy.internal',
      '10.0.0.0/x',
      '::1/129',
    ]) {
      expect(() => load(bad), bad).toThrow(/OPENRIG_TRUST_PROXY/);
    }
  });
});
