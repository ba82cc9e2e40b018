// Single sign-on with OpenID Connect, the authorization-code flow with PKCE, state and nonce
// (docs/sso.md). `startSignIn` records the state (hashed) and sends the browser to the provider;
// `finishSignIn` spends the state once, exchanges the code, has openid-client verify the ID token
// (signature against the provider's JWKS, issuer, audience, expiry, nonce), then signs in the
// account of the provider's subject: made on its first sign-in when its e-mail is verified and of
// an allowed domain, its mapped teams brought in step with its groups, and through openrig's own
// 2FA step when the account has 2FA, unless the provider asserts multi-factor and the operator
// trusts it to.
import { createHmac } from 'node:crypto';
import type { Deps } from '../../deps.types.js';
import type { User } from '../../identity.js';
import type { OidcProviderConfig } from '../../config.oidc.js';
import { AppError } from '../../errors.js';
import { tx } from '../../db/connection.js';
import { newToken, sha256Hex } from '../../crypto.js';
import { createUser, findUserByEmail, findUserById } from '../accounts/accounts.service.js';
import { createSession, PASSWORD_LOGIN } from '../accounts/accounts.sessions.js';
import { clearSignInFailures } from '../accounts/accounts.lockout.js';
import { AccountErrors } from '../accounts/accounts.errors.js';
import { beginTfaLogin, type TfaLoginStart } from '../two-factor/two-factor.login.js';
import { SsoErrors, type SsoErrorCode } from './sso.errors.js';
import {
  consumeState,
  identityUser,
  insertState,
  linkIdentity,
  pruneStates,
  touchIdentity,
} from './sso.repo.js';
import { groupsOf, syncTeams } from './sso.teams.js';

type SsoDeps = Deps;

export const START_PATH = (id: string) => `/api/v0/auth/oidc/${id}/start`;
export const CALLBACK_PATH = (id: string) => `/api/v0/auth/oidc/${id}/callback`;

/** GET /api/v0/auth/oidc/providers: what the sign-in page offers (no secret, no issuer). */
export function listProviders(deps: Pick<Deps, 'oidc'>) {
  return {
    providers: deps.oidc.providers.map((p) => ({ id: p.id, name: p.name, start_url: START_PATH(p.id) })),
  };
}

export function providerOf(deps: Pick<Deps, 'oidc'>, id: string): OidcProviderConfig {
  const p = deps.oidc.provider(id);
  if (!p) throw SsoErrors.unknownProvider();
  return p;
}

/**
 * Where the provider sends the browser back: built from OPENRIG_PUBLIC_URL, never from a
 * request's Host header, and registered with the provider as the client's redirect URI.
 */
export function redirectUri(deps: Pick<Deps, 'config'>, p: OidcProviderConfig): string {
  return `${deps.config.accounts.publicUrl}${CALLBACK_PATH(p.id)}`;
}

/**
 * The nonce and the PKCE code verifier of a sign-in, derived from its state with the server's
 * secret key (HMAC-SHA256): nothing secret is stored, and any server process (they share the key)
 * can finish a sign-in another one started. Knowing a state without the key gives neither.
 */
export function flowSecrets(key: Buffer, state: string): { nonce: string; verifier: string } {
  const mac = (purpose: string) =>
    createHmac('sha256', key).update(`openrig-oidc-${purpose}:${state}`).digest('base64url');
  return { nonce: mac('nonce'), verifier: mac('pkce') };
}

async function configurationOf(deps: SsoDeps, p: OidcProviderConfig) {
  try {
    return await deps.oidc.configuration(p);
  } catch (err) {
    deps.log.warn({ provider: p.id, err: (err as Error).message }, 'oidc discovery failed');
    throw SsoErrors.providerUnreachable();
  }
}

