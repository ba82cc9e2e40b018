// Headless Chromium for the console's end-to-end tests: playwright-core driving the system's
// Chromium (Debian's /usr/bin/chromium; OPENRIG_CHROMIUM names another), never a browser
// Playwright downloads. Each launch gets a fresh profile directory, removed on close. Also the
// server those tests sign in to: `serve` on a fresh data directory, its users made with a password.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { callApi, endInstanceGroups, runCli, startServe, type Proc } from './process.js';

export const CHROMIUM: string | undefined = [
  process.env.OPENRIG_CHROMIUM,
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
].find((p): p is string => !!p && existsSync(p));

/** Why browser tests cannot run here, printed once by the skipping file; null when they can. */
export function noBrowserReason(): string | null {
  if (CHROMIUM) return null;
  return 'no Chromium found (/usr/bin/chromium; set OPENRIG_CHROMIUM): `.ci/run` installs Debian chromium';
}

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
];

export interface Browser {
  context: BrowserContext;
  page: Page;
  downloads: string;
  close(): Promise<void>;
}

export async function launchBrowser(
  opts: { width?: number; height?: number; colorScheme?: 'light' | 'dark' } = {},
): Promise<Browser> {
  if (!CHROMIUM) throw new Error(noBrowserReason()!);
  const profile = mkdtempSync(path.join(tmpdir(), 'openrig-chromium-'));
  const downloads = path.join(profile, 'downloads');
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: opts.width ?? 1440, height: opts.height ?? 900 },
    colorScheme: opts.colorScheme ?? 'light',
    acceptDownloads: true,
    downloadsPath: downloads,
    timezoneId: 'Europe/Berlin',
    locale: 'en-US',
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(15_000);
  return {
    context,
    page,
    downloads,
    async close() {
      await context.close().catch(() => undefined);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Where screenshots go when OPENRIG_SCREENSHOTS is set (docs/screenshots/); null otherwise. */
export const SCREENSHOTS: string | null = process.env.OPENRIG_SCREENSHOTS
  ? path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs/screenshots')
  : null;

/** The first screen of the page as it is, at 1440 and at 390 px wide, when screenshots are asked for. */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  for (const [w, h] of [
    [1440, 900],
    [390, 844],
  ] as const) {
    await page.setViewportSize({ width: w, height: h });
    await page.waitForTimeout(300);
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-${w}.png`) });
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}

/**
 * Form controls and buttons on the page without an accessible name (a <label>, aria-label,
 * aria-labelledby, a title, or a button's own text): each as the start of its HTML.
 */
export function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate<
    string[]
  >(`Array.from(document.querySelectorAll('input:not([type=hidden]), select, textarea, button'))
    .filter((el) => !(
      (el.labels && el.labels.length > 0) ||
      el.getAttribute('aria-label') ||
      el.getAttribute('aria-labelledby') ||
      el.getAttribute('title') ||
      (el.tagName === 'BUTTON' && el.textContent.trim())
    ))
    .map((el) => el.outerHTML.slice(0, 120))`);
}

/** The password of every user a console test makes. */
export const CONSOLE_PASSWORD = 'a long enough password';

export interface ConsoleServe {
  dir: string;
  /** Where an agent of the test keeps its state (its instances' groups are ended by `stop`). */
  stateDir: string;
  /** The server's environment: the test's, with the e-mail outbox in `dir`/mail.jsonl. */
  env: Record<string, string>;
  serve: Proc & { url: string };
  /** `openrig admin ARGS` on the data directory; its JSON output (a non-zero exit fails the test). */
  admin(...args: string[]): Promise<any>;
  /** A user with CONSOLE_PASSWORD, e-mail verified, and `balance` USD. */
  user(email: string, balance: string): Promise<{ id: number; api_key: string }>;
  /** A new ed25519 key pair in `dir` (comment renter@laptop), its public key added to `apiKey`'s account; the private key's file. */
  sshKey(apiKey: string): Promise<string>;
  /** Signs in as `email` with cookies cleared first; resolves on the search page. */
  signIn(b: Browser, page: Page, email: string): Promise<void>;
  /** Kills `agent`, stops the server, ends the agent's instances and removes `dir`. */
  stop(agent?: Proc): Promise<void>;
}

/** `serve` with `env` on a fresh data directory named for the test (`openrig-NAME-…`). */
export async function startConsoleServe(name: string, env: Record<string, string>): Promise<ConsoleServe> {
  const dir = mkdtempSync(path.join(tmpdir(), `openrig-${name}-`));
  const stateDir = path.join(dir, 'agent-state');
  const fullEnv = { ...env, OPENRIG_MAIL_OUTBOX: path.join(dir, 'mail.jsonl') };
  const serve = await startServe(['--data', dir], fullEnv);
  const admin = async (...args: string[]) => {
    const r = await runCli(['admin', ...args, '--data', dir], fullEnv);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout);
  };
  return {
    dir,
    stateDir,
    env: fullEnv,
    serve,
    admin,
    user: (email, balance) =>
      admin(
        'create-user',
        '--email',
        email,
        '--password',
        CONSOLE_PASSWORD,
        '--email-verified',
        '--balance',
        balance,
      ),
    async sshKey(apiKey) {
      const keyFile = path.join(dir, 'id_ed25519');
      execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'renter@laptop', '-f', keyFile]);
      const pub = readFileSync(`${keyFile}.pub`, 'utf8').trim();
      expect((await callApi(serve.url, 'POST', '/api/v0/ssh/', apiKey, { ssh_key: pub })).status).toBe(200);
      return keyFile;
    },
    async signIn(b, page, email) {
      await b.context.clearCookies();
      await page.goto(`${serve.url}/`);
      await page.getByLabel('E-mail').fill(email);
      await page.getByLabel('Password').fill(CONSOLE_PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Search offers' }).waitFor();
    },
    async stop(agent) {
      agent?.child.kill('SIGKILL');
      serve.child.kill('SIGTERM');
      await serve.exited;
      endInstanceGroups(stateDir);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
