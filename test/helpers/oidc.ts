// A real OpenID Connect provider for the single sign-on tests: oidc-provider on a loopback port,
// with one confidential client, its own RS256 signing key, and a login step that signs in whoever
// the test names next (`who`), with the `amr` the test gives, without a form. `tamper` rewrites the
// ID token its token endpoint returns (a forged signature, another audience), as a hostile or
// broken provider would. `walk` follows the browser's redirects from the authorization URL to the
// provider's redirect back to openrig, keeping the provider's cookies like a browser.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, decodeJwt, decodeProtectedHeader, type CryptoKey } from 'jose';
import Provider from 'oidc-provider';

export interface OidcTestUser {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
  groups?: string[];
  amr?: string[];
}

export interface TestProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Who the next login step signs in. */
  who: OidcTestUser;
  /** Rewrites the ID token of each token response; null: leave it. */
  tamper: ((idToken: string) => Promise<string>) | null;
  /** The key the provider signs with, and its kid. */
  signingKey: CryptoKey;
  kid: string;
  close(): Promise<void>;
}

export async function startTestProvider(opts: { redirectUris: string[] }): Promise<TestProvider> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = 'test-key-1';
  const jwk = { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const t: TestProvider = {
    issuer,
    clientId: 'openrig-test',
    clientSecret: 'client-secret-for-tests-only-0123456789',
    who: { sub: 'nobody' },
    tamper: null,
    signingKey: privateKey,
    kid,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: t.clientId,
        client_secret: t.clientSecret,
        redirect_uris: opts.redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: ['oidc-test-cookie-key'] },
    scopes: ['openid', 'email', 'profile', 'groups'],
    claims: {
      // amr: the login's authentication methods (RFC 8176), as the login step gives them, in
      // every ID token (as the providers that report it do).
      openid: ['sub', 'amr'],
      email: ['email', 'email_verified'],
      profile: ['name'],
      groups: ['groups'],
    },
    // ID tokens carry the scopes' claims (as most providers' do), not only the UserInfo reply.
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    pkce: { required: () => true },
    ttl: {
      Interaction: 600,
      Grant: 3600,
      Session: 3600,
      AccessToken: 600,
      IdToken: 600,
      AuthorizationCode: 60,
    },
    async findAccount(_ctx: unknown, sub: string) {
      return {
        accountId: sub,
        async claims() {
          const { amr: _amr, ...claims } = t.who;
          return { ...claims, sub };
        },
      };
    },
    // Consent is taken as given: the test client is first-party.
    async loadExistingGrant(ctx: any) {
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client.clientId,
        accountId: ctx.oidc.session.accountId,
      });
      grant.addOIDCScope('openid email profile groups');
      await grant.save();
      return grant;
    },
  });
  provider.on('server_error', (_ctx: unknown, err: Error) => console.error('oidc-provider:', err));
  provider.use(async (ctx: any, next: () => Promise<void>) => {
    await next();
    if (ctx.path === '/token' && t.tamper && ctx.body?.id_token)
      ctx.body = { ...ctx.body, id_token: await t.tamper(ctx.body.id_token) };
  });
  const callback = provider.callback();
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (req.url?.startsWith('/interaction/')) {
      void (async () => {
        await provider.interactionDetails(req, res);
        await provider.interactionFinished(
          req,
          res,
          { login: { accountId: t.who.sub, ...(t.who.amr ? { amr: t.who.amr } : {}) } },
          { mergeWithLastSubmission: false },
        );
      })().catch((err: Error) => {
        res.statusCode = 500;
        res.end(String(err));
      });
      return;
    }
    callback(req, res);
  });
  return t;
}

/** The ID token's claims and header re-signed with `key` (RS256), changed by `change`. */
export async function resign(
  idToken: string,
  key: CryptoKey,
  change: (claims: Record<string, unknown>) => Record<string, unknown> = (c) => c,
): Promise<string> {
  const header = decodeProtectedHeader(idToken);
  const claims = change({ ...decodeJwt(idToken) });
  return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: header.kid ?? '' }).sign(key);
}

/**
 * Follows redirects from `url` as a browser would, with its own cookie jar, until one leaves the
 * provider for `until` (openrig's callback): returns that URL.
 */
export async function walk(url: string, until: string): Promise<URL> {
  const jar = new Map<string, string>();
  let next = new URL(url);
  for (let hops = 0; hops < 10; hops++) {
    if (next.href.startsWith(until)) return next;
    const res = await fetch(next, {
      redirect: 'manual',
      headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      jar.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    const location = res.headers.get('location');
    if (!location) throw new Error(`the provider stopped at ${next.href}: ${res.status} ${await res.text()}`);
    next = new URL(location, next);
  }
  throw new Error('too many redirects');
}
