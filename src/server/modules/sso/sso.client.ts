// The relying party's side of each configured provider: its discovered metadata and keys
// (openid-client's Configuration), made on the provider's first sign-in and kept for the process.
// openid-client is loaded on that first use too: a server without SSO never parses it.
// A failed discovery is not kept: the next sign-in tries again.
import type { Configuration } from 'openid-client';
import type { OidcProviderConfig } from '../../config.oidc.js';

export type OidcLib = typeof import('openid-client');

/** How long a request to a provider (discovery, token, keys, UserInfo) may take. */
const PROVIDER_TIMEOUT_S = 10;

export class OidcClients {
  private lib: Promise<OidcLib> | null = null;
  private readonly configs = new Map<string, Promise<Configuration>>();

  constructor(readonly providers: readonly OidcProviderConfig[]) {}

  provider(id: string): OidcProviderConfig | undefined {
    return this.providers.find((p) => p.id === id);
  }

  library(): Promise<OidcLib> {
    return (this.lib ??= import('openid-client'));
  }

  /** The provider's Configuration, discovered once (openid-client caches its keys inside it). */
  configuration(p: OidcProviderConfig): Promise<Configuration> {
    let c = this.configs.get(p.id);
    if (!c) {
      c = this.discover(p);
      this.configs.set(p.id, c);
      c.catch(() => this.configs.delete(p.id));
    }
    return c;
  }

  private async discover(p: OidcProviderConfig): Promise<Configuration> {
    const lib = await this.library();
    // ID tokens are checked against the provider's published keys (JWKS) even though they come
    // straight from its token endpoint: a token signed by any other key is refused.
    const execute = [lib.enableNonRepudiationChecks];
    // Plain http is accepted by the configuration for loopback issuers only (config.oidc.ts).
    if (new URL(p.issuer).protocol === 'http:') execute.push(lib.allowInsecureRequests);
    return lib.discovery(
      new URL(p.issuer),
      p.clientId,
      { client_secret: p.clientSecret },
      lib.ClientSecretBasic(p.clientSecret),
      { execute, timeout: PROVIDER_TIMEOUT_S },
    );
  }
}
