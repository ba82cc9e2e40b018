// Teams in the web console, in headless Chromium against a real `openrig serve`: the owner signs
// in, creates a team, switches to it and invites a member by e-mail; the invitee opens the
// e-mailed link (read from the e-mail outbox file), signs in, accepts, switches to the team and
// sees its members; the invitation link is single use. docs/teams.md.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, waitFor } from '../helpers/process.js';
import {
  CONSOLE_PASSWORD,
  launchBrowser,
  noBrowserReason,
  startConsoleServe,
  unlabelledControls,
  type Browser,
  type ConsoleServe,
} from '../helpers/browser.js';

const OWNER = 'lead@lab.example';
const INVITEE = 'student@lab.example';
const reason = noBrowserReason();
if (reason) console.log(`skipping the web console team tests: ${reason}`);

describe.skipIf(!!reason)('web console: a team, an e-mailed invitation accepted in the console', () => {
  let c: ConsoleServe;
  let b: Browser;

  /** The path of the invitation link in the newest e-mail to `to` (`/team/invite/TOKEN`). */
  const invitePath = (to: string) =>
    waitFor(() => {
      let lines: string[] = [];
      try {
        lines = readFileSync(path.join(c.dir, 'mail.jsonl'), 'utf8').trim().split('\n');
      } catch {
        return undefined;
      }
      for (const m of lines.map((l) => JSON.parse(l) as { to: string; text: string }).reverse()) {
        if (m.to !== to) continue;
        const link = /(https?:\/\/\S+\/team\/invite\/[A-Za-z0-9_-]{24,})/.exec(m.text)?.[1];
        if (link) return new URL(link).pathname;
      }
      return undefined;
    }, `an invitation e-mail to ${to}`);

  beforeAll(async () => {
    c = await startConsoleServe('web-teams', { OPENRIG_RATE_LIMITS: 'off', OPENRIG_LOG_LEVEL: 'warn' });
    b = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await b?.close();
    await c?.stop();
  });

  it(
    'creates a team, invites by e-mail, and the invitee accepts the link in the console',
    { timeout: 120_000 },
    async () => {
      const owner = await c.user(OWNER, '40');
      const invitee = await c.user(INVITEE, '0');
      const page = b.page;

      await c.signIn(b, page, OWNER);
      await page.getByRole('link', { name: 'Team' }).click();
      await page.getByLabel('Team name').fill('vision-lab');
      await page.getByLabel('Move credit to it ($)').fill('15');
      await page.getByRole('button', { name: 'Create team' }).click();
      await page.getByRole('button', { name: 'Switch to vision-lab' }).click();
      await page.getByRole('heading', { name: 'Team vision-lab' }).waitFor();
      expect(await page.getByTestId('team-switch').inputValue()).not.toBe('');
      expect(await unlabelledControls(page)).toEqual([]);
      await page.getByLabel('E-mail').fill(INVITEE);
      await page.getByRole('combobox', { name: 'Role', exact: true }).selectOption('member');
      await page.getByRole('button', { name: 'Send invitation' }).click();
      await page.getByText(`Invitation sent to ${INVITEE}`).waitFor();

      // The invitee opens the e-mailed link signed out: signing in comes back to it.
      const link = await invitePath(INVITEE);
      await b.context.clearCookies();
      await page.goto(`${c.serve.url}${link}`);
      await page.getByLabel('E-mail').fill(INVITEE);
      await page.getByLabel('Password').fill(CONSOLE_PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByTestId('invite-text').waitFor();
      expect(await page.getByTestId('invite-text').textContent()).toContain('vision-lab');
      await page.getByRole('button', { name: 'Accept invitation' }).click();
      await page.getByText('You joined the team vision-lab as member').waitFor();
      await page.getByRole('button', { name: 'Switch to the team' }).click();
      await page.getByRole('heading', { name: 'Team vision-lab' }).waitFor();
      await page.locator(`tr[data-member="${INVITEE}"]`).waitFor();
      // Acting for the team, the top bar shows the team's account and its balance.
      await page.getByText('$15.00').first().waitFor();

      // The link is single use.
      const again = await callApi(c.serve.url, 'POST', `/api/v0${link}/`, invitee.api_key, {});
      expect(again.status).toBe(410);
      // The owner's personal account paid the transfer.
      const me = await callApi(c.serve.url, 'GET', '/api/v0/users/current', owner.api_key);
      expect((me.body as { balance: number }).balance).toBeCloseTo(25, 5);
    },
  );
});
