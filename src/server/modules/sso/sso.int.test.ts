// Single sign-on against a real OpenID Connect provider (oidc-provider on a loopback port): the
// whole authorization-code flow, from GET …/start to the session cookie, on both databases.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { generateKeyPair } from 'jose';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { makeTestApp, type TestApp } from '../../../../test/helpers/app.js';
import {
  resign,
  startTestProvider,
  walk,
  type OidcTestUser,
  type TestProvider,
} from '../../../../test/helpers/oidc.js';
import { enableTotp } from '../two-factor/two-factor.testkit.js';
import { totpAt } from '../two-factor/two-factor.codes.js';
import { addMember, createTeamFor } from '../teams/teams.service.js';

const PUBLIC_URL = 'http://127.0.0.1:8080';
const CALLBACK = (id: string) => `${PUBLIC_URL}/api/v0/auth/oidc/${id}/callback`;

function providersJson(op: TestProvider) {
  const base = {
    issuer: op.issuer,
    client_id: op.clientId,
    client_secret: op.clientSecret,
    scopes: ['openid', 'email', 'profile', 'groups'],
    allowed_domains: ['acme.test'],
    group_mappings: [
      { group: 'gpu-admins', team: 'research', role: 'manager' },
      { group: 'gpu-users', team: 'research', role: 'member' },
      { group: 'ops', team: 'operations', role: 'member' },
      // Mappings the teams cannot take: they are skipped, and the sign-in goes on.
      { group: 'gpu-users', team: 'no-such-team', role: 'member' },
      { group: 'ops', team: 'ops-lab', role: 'no-such-role' },
    ],
  };
  return JSON.stringify([
    { ...base, id: 'acme', name: 'Acme SSO' },
    { ...base, id: 'acme-trusted', name: 'Acme (trusted MFA)', trust_mfa: true },
  ]);
}

