// The console's Hosting page for a new host, in headless Chromium against a real `openrig serve`
// and a process-runtime agent: each machine's verification, hostname, disk price and last
// heartbeat; a note that an unverified machine is hidden from renters' default searches, with the
// operator's rule for becoming visible; the price dialog opening with the current prices; and the
// earnings of the current period per day and per machine as tables.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processAgentArgs, startProc, waitRegistered, type Proc } from '../helpers/process.js';
import {
  launchBrowser,
  noBrowserReason,
  startConsoleServe,
  type Browser,
  type ConsoleServe,
} from '../helpers/browser.js';

const RULE = 'the lab verifies machines on Fridays: write to gpu-admin@example.com';
const reason = noBrowserReason();
if (reason) console.log(`skipping the web console hosting tests: ${reason}`);

describe.skipIf(!!reason)("web console: a new host's first minute on the Hosting page", () => {
  let c: ConsoleServe;
  let agent: Proc;
  let b: Browser;
  let machine: number;

  beforeAll(async () => {
    c = await startConsoleServe('web-hosting-first', {
      OPENRIG_VERIFICATION_RULE: RULE,
      OPENRIG_HEARTBEAT_S: '1',
      OPENRIG_RATE_LIMITS: 'off',
      OPENRIG_LOG_LEVEL: 'warn',
    });
    const host = await c.user('newhost@example.com', '0');
    agent = startProc(
      processAgentArgs(c.serve.url, c.stateDir, { gpus: 'RTX 4090x1', extra: ['--price-disk', '0.15'] }),
      { ...c.env, OPENRIG_LOG_LEVEL: 'info', OPENRIG_API_KEY: host.api_key },
    );
    [machine] = (await waitRegistered(agent)) as [number];
    b = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await b?.close();
    await c?.stop(agent);
  });

  it(
    'shows verification, hostname, disk price, heartbeat, the rule, current prices and earnings tables',
    { timeout: 90_000 },
    async () => {
      const page = b.page;
      await c.signIn(b, page, 'newhost@example.com');
      await page.goto(`${c.serve.url}/hosting`);
      const row = page.locator(`tr[data-machine="${machine}"]`);
      await row.waitFor();
      await expect.poll(() => row.locator('[data-label="Verification"]').innerText()).toBe('unverified');
      expect(await row.locator('[data-label="Disk $/GB-mo"]').innerText()).toContain('0.15');
      expect((await row.locator('[data-label="Last heartbeat"]').innerText()).trim()).not.toBe('—');
      expect(await row.locator('[data-label="Machine"]').innerText()).toMatch(new RegExp(`#${machine} \\S+`));
      const note = page.getByText(`Machine #${machine} is unverified`);
      await note.waitFor();
      expect(await note.innerText()).toContain(`To be visible: ${RULE}.`);

      await row.getByRole('button', { name: 'Price' }).click();
      const dialog = page.getByRole('dialog');
      expect(await dialog.getByLabel('Price per GPU ($/hour)').inputValue()).toBe('0.5');
      expect(await dialog.getByLabel('Disk price ($/GB-month)').inputValue()).toBe('0.15');
      await dialog.getByRole('button', { name: 'Cancel' }).click();

      const perDay = page.getByRole('table', { name: 'Earnings per day' });
      await perDay.waitFor();
      expect(await perDay.innerText()).toContain(new Date().toISOString().slice(0, 10));
      const perMachine = page.getByRole('table', { name: 'Earnings per machine' });
      expect(await perMachine.innerText()).toContain(`#${machine}`);

      // Once verified, the note goes and the badge says so.
      await c.admin('verify-machine', '--id', String(machine), '--json');
      await page.reload();
      await expect.poll(() => row.locator('[data-label="Verification"]').innerText()).toBe('verified');
      expect(await page.getByText(`Machine #${machine} is unverified`).count()).toBe(0);
    },
  );
});
