// Single sign-on providers (OpenID Connect), parsed and checked once at start like the rest of the
// configuration: a provider list that cannot work stops start-up with a message naming the
// provider and the field, never quoting a client secret. Nothing here reaches the network: a
// provider's discovery document is read on its first sign-in (modules/sso/sso.client.ts), so a
// provider that is down does not keep openrig from starting.
import { readFileSync } from 'node:fs';

/** One group of the provider's groups claim, mapped to a team of openrig and a role in it. */
export interface OidcGroupMapping {
  group: string;
  team: string;
  role: string;
}

export interface OidcProviderConfig {
  /** In URLs (/api/v0/auth/oidc/{id}/start): lower-case letters, digits and dashes. */
  id: string;
  /** What the sign-in page shows: "Sign in with {name}". */
  name: string;
  /** The issuer identifier; https://, or http:// for a loopback host only. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  scopes: string[];
  /** E-mail domains (lower-cased) whose verified addresses may sign in and get an account. */
  allowedDomains: string[];
  /** The claim (of the ID token, else of the UserInfo reply) that lists the user's groups. */
  groupsClaim: string;
  /** In order: where several listed groups map to one team, the first mapping gives the role. */
  groupMappings: OidcGroupMapping[];
  /** The provider's own multi-factor sign-in (amr) stands in for openrig's 2FA step. */
  trustMfa: boolean;
  /** The `amr` values that count as multi-factor when trustMfa is on. */
  mfaAmr: string[];
}

export interface OidcConfig {
  providers: OidcProviderConfig[];
  /** OPENRIG_OIDC_STATE_TTL_S: how long a started sign-in may take to come back. */
  stateTtlS: number;
}

/**
 * RFC 8176 authentication method references that say more than a password was used: mfa and
 * mca name several factors or channels; otp (one-time code), hwk (hardware key) and sc (smart
 * card) are second factors as providers report them.
 */
export const DEFAULT_MFA_AMR = ['mfa', 'mca', 'otp', 'hwk', 'sc'];
const DEFAULT_SCOPES = ['openid', 'email', 'profile'];
const ID_RE = /^[a-z0-9][a-z0-9-]{0,31}$/;
const DOMAIN_RE =
  /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;
const KNOWN_FIELDS = new Set([
  'id',
  'name',
  'issuer',
  'client_id',
  'client_secret',
  'scopes',
  'allowed_domains',
  'groups_claim',
  'group_mappings',
  'trust_mfa',
  'mfa_amr',
]);

type Env = Record<string, string | undefined>;

/** True for localhost and the loopback addresses, where an http:// issuer is accepted (tests, dev). */
function isLoopback(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

function strings(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((s) => typeof s === 'string' && s.trim() !== '');
}

/**
 * OPENRIG_OIDC_PROVIDERS (a JSON array) or OPENRIG_OIDC_PROVIDERS_FILE (a file holding one, which
 * keeps client secrets out of the environment); both set is refused, neither means no SSO.
 */
export function oidcConfig(env: Env): OidcConfig {
  const raw = env.OPENRIG_OIDC_PROVIDERS?.trim() ?? '';
  const file = env.OPENRIG_OIDC_PROVIDERS_FILE?.trim() ?? '';
  if (raw && file) throw new Error('Set OPENRIG_OIDC_PROVIDERS or OPENRIG_OIDC_PROVIDERS_FILE, not both');
  let text = raw;
  let source = 'OPENRIG_OIDC_PROVIDERS';
  if (file) {
    source = `OPENRIG_OIDC_PROVIDERS_FILE (${file})`;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(`${source} cannot be read: ${(err as Error).message}`);
    }
  }
  const ttlRaw = env.OPENRIG_OIDC_STATE_TTL_S;
  const stateTtlS = ttlRaw === undefined || ttlRaw === '' ? 600 : Number(ttlRaw);
  if (!Number.isInteger(stateTtlS) || stateTtlS < 30 || stateTtlS > 3600)
    throw new Error(
      `OPENRIG_OIDC_STATE_TTL_S must be a whole number >= 30 and <= 3600 (got ${JSON.stringify(ttlRaw)})`,
    );
  return { providers: text.trim() === '' ? [] : parseProviders(text, source), stateTtlS };
}

