// `openrig show invoices` and `openrig admin add-credit` through the built CLI against a real
// `serve` and a real `openrig agent` (process runtime): a renter runs an instance for a few
// seconds while the billing meter settles every half second, then destroys it, and the operator
// adds credit; the renter's history has the compute and disk charges of that instance on today's
// row, both credits, totals that agree with --raw, and the server's and the CLI's refusals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/process.js';
import {
  DAY_MS,
  HIGH_PRICES,
  SINCE_YESTERDAY,
  cli,
  dateOf,
  expectUsageError,
  meteredEnv,
  startAgentWorld,
  type AgentWorld,
} from './cli-harness.js';
import type { Invoices } from '../../src/contract/api-types.js';

const ENV = meteredEnv('ee'.repeat(32));

let w: AgentWorld;
let home: string;
let renterKey: string;
let instance: number;
const renter = (args: string[], key = renterKey) =>
  cli(home, args, { OPENRIG_URL: w.url, OPENRIG_API_KEY: key });

async function admin(args: string[]) {
  return runCli(['admin', ...args, '--data', w.data]);
}

beforeAll(async () => {
  w = await startAgentWorld({
    env: ENV,
    host: 'inv-host@example.com',
    renter: 'inv-renter@example.com',
    agent: HIGH_PRICES,
  });
  ({ home, renterKey } = w);
  const c = await renter([
    'create',
    'instance',
    String(w.machine),
    '--image',
    'ubuntu:22.04',
    '--disk',
    '10',
    '--label',
    'e2e',
    '--wait',
  ]);
  expect(c.code, `${c.stdout}${c.stderr}${w.agent.stderr()}`).toBe(0);
  instance = Number(/Created instance (\d+)/.exec(c.stdout)![1]);
  await new Promise((r) => setTimeout(r, 3000));
  // Destroying settles the rest; nothing is charged after it, so every report below agrees.
  expect((await renter(['destroy', 'instance', String(instance)])).code).toBe(0);
  const credit = await admin(['add-credit', '--email', 'inv-renter@example.com', '--amount', '12.5']);
  expect(credit.code, credit.stderr).toBe(0);
  expect(JSON.parse(credit.stdout)).toMatchObject({ amount: 12.5, email: 'inv-renter@example.com' });
}, 120_000);

afterAll(() => w?.stop());

/** `$12.34` or `+$12.34` → 12.34. */
const usd = (s: string) => Number(s.replace(/^\+?\$/, ''));

