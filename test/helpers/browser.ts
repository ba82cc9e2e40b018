// Headless Chromium for the console's end-to-end tests: playwright-core driving the system's
// Chromium (Debian's /usr/bin/chromium; OPENRIG_CHROMIUM names another), never a browser
// Playwright downloads. Each launch gets a fresh profile directory, removed on close.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

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