/** The provider list's JSON, checked field by field; `source` names where it came from. */
export function parseProviders(text: string, source: string): OidcProviderConfig[] {
  let list: unknown;
  try {
    list = JSON.parse(text);
  } catch (err) {
    throw new Error(`${source} must be a JSON array of providers: ${(err as Error).message}`);
  }
  if (!Array.isArray(list)) throw new Error(`${source} must be a JSON array of providers`);
  const seen = new Set<string>();
  return list.map((p: unknown, i) => {
    const id = typeof (p as { id?: unknown })?.id === 'string' ? (p as { id: string }).id : '';
    const fail = (why: string) => new Error(`${source}: provider ${i + 1}${id ? ` (${id})` : ''}: ${why}`);
    if (typeof p !== 'object' || p === null || Array.isArray(p)) throw fail('must be an object');
    const o = p as Record<string, unknown>;
    for (const k of Object.keys(o))
      if (!KNOWN_FIELDS.has(k)) throw fail(`unknown field ${JSON.stringify(k)}`);
    if (!ID_RE.test(id)) throw fail('id must be 1 to 32 lower-case letters, digits and dashes');
    if (seen.has(id)) throw fail('id is used by another provider');
    seen.add(id);
    const text = (k: string, def?: string): string => {
      const v = o[k] ?? def;
      if (typeof v !== 'string' || v.trim() === '') throw fail(`${k} must be a non-empty string`);
      return v.trim();
    };
    const name = text('name');
    const issuer = text('issuer');
    let url: URL;
    try {
      url = new URL(issuer);
    } catch {
      throw fail(`issuer must be a URL (got ${JSON.stringify(issuer)})`);
    }
    if (!(url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url.hostname))))
      throw fail('issuer must be an https:// URL (http:// only for a loopback host)');
    if (url.search || url.hash) throw fail('issuer must have no query or fragment');
    const clientId = text('client_id');
    // The secret is never quoted: the message names the field only.
    if (typeof o.client_secret !== 'string' || o.client_secret === '')
      throw fail('client_secret must be a non-empty string');
    const scopes = o.scopes ?? DEFAULT_SCOPES;
    if (!strings(scopes) || !scopes.includes('openid'))
      throw fail('scopes must be a list of strings with openid');
    const domains = o.allowed_domains;
    if (!strings(domains) || domains.length === 0)
      throw fail('allowed_domains must list the e-mail domains that may sign in, e.g. ["example.com"]');
    const allowedDomains = domains.map((d) => d.trim().toLowerCase());
    for (const d of allowedDomains)
      if (!DOMAIN_RE.test(d)) throw fail(`allowed_domains: ${JSON.stringify(d)} is not a domain name`);
    const groupsClaim = text('groups_claim', 'groups');
    const mappings = o.group_mappings ?? [];
    if (!Array.isArray(mappings)) throw fail('group_mappings must be a list of {group, team, role}');
    const groupMappings = mappings.map((m: unknown, j): OidcGroupMapping => {
      const mm = m as Record<string, unknown> | null;
      const ok =
        typeof mm === 'object' &&
        mm !== null &&
        Object.keys(mm).every((k) => k === 'group' || k === 'team' || k === 'role') &&
        ['group', 'team', 'role'].every((k) => typeof mm[k] === 'string' && mm[k].trim() !== '');
      if (!ok)
        throw fail(
          `group_mappings[${j}] must be {"group": …, "team": …, "role": …}, each a non-empty string`,
        );
      return {
        group: (mm.group as string).trim(),
        team: (mm.team as string).trim(),
        role: (mm.role as string).trim(),
      };
    });
    const trust = o.trust_mfa ?? false;
    if (typeof trust !== 'boolean') throw fail('trust_mfa must be true or false');
    const mfaAmr = o.mfa_amr ?? DEFAULT_MFA_AMR;
    if (!strings(mfaAmr) || mfaAmr.length === 0) throw fail('mfa_amr must be a non-empty list of amr values');
    return {
      id,
      name,
      issuer,
      clientId,
      clientSecret: o.client_secret,
      scopes,
      allowedDomains,
      groupsClaim,
      groupMappings,
      trustMfa: trust,
      mfaAmr,
    };
  });
}
