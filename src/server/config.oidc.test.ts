// The single sign-on provider list (OPENRIG_OIDC_PROVIDERS or _FILE): a list that cannot work
// stops start-up with a message naming the provider and the field, never the client secret.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from './config.js';
import { DEFAULT_MFA_AMR } from './config.oidc.js';

const base = { OPENRIG_SECRET_KEY: 'ab'.repeat(32), OPENRIG_DATA: '/nonexistent/openrig-config-test' };
const SECRET = 'very-secret-client-secret';
const good = {
  id: 'acme',
  name: 'Acme SSO',
  issuer: 'https://login.acme.example',
  client_id: 'openrig',
  client_secret: SECRET,
  allowed_domains: ['Acme.example'],
  group_mappings: [{ group: 'gpu-users', team: 'research', role: 'member' }],
};
const withProviders = (list: unknown) =>
  loadConfig({ ...base, OPENRIG_OIDC_PROVIDERS: JSON.stringify(list) });

describe('OPENRIG_OIDC_PROVIDERS', () => {
  it('is empty by default: no single sign-on', () => {
    expect(loadConfig(base).oidc).toEqual({ providers: [], stateTtlS: 600 });
  });

  it('takes a provider with its defaults', () => {
    const [p] = withProviders([good]).oidc.providers;
    expect(p).toEqual({
      id: 'acme',
      name: 'Acme SSO',
      issuer: 'https://login.acme.example',
      clientId: 'openrig',
      clientSecret: SECRET,
      scopes: ['openid', 'email', 'profile'],
      allowedDomains: ['acme.example'],
      groupsClaim: 'groups',
      groupMappings: [{ group: 'gpu-users', team: 'research', role: 'member' }],
      trustMfa: false,
      mfaAmr: DEFAULT_MFA_AMR,
    });
  });

  it('reads the list from OPENRIG_OIDC_PROVIDERS_FILE, and refuses both set at once', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-oidc-'));
    try {
      const file = path.join(dir, 'oidc.json');
      writeFileSync(file, JSON.stringify([good]));
      expect(loadConfig({ ...base, OPENRIG_OIDC_PROVIDERS_FILE: file }).oidc.providers[0]!.id).toBe('acme');
      expect(() =>
        loadConfig({ ...base, OPENRIG_OIDC_PROVIDERS_FILE: file, OPENRIG_OIDC_PROVIDERS: '[]' }),
      ).toThrow('Set OPENRIG_OIDC_PROVIDERS or OPENRIG_OIDC_PROVIDERS_FILE, not both');
      expect(() =>
        loadConfig({ ...base, OPENRIG_OIDC_PROVIDERS_FILE: path.join(dir, 'missing.json') }),
      ).toThrow(/OPENRIG_OIDC_PROVIDERS_FILE \(.*missing\.json\) cannot be read/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a list that cannot work, naming the provider and the field, never the secret', () => {
    const cases: [unknown, RegExp][] = [
      ['not json', /OPENRIG_OIDC_PROVIDERS must be a JSON array of providers/],
      [{}, /must be a JSON array/],
      [[{ ...good, id: 'Bad Id' }], /provider 1 \(Bad Id\): id must be 1 to 32 lower-case letters/],
      [[good, good], /provider 2 \(acme\): id is used by another provider/],
      [
        [{ ...good, issuer: 'http://login.acme.example' }],
        /provider 1 \(acme\): issuer must be an https:\/\/ URL/,
      ],
      [[{ ...good, issuer: 'nope' }], /issuer must be a URL/],
      [[{ ...good, client_secret: '' }], /client_secret must be a non-empty string/],
      [[{ ...good, allowed_domains: [] }], /allowed_domains must list the e-mail domains/],
      [[{ ...good, allowed_domains: ['@acme'] }], /"@acme" is not a domain name/],
      [[{ ...good, scopes: ['email'] }], /scopes must be a list of strings with openid/],
      [[{ ...good, group_mappings: [{ group: 'g', team: 't' }] }], /group_mappings\[0\] must be/],
      [[{ ...good, trust_mfa: 'yes' }], /trust_mfa must be true or false/],
      [[{ ...good, clientSecret: 'x' }], /unknown field "clientSecret"/],
    ];
    for (const [list, message] of cases) {
      const env = { ...base, OPENRIG_OIDC_PROVIDERS: typeof list === 'string' ? list : JSON.stringify(list) };
      let err: Error | null = null;
      try {
        loadConfig(env);
      } catch (e) {
        err = e as Error;
      }
      expect(err?.message).toMatch(message);
      expect(err?.message).not.toContain(SECRET);
    }
  });

  it('takes an http:// issuer on a loopback host only, and OPENRIG_OIDC_STATE_TTL_S within its range', () => {
    expect(withProviders([{ ...good, issuer: 'http://127.0.0.1:9000' }]).oidc.providers[0]!.issuer).toBe(
      'http://127.0.0.1:9000',
    );
    expect(
      withProviders([{ ...good, issuer: 'http://localhost:9000/realms/x' }]).oidc.providers,
    ).toHaveLength(1);
    expect(loadConfig({ ...base, OPENRIG_OIDC_STATE_TTL_S: '120' }).oidc.stateTtlS).toBe(120);
    expect(() => loadConfig({ ...base, OPENRIG_OIDC_STATE_TTL_S: '5' })).toThrow(
      'OPENRIG_OIDC_STATE_TTL_S must be a whole number >= 30 and <= 3600 (got "5")',
    );
  });
});