/** GET …/{provider}/start: the provider's authorization URL, and the state for the binding cookie. */
export async function startSignIn(
  deps: SsoDeps,
  providerId: string,
): Promise<{ location: string; state: string; maxAgeS: number }> {
  const p = providerOf(deps, providerId);
  const config = await configurationOf(deps, p);
  const lib = await deps.oidc.library();
  const state = newToken('');
  const { nonce, verifier } = flowSecrets(deps.config.secretKey, state);
  const now = deps.clock.now();
  const ttlS = deps.config.oidc.stateTtlS;
  await pruneStates(deps.db, now);
  await insertState(deps.db, {
    stateHash: sha256Hex(state),
    provider: p.id,
    now,
    expiresAt: now + ttlS * 1000,
  });
  const url = lib.buildAuthorizationUrl(config, {
    response_type: 'code',
    redirect_uri: redirectUri(deps, p),
    scope: p.scopes.join(' '),
    state,
    nonce,
    code_challenge: await lib.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  return { location: url.href, state, maxAgeS: ttlS };
}

export type SignInOutcome =
  | { kind: 'session'; user: User; session: { token: string; expiresAt: number } }
  | { kind: 'tfa'; start: TfaLoginStart }
  | { kind: 'refused'; code: SsoErrorCode };

/** Claims of the ID token, completed from the UserInfo reply where it left one out. */
interface SignInClaims {
  sub: string;
  email: string | undefined;
  emailVerified: boolean;
  name: string;
  groups: string[];
  amr: string[];
}

function verifiedFlag(v: unknown): boolean {
  // Some providers send the flag as a string.
  return v === true || v === 'true';
}

/**
 * GET …/{provider}/callback. The refusals a person can cause (or a forged or replayed answer) are
 * outcomes, sent to the sign-in page as a code; anything else is thrown.
 */
export async function finishSignIn(
  deps: SsoDeps,
  providerId: string,
  rawQuery: string,
  boundState: string | undefined,
): Promise<SignInOutcome> {
  const p = providerOf(deps, providerId);
  try {
    return await finish(deps, p, rawQuery, boundState);
  } catch (err) {
    if (err instanceof AppError && Object.values(SsoErrors).some((e) => e.code === err.code)) {
      deps.log.info({ provider: p.id, refused: err.code }, 'oidc sign-in refused');
      return { kind: 'refused', code: err.code as SsoErrorCode };
    }
    throw err;
  }
}

async function finish(
  deps: SsoDeps,
  p: OidcProviderConfig,
  rawQuery: string,
  boundState: string | undefined,
): Promise<SignInOutcome> {
  const query = new URLSearchParams(rawQuery);
  const state = query.get('state');
  // The state must be the one this browser's cookie holds: another's finished sign-in cannot be
  // slipped into this browser (login CSRF).
  if (!state || !boundState || state !== boundState) throw SsoErrors.stateMismatch();
  const now = deps.clock.now();
  // Spent before anything else, even when the provider reports an error: a state works once.
  if (!(await consumeState(deps.db, sha256Hex(state), p.id, now))) throw SsoErrors.stateInvalid();
  if (query.has('error')) throw SsoErrors.providerError();
  const claims = await verifiedClaims(deps, p, rawQuery, state);
  if (!claims.email) throw SsoErrors.emailMissing();
  if (!claims.emailVerified) throw SsoErrors.emailUnverified();
  const email = claims.email.trim().toLowerCase();
  const domain = email.slice(email.lastIndexOf('@') + 1);
  if (!email.includes('@') || !p.allowedDomains.includes(domain)) throw SsoErrors.domainNotAllowed();

  const user = await accountFor(deps, p, claims.sub, email, claims.name);
  const trusted = p.trustMfa && claims.amr.some((a) => p.mfaAmr.includes(a));
  const needsTfa = user.tfa_status !== 'disabled' && !trusted;
  const session = await tx(deps.store, async (db) => {
    await touchIdentity(db, { provider: p.id, subject: claims.sub, email, now });
    const teams = await syncTeams(db, deps.log, user.id, p.groupMappings, claims.groups, now);
    if (teams.left.length > 0)
      deps.log.info(
        { provider: p.id, user_id: user.id, left: teams.left },
        'oidc sign-in left teams its groups no longer map to',
      );
    if (needsTfa) return null;
    await clearSignInFailures(db, user.email);
    return createSession(db, {
      userId: user.id,
      teamId: null,
      kind: 'cookie',
      isAdmin: false,
      now,
      ttlS: deps.config.sessionTtlS,
      origin: PASSWORD_LOGIN,
    });
  });
  if (!session) return { kind: 'tfa', start: await beginTfaLogin(deps, user) };
  return { kind: 'session', user, session: { token: session.token, expiresAt: session.expiresAt } };
}

/** The code exchanged and the ID token verified by openid-client; its claims, completed. */
async function verifiedClaims(
  deps: SsoDeps,
  p: OidcProviderConfig,
  rawQuery: string,
  state: string,
): Promise<SignInClaims> {
  const config = await configurationOf(deps, p);
  const lib = await deps.oidc.library();
  const { nonce, verifier } = flowSecrets(deps.config.secretKey, state);
  let tokens;
  try {
    tokens = await lib.authorizationCodeGrant(config, new URL(`${redirectUri(deps, p)}?${rawQuery}`), {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
  } catch (err) {
    // The library's message says which check failed (signature, aud, iss, exp, nonce); it quotes
    // no token.
    deps.log.info({ provider: p.id, why: (err as Error).message }, 'oidc token refused');
    throw SsoErrors.tokenInvalid();
  }
  const id = tokens.claims();
  if (!id) throw SsoErrors.tokenInvalid();
  let info: Record<string, unknown> = {};
  const wantGroups = p.groupMappings.length > 0 && id[p.groupsClaim] === undefined;
  if ((id.email === undefined || wantGroups) && config.serverMetadata().userinfo_endpoint) {
    try {
      info = await lib.fetchUserInfo(config, tokens.access_token, id.sub);
    } catch (err) {
      deps.log.info({ provider: p.id, why: (err as Error).message }, 'oidc userinfo refused');
      throw SsoErrors.tokenInvalid();
    }
  }
  const fromId = id.email !== undefined;
  const amr = Array.isArray(id.amr) ? id.amr.filter((a): a is string => typeof a === 'string') : [];
  const name = id.name ?? info.name;
  return {
    sub: id.sub,
    email:
      typeof (fromId ? id.email : info.email) === 'string'
        ? ((fromId ? id.email : info.email) as string)
        : undefined,
    emailVerified: verifiedFlag(fromId ? id.email_verified : info.email_verified),
    name: typeof name === 'string' ? name.slice(0, 200) : '',
    groups: groupsOf(id[p.groupsClaim] ?? info[p.groupsClaim]),
    amr,
  };
}

/**
 * The account the subject signs in to: the one it is linked to; else the account of its e-mail
 * (verified by the provider, of a domain the operator allows), linked now; else a new account
 * without a password, linked now. Racing first sign-ins end on one account (the e-mail is unique,
 * and so is the link).
 */
async function accountFor(
  deps: SsoDeps,
  p: OidcProviderConfig,
  sub: string,
  email: string,
  name: string,
): Promise<User> {
  const linked = await identityUser(deps.db, p.id, sub);
  if (linked !== null) {
    const user = await findUserById(deps.db, linked);
    if (user) return user;
  }
  let user = await findUserByEmail(deps.db, email);
  if (!user) {
    try {
      await createUser(deps, { email, fullName: name, emailVerified: true });
      deps.log.info({ provider: p.id }, 'oidc sign-in made an account');
    } catch (err) {
      if (!(err instanceof AppError && err.code === AccountErrors.emailTaken.code)) throw err;
    }
    user = await findUserByEmail(deps.db, email);
    if (!user) throw new Error('the account made for a single sign-on is missing');
  }
  const now = deps.clock.now();
  await linkIdentity(deps.db, { provider: p.id, subject: sub, userId: user.id, email, now });
  const owner = await identityUser(deps.db, p.id, sub);
  if (owner !== null && owner !== user.id) return (await findUserById(deps.db, owner)) ?? user;
  return user;
}
