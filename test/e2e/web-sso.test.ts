// Single sign-on in headless Chromium against a real `openrig serve` and a real OpenID Connect
// provider (oidc-provider on a loopback port): the sign-in page shows "Sign in with …", one click
// goes through the provider and back, and the console is signed in as the new account, which the
// provider's group put in its mapped team.
import { createServer } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, noBrowserReason, type Browser } from '../helpers/browser.js';
import { startTestProvider, type TestProvider } from '../helpers/oidc.js';
import { callApi, runCli, startServe, type Proc } from '../helpers/process.js';

const reason = noBrowserReason();
if (reason) console.log(`skipping the web console single sign-on test: ${reason}`);

/** A free loopback port: the provider must know openrig's redirect URI before openrig starts. */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

describe.skipIf(!!reason)('web console: sign in with an OpenID Connect provider', () => {
  let op: TestProvider;
  let serve: Proc & { url: string };
  let b: Browser;
  let base: string;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    op = await startTestProvider({ redirectUris: [`${base}/api/v0/auth/oidc/corp/callback`] });
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-web-sso-'));
    env = {
      OPENRIG_SECRET_KEY: 'cd'.repeat(32),
      OPENRIG_PUBLIC_URL: base,
      OPENRIG_MAIL_OUTBOX: path.join(dir, 'mail.jsonl'),
      OPENRIG_RATE_LIMITS: 'off',
      OPENRIG_LOG_LEVEL: 'warn',
      OPENRIG_OIDC_PROVIDERS: JSON.stringify([
        {
          id: 'corp',
          name: 'Corp Login',
          issuer: op.issuer,
          client_id: op.clientId,
          client_secret: op.clientSecret,
          scopes: ['openid', 'email', 'profile', 'groups'],
          allowed_domains: ['corp.test'],
          group_mappings: [{ group: 'gpu-users', team: 'lab', role: 'member' }],
        },
      ]),
    };
    // The last --port given is the one serve takes.
    serve = await startServe(['--port', String(port), '--data', dir], env);
    b = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await b?.close();
    serve?.child.kill('SIGTERM');
    if (serve) await serve.exited;
    if (dir) rmSync(dir, { recursive: true, force: true });
    await op?.close();
  });

  it(
    'clicks "Sign in with Corp Login" and lands signed in, a member of the mapped team',
    { timeout: 120_000 },
    async () => {
      expect(serve.url).toBe(base);
      // The team exists (teams are made by people): its owner makes it.
      const made = await runCli(
        [
          'admin',
          'create-user',
          '--email',
          'owner@corp.test',
          '--password',
          'a long enough password',
          '--data',
          dir,
        ],
        env,
      );
      expect(made.code, made.stderr).toBe(0);
      const owner = JSON.parse(made.stdout) as { api_key: string };
      expect((await callApi(base, 'POST', '/api/v0/team/', owner.api_key, { team_name: 'lab' })).status).toBe(
        200,
      );

      op.who = {
        sub: 'ada-1',
        email: 'ada@corp.test',
        email_verified: true,
        name: 'Ada',
        groups: ['gpu-users'],
      };
      const page = b.page;
      await page.goto(`${base}/`);
      await page.getByRole('link', { name: 'Sign in with Corp Login' }).click();
      await page.getByRole('heading', { name: 'Search offers' }).waitFor();
      expect(new URL(page.url()).pathname).toBe('/search');
      const me = await page.evaluate(async () => (await fetch('/api/v0/users/current')).json());
      expect(me).toMatchObject({ email: 'ada@corp.test', full_name: 'Ada' });
      const mine = await page.evaluate(async () => (await fetch('/api/v0/team/mine/')).json());
      expect(JSON.stringify(mine)).toContain('"lab"');
    },
  );

  it('shows a refusal in its own words: a domain that is not allowed', { timeout: 60_000 }, async () => {
    await b.context.clearCookies();
    op.who = { sub: 'eve-1', email: 'eve@elsewhere.test', email_verified: true };
    const page = b.page;
    await page.goto(`${base}/`);
    await page.getByRole('link', { name: 'Sign in with Corp Login' }).click();
    await page.getByText("Your e-mail's domain may not sign in here.").waitFor();
    expect(new URL(page.url()).hash).toBe('');
  });
});