describe('show invoices', { timeout: 90_000 }, () => {
  it('--raw: compute and disk charges of the instance, the two credits, exact totals', async () => {
    const r = await renter(['show', 'invoices', ...SINCE_YESTERDAY(), '--raw']);
    expect(r.code, r.stderr).toBe(0);
    const inv = JSON.parse(r.stdout) as Invoices;
    const charges = inv.invoices.filter((x) => x.type === 'charge');
    expect(charges.map((x) => x.kind).sort()).toEqual(
      charges.length === 2 ? ['compute', 'disk'] : expect.arrayContaining(['compute', 'disk']),
    );
    expect(charges.every((x) => x.instance_id === instance)).toBe(true);
    const compute = charges.filter((x) => x.kind === 'compute');
    expect(compute.reduce((s, x) => s + x.amount, 0)).toBeGreaterThan(0.2);
    for (const x of compute) expect(x.rate).toBe(360);
    expect(inv.invoices.filter((x) => x.type === 'payment').map((x) => x.amount)).toEqual([100, 12.5]);
    expect(inv.totals.credits).toBe(112.5);
    expect(inv.totals.charges).toBeCloseTo(
      charges.reduce((s, x) => s + x.amount, 0),
      6,
    );
    expect(inv.current.credit).toBeCloseTo(112.5 - inv.totals.charges, 6);
  });

  it('the table: a row per item, then the totals and the balance, agreeing with --raw', async () => {
    const raw = JSON.parse(
      (await renter(['show', 'invoices', ...SINCE_YESTERDAY(), '--raw'])).stdout,
    ) as Invoices;
    const r = await renter(['show', 'invoices', ...SINCE_YESTERDAY()]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    const [tableText, summary] = r.stdout.split('\n\n');
    const lines = tableText!.trim().split('\n');
    expect(lines[0]).toMatch(/^When \(UTC\)\s+Type\s+Instance\s+Hours\s+Rate\s+Amount$/);
    const rows = lines.slice(1).map((l) => l.trim().split(/\s+/));
    expect(rows).toHaveLength(raw.invoices.length);
    const credits = rows.filter((c) => c[2] === 'credit');
    expect(credits.map((c) => c[c.length - 1])).toEqual(['+$100.00', '+$12.50']);
    const charges = rows.filter((c) => c[1] === 'compute' || c[1] === 'disk');
    expect(charges.every((c) => c[0] === dateOf(Date.now()) || c[0] === dateOf(Date.now() - DAY_MS))).toBe(
      true,
    );
    expect(charges.every((c) => c[2] === String(instance))).toBe(true);
    // Each charge in four decimals: their sum is within half a hundredth of a cent a row.
    const sum = charges.reduce((a, c) => a + usd(c[c.length - 1]!), 0);
    expect(Math.abs(sum - raw.totals.charges)).toBeLessThanOrEqual(0.00005 * charges.length + 1e-9);
    expect(summary).toContain(`: charges $${raw.totals.charges.toFixed(4)}, credits $112.50\n`);
    expect(summary).toMatch(
      new RegExp(`balance \\$${raw.current.credit.toFixed(2).replace('.', '\\.')}\\n$`),
    );
  });

  it('--credits asks the server for credits only; --charges shows the charges only', async () => {
    const credits = await renter(['show', 'invoices', '--credits']);
    expect(credits.code, credits.stderr).toBe(0);
    expect(credits.stdout).not.toMatch(/compute|disk/);
    expect(credits.stdout).toContain(': credits $112.50\n');
    const raw = JSON.parse((await renter(['show', 'invoices', '--credits', '--raw'])).stdout) as Invoices;
    expect(raw.invoices.map((x) => x.type)).toEqual(['payment', 'payment']);
    const charges = await renter(['show', 'invoices', ...SINCE_YESTERDAY(), '--charges']);
    expect(charges.code, charges.stderr).toBe(0);
    expect(charges.stdout).not.toContain('credit ');
    expect(charges.stdout).toMatch(/: charges \$\d+\.\d{4}\n/);
  });

  it('a range with nothing in it says so', async () => {
    const r = await renter(['show', 'invoices', '--from', '2026-01-01', '--to', '2026-01-31']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^No charges or credits from 2026-01-01 00:00 UTC to 2026-02-01 00:00 UTC\.\n/);
  });

  it('over 366 days: the server refuses with its message, exit 1', async () => {
    const r = await renter(['show', 'invoices', '--from', '2024-01-01', '--to', '2025-12-31']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^openrig: a history covers at most 366 days/);
  });

  it('a key without the billing scope: the 403, exit 1', async () => {
    const k = await renter([
      'api-key',
      'create',
      '--name',
      'inst',
      '--permissions',
      '{"instances":"read"}',
      '--raw',
    ]);
    expect(k.code, k.stderr).toBe(0);
    const r = await renter(['show', 'invoices'], String(JSON.parse(k.stdout).key));
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('openrig: This API key lacks read permission on billing\n');
  });

  it.each([
    [['--from', 'last week'], '--from: "last week" is not a time'],
    [['--to', 'soon'], '--to: "soon" is not a time'],
    [['--from', '2026-01-10', '--to', '2026-01-09'], '--from "2026-01-10" is not before --to "2026-01-09"'],
    [['--charges', '--credits'], '--charges and --credits exclude each other'],
  ])('usage error %j: exit 2, says why, asks nothing of the server', async (args, msg) => {
    const r = await renter(['show', 'invoices', ...args]);
    expectUsageError(r, msg);
  });
});

describe('admin add-credit', { timeout: 60_000 }, () => {
  it('refuses an unknown e-mail and a bad amount, exit 1, changing nothing', async () => {
    const none = await admin(['add-credit', '--email', 'nobody@example.com', '--amount', '5']);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe('openrig: no account with the e-mail "nobody@example.com"\n');
    for (const bad of ['0', '-3', 'ten', '']) {
      const r = await admin(['add-credit', '--email', 'inv-renter@example.com', '--amount', bad]);
      expect(r.code, bad).toBe(1);
      expect(r.stderr).toContain('--amount must be a positive amount of USD');
    }
    const raw = JSON.parse((await renter(['show', 'invoices', '--credits', '--raw'])).stdout) as Invoices;
    expect(raw.totals.credits).toBe(112.5);
  });
});