describeEachDb('single sign-on (OpenID Connect)', (dialect) => {
  let op: TestProvider;
  let t: TestApp;
  let n = 0;

  beforeAll(async () => {
    op = await startTestProvider({ redirectUris: [CALLBACK('acme'), CALLBACK('acme-trusted')] });
    // Rate limits off: these tests sign in far more often than a person would (the routes are in
    // the logins family, platform.rate-limit.ts).
    t = await makeTestApp(dialect, {
      OPENRIG_PUBLIC_URL: PUBLIC_URL,
      OPENRIG_OIDC_PROVIDERS: providersJson(op),
      OPENRIG_RATE_LIMITS: 'off',
    });
    // Teams are made by people; sign-ins only join and leave them.
    const owner = await t.user();
    for (const name of ['research', 'operations', 'ops-lab'])
      await createTeamFor(t.deps.db, owner.id, name, t.clock.now());
  });
  afterAll(async () => {
    await t?.app.close();
    await t?.db.cleanup();
    await op?.close();
  });

  const person = (over: Partial<OidcTestUser> = {}): OidcTestUser => {
    n++;
    return {
      sub: `sub-${n}-${Date.now()}`,
      email: `person${n}.${dialect}@acme.test`,
      email_verified: true,
      name: `Person ${n}`,
      ...over,
    };
  };

  /** GET …/start: the provider's URL and the binding cookie's state. */
  async function start(provider = 'acme') {
    const r = await t.app.inject({ method: 'GET', url: `/api/v0/auth/oidc/${provider}/start` });
    expect(r.statusCode).toBe(302);
    const cookie = String(r.headers['set-cookie']);
    const state = /openrig_oidc=([^;]+)/.exec(cookie)![1]!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    return { location: String(r.headers.location), state };
  }

  async function callback(url: URL, state: string | null) {
    const r = await t.app.inject({
      method: 'GET',
      url: `${url.pathname}${url.search}`,
      headers: state ? { cookie: `openrig_oidc=${state}` } : {},
    });
    const location = String(r.headers.location ?? '');
    const session = /openrig_session=([^;]+)/.exec(String(r.headers['set-cookie'] ?? ''))?.[1] ?? null;
    return { status: r.statusCode, location, session };
  }

  /** The whole flow as a browser runs it, for the provider's next login `who`. */
  async function signIn(who: OidcTestUser, provider = 'acme') {
    op.who = who;
    const s = await start(provider);
    const back = await walk(s.location, CALLBACK(provider));
    return { ...(await callback(back, s.state)), back, state: s.state };
  }

  async function me(session: string) {
    return t.request('GET', '/api/v0/users/current/', { headers: { cookie: `openrig_session=${session}` } });
  }

  async function teamsOf(userId: number) {
    const rows = await t.deps.db
      .selectFrom('team_members')
      .innerJoin('teams', 'teams.id', 'team_members.team_id')
      .select(['teams.name', 'team_members.role'])
      .where('team_members.user_id', '=', userId)
      .orderBy('teams.name')
      .execute();
    return rows.map((r) => `${r.name}:${r.role}`);
  }

  it('lists the configured providers by display name, with no secret', async () => {
    const r = await t.request('GET', '/api/v0/auth/oidc/providers');
    expect(r.status).toBe(200);
    expect(r.body.providers).toEqual([
      { id: 'acme', name: 'Acme SSO', start_url: '/api/v0/auth/oidc/acme/start' },
      { id: 'acme-trusted', name: 'Acme (trusted MFA)', start_url: '/api/v0/auth/oidc/acme-trusted/start' },
    ]);
    expect(r.raw).not.toContain(op.clientSecret);
  });

  it('sends the browser to the provider with PKCE (S256), state and nonce, and stores only the state hash', async () => {
    const s = await start();
    const url = new URL(s.location);
    expect(url.origin).toBe(op.issuer);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    expect(url.searchParams.get('state')).toBe(s.state);
    expect(url.searchParams.get('nonce')).toMatch(/^[\w-]{43}$/);
    expect(url.searchParams.get('redirect_uri')).toBe(CALLBACK('acme'));
    const rows = await t.deps.db.selectFrom('sso_states').selectAll().execute();
    expect(rows.some((r) => r.state_hash === s.state)).toBe(false);
    expect(rows.filter((r) => r.used_at === null).length).toBeGreaterThan(0);
  });

  it('an unknown provider is a 404', async () => {
    const r = await t.request('GET', '/api/v0/auth/oidc/nope/start');
    expect(r.status).toBe(404);
  });

  it('a first sign-in makes the account and puts it in the team its group maps to, with the mapped role', async () => {
    const who = person({ groups: ['gpu-users', 'unmapped-group'] });
    const r = await signIn(who);
    expect(r.status).toBe(303);
    expect(r.location).toBe('/search');
    expect(r.session).toBeTruthy();
    const u = await me(r.session!);
    expect(u.status).toBe(200);
    expect(u.body).toMatchObject({
      email: who.email,
      email_verified: true,
      full_name: who.name,
      is_admin: false,
    });
    expect(await teamsOf(u.body.id)).toEqual(['research:member']);
    // An SSO account holds API keys like any other: its session makes one.
    const k = await t.request('POST', '/api/v0/auth/apikeys/', {
      headers: { cookie: `openrig_session=${r.session}`, 'x-openrig-csrf': '1' },
      body: { name: 'ci' },
    });
    expect(k.status).toBe(200);
  });

  it('keeps mapped teams in step with the groups at each sign-in, and never touches teams the mapping does not name', async () => {
    const who = person({ groups: ['gpu-admins', 'gpu-users', 'ops'] });
    const first = await signIn(who);
    const id = (await me(first.session!)).body.id as number;
    // The first mapping listed wins: gpu-admins before gpu-users.
    expect(await teamsOf(id)).toEqual(['operations:member', 'research:manager']);
    // A team openrig itself gave, which the mapping does not name.
    const other = await createTeamFor(t.deps.db, (await t.user()).id, `own-${dialect}`, t.clock.now());
    await addMember(t.deps.db, other.id, id, 'member', t.clock.now());
    const again = await signIn({ ...who, groups: ['gpu-users'] });
    expect(again.location).toBe('/search');
    expect(await teamsOf(id)).toEqual([`own-${dialect}:member`, 'research:member']);
    await signIn({ ...who, groups: [] });
    expect(await teamsOf(id)).toEqual([`own-${dialect}:member`]);
  });

  it('refuses an ID token signed by another key, and makes no account', async () => {
    const { privateKey: other } = await generateKeyPair('RS256', { extractable: true });
    op.tamper = (idt) => resign(idt, other);
    try {
      const who = person();
      const r = await signIn(who);
      expect(r.location).toBe('/signin#sso_error=token_invalid');
      expect(r.session).toBeNull();
      expect(
        await t.deps.db.selectFrom('users').select('id').where('email', '=', who.email!).executeTakeFirst(),
      ).toBeUndefined();
    } finally {
      op.tamper = null;
    }
  });

  it('refuses an ID token for another audience, though signed by the provider', async () => {
    op.tamper = (idt) => resign(idt, op.signingKey, (c) => ({ ...c, aud: 'someone-else' }));
    try {
      const r = await signIn(person());
      expect(r.location).toBe('/signin#sso_error=token_invalid');
      expect(r.session).toBeNull();
    } finally {
      op.tamper = null;
    }
  });

  it('refuses an expired ID token, and one whose nonce is not this sign-in’s', async () => {
    op.tamper = (idt) =>
      resign(idt, op.signingKey, (c) => ({
        ...c,
        exp: Math.floor(Date.now() / 1000) - 600,
        iat: Math.floor(Date.now() / 1000) - 1200,
      }));
    try {
      expect((await signIn(person())).location).toBe('/signin#sso_error=token_invalid');
      op.tamper = (idt) => resign(idt, op.signingKey, (c) => ({ ...c, nonce: 'another-sign-ins-nonce' }));
      expect((await signIn(person())).location).toBe('/signin#sso_error=token_invalid');
    } finally {
      op.tamper = null;
    }
  });

  it('a state works once: the same callback replayed is refused and makes no second session', async () => {
    const r = await signIn(person());
    expect(r.session).toBeTruthy();
    const sessionsBefore = await t.deps.db.selectFrom('sessions').select('id').execute();
    const replay = await callback(r.back, r.state);
    expect(replay.location).toBe('/signin#sso_error=state_invalid');
    expect(replay.session).toBeNull();
    expect((await t.deps.db.selectFrom('sessions').select('id').execute()).length).toBe(
      sessionsBefore.length,
    );
  });

  it('a state replayed concurrently signs in exactly once', async () => {
    op.who = person();
    const s = await start();
    const back = await walk(s.location, CALLBACK('acme'));
    const results = await Promise.all(Array.from({ length: 5 }, () => callback(back, s.state)));
    expect(results.filter((r) => r.session !== null).length).toBe(1);
    expect(results.filter((r) => r.location === '/signin#sso_error=state_invalid').length).toBe(4);
  });

  it('an expired state is refused', async () => {
    op.who = person();
    const s = await start();
    const back = await walk(s.location, CALLBACK('acme'));
    t.clock.advance(601_000);
    const r = await callback(back, s.state);
    expect(r.location).toBe('/signin#sso_error=state_invalid');
  });

  it('a callback without the browser binding cookie is refused (another browser’s sign-in)', async () => {
    op.who = person();
    const s = await start();
    const back = await walk(s.location, CALLBACK('acme'));
    expect((await callback(back, null)).location).toBe('/signin#sso_error=state_mismatch');
    const other = await start();
    expect((await callback(back, other.state)).location).toBe('/signin#sso_error=state_mismatch');
  });

  it('refuses an e-mail domain that is not allowed, and an unverified e-mail, making no account', async () => {
    const outsider = person({ email: `someone${n}@elsewhere.test` });
    const r = await signIn(outsider);
    expect(r.location).toBe('/signin#sso_error=domain_not_allowed');
    expect(r.session).toBeNull();
    // A look-alike domain is not the allowed one.
    expect((await signIn(person({ email: `x${n}@evilacme.test` }))).location).toBe(
      '/signin#sso_error=domain_not_allowed',
    );
    const unverified = person({ email_verified: false });
    expect((await signIn(unverified)).location).toBe('/signin#sso_error=email_unverified');
    for (const e of [outsider.email!, unverified.email!])
      expect(
        await t.deps.db.selectFrom('users').select('id').where('email', '=', e).executeTakeFirst(),
      ).toBeUndefined();
  });

  it('an account with 2FA goes to the 2FA step; a trusted provider’s multi-factor sign-in skips it', async () => {
    const who = person({ amr: ['pwd', 'mfa'] });
    const first = await signIn({ ...who, amr: ['pwd'] });
    const u = (await me(first.session!)).body as { id: number; email: string };
    const key = (
      await t.request('POST', '/api/v0/auth/apikeys/', {
        headers: { cookie: `openrig_session=${first.session}`, 'x-openrig-csrf': '1' },
        body: { name: 'tfa-setup' },
      })
    ).body.key as string;
    const totp = await enableTotp(t, key, u.email);

    // amr says mfa, but this provider is not trusted for it: the 2FA step applies.
    const r = await signIn(who);
    expect(r.session).toBeNull();
    expect(r.location).toMatch(/^\/signin#sso_tfa=/);
    const frag = new URLSearchParams(r.location.slice('/signin#'.length));
    const methods = JSON.parse(frag.get('methods')!) as { method: string; id: number }[];
    expect(methods.map((m) => m.method)).toEqual(['totp']);
    const done = await t.request('POST', '/api/v0/tfa/', {
      body: {
        tfa_method: 'totp',
        tfa_method_id: totp.id,
        code: totpAt(totp.secret, t.clock.now()),
        secret: frag.get('sso_tfa'),
      },
    });
    expect(done.status).toBe(200);
    expect(String(done.headers['set-cookie'])).toMatch(/openrig_session=/);

    // Trusted provider, but amr shows a password alone: the 2FA step still applies.
    const weak = await signIn({ ...who, amr: ['pwd'] }, 'acme-trusted');
    expect(weak.session).toBeNull();
    expect(weak.location).toMatch(/^\/signin#sso_tfa=/);

    // Trusted provider and amr says mfa: signed in directly.
    const strong = await signIn(who, 'acme-trusted');
    expect(strong.location).toBe('/search');
    expect((await me(strong.session!)).body.id).toBe(u.id);
  });

  it('a later sign-in finds the account by its subject, even after the provider changes the e-mail', async () => {
    const who = person();
    const first = await signIn(who);
    const id = (await me(first.session!)).body.id;
    const renamed = await signIn({ ...who, email: `renamed${n}.${dialect}@acme.test` });
    expect((await me(renamed.session!)).body.id).toBe(id);
  });
});
