import { describe, expect, it } from 'vitest';
import { familyOf, rateLimitHeaders, windowAt } from './platform.rate-limit.js';
import { loadConfig } from '../../config.js';

describe('rate-limit route families', () => {
  it.each([
    ['POST', '/api/v0/tfa/sms/', 'codeSends'],
    ['POST', '/api/v0/tfa/sms/resend', 'codeSends'],
    ['POST', '/api/v0/tfa/email/', 'codeSends'],
    ['POST', '/api/v0/tfa/test/', 'codeSends'],
    ['POST', '/api/v0/tfa/resend', 'codeSends'],
    ['POST', '/api/v0/tfa/authorize-new-method/', 'codeSends'],
    ['POST', '/api/v0/users/login/', 'logins'],
    ['POST', '/api/v0/tfa/', 'logins'],
    ['POST', '/api/v0/tfa', 'logins'],
    ['GET', '/api/v0/auth/oidc/:provider/start', 'logins'],
    ['GET', '/api/v0/auth/oidc/:provider/callback', 'logins'],
    ['PUT', '/api/v0/asks/:offer_id/', 'creates'],
    ['POST', '/api/v0/asks/:id', 'creates'],
    ['POST', '/api/v0/bundles/', 'search'],
  ] as const)('%s %s is %s', (method, url, family) => {
    expect(familyOf(method, url)).toBe(family);
  });

  it.each([
    ['GET', '/api/v0/instances/:id/'],
    ['DELETE', '/api/v0/tfa/'],
    ['PUT', '/api/v0/tfa/authorize-new-method/'],
    ['GET', '/api/v0/tfa/status/'],
    ['GET', '/api/v0/auth/oidc/providers'],
    ['GET', '/api/v0/asks/:id/'],
    ['POST', '/api/v0/bundles/extra'],
    ['POST', undefined],
  ] as const)('%s %s is not limited', (method, url) => {
    expect(familyOf(method, url)).toBeNull();
  });
});

describe('fixed windows and headers', () => {
  it('puts a time in its window and counts seconds to the reset', () => {
    expect(windowAt(125_000, { limit: 5, windowS: 60 })).toEqual({ windowStart: 120_000, resetS: 55 });
    expect(windowAt(120_000, { limit: 5, windowS: 60 })).toEqual({ windowStart: 120_000, resetS: 60 });
    expect(windowAt(179_999, { limit: 5, windowS: 60 }).resetS).toBe(1);
  });

  it('writes the draft-ietf-httpapi-ratelimit-headers structured fields', () => {
    expect(rateLimitHeaders('search', { limit: 120, windowS: 60 }, 1, 42)).toEqual({
      'ratelimit-policy': '"search";q=120;w=60',
      ratelimit: '"search";r=119;t=42',
    });
    expect(rateLimitHeaders('logins', { limit: 3, windowS: 60 }, 9, 5).ratelimit).toBe('"logins";r=0;t=5');
  });
});

describe('rate-limit configuration', () => {
  const base = { OPENRIG_SECRET_KEY: 'ab'.repeat(32) };
  it('has documented defaults and reads LIMIT/WINDOW overrides', () => {
    const c = loadConfig(base, { dataDir: '/tmp/openrig-config-test' });
    expect(c.rateLimits).toEqual({
      enabled: true,
      codeSends: { limit: 10, windowS: 600 },
      logins: { limit: 20, windowS: 60 },
      creates: { limit: 30, windowS: 60 },
      search: { limit: 120, windowS: 60 },
    });
    const o = loadConfig(
      { ...base, OPENRIG_RATE_LIMIT_SEARCH: '5/10', OPENRIG_RATE_LIMITS: 'off' },
      { dataDir: '/tmp/openrig-config-test' },
    );
    expect(o.rateLimits.search).toEqual({ limit: 5, windowS: 10 });
    expect(o.rateLimits.enabled).toBe(false);
  });

  it('refuses a malformed threshold at start', () => {
    expect(() =>
      loadConfig({ ...base, OPENRIG_RATE_LIMIT_LOGINS: 'lots' }, { dataDir: '/tmp/openrig-config-test' }),
    ).toThrow(/OPENRIG_RATE_LIMIT_LOGINS/);
    expect(() =>
      loadConfig({ ...base, OPENRIG_RATE_LIMIT_LOGINS: '0/60' }, { dataDir: '/tmp/openrig-config-test' }),
    ).toThrow(/LIMIT\/WINDOW/);
  });
});
