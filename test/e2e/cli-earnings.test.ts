// `openrig show earnings` through the built CLI against a real `serve` and a real `openrig agent`
// (process runtime): a renter runs an instance on the host's machine for a few seconds while the
// billing meter settles every half second, then destroys it; the host's report has compute and
// disk earnings on today's row and on that machine, totals that agree, an idle machine at $0.00,
// and the server's refusals (another host's machine, too long a range, a key without billing).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/process.js';
import {
  DAY_MS,
  HIGH_PRICES,
  SINCE_YESTERDAY,
  cli,
  dateOf,
  meteredEnv,
  createUser,
  makeHome,
  startAgentWorld,
  type AgentWorld,
  expectUsageError,
} from './cli-harness.js';
import type { MachineEarnings } from '../../src/contract/api-types.js';

const ENV = meteredEnv('ea'.repeat(32));

let w: AgentWorld;
let hostHome: string;
let hostKey: string;
let rented: number;
let idle: number;
let foreign: number;
const host = (args: string[]) => cli(hostHome, args, { OPENRIG_URL: w.url, OPENRIG_API_KEY: hostKey });

async function admin(args: string[]): Promise<any> {
  const r = await runCli(['admin', ...args, '--data', w.data]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

beforeAll(async () => {
  w = await startAgentWorld({
    env: ENV,
    host: 'earn-host@example.com',
    renter: 'earn-renter@example.com',
    agent: HIGH_PRICES,
  });
  ({ hostKey, machine: rented } = w);
  await createUser(w, 'earn-other@example.com');
  // An idle machine of the host, and another host's machine (both without an agent).
  const l4 = async (owner: string): Promise<number> =>
    (await admin(['create-machines', '--owner-email', owner, '--gpu-name', 'L4', '--num-gpus', '1']))
      .machine_ids[0];
  idle = await l4('earn-host@example.com');
  foreign = await l4('earn-other@example.com');

  hostHome = makeHome();
  const as = (args: string[]) => cli(w.home, args, { OPENRIG_URL: w.url, OPENRIG_API_KEY: w.renterKey });
  const c = await as([
    'create',
    'instance',
    String(rented),
    '--image',
    'ubuntu:22.04',
    '--disk',
    '10',
    '--wait',
  ]);
  expect(c.code, `${c.stdout}${c.stderr}${w.agent.stderr()}`).toBe(0);
  const id = /Created instance (\d+)/.exec(c.stdout)![1]!;
  // Running for a few seconds: the meter settles compute and disk every half second.
  await new Promise((r) => setTimeout(r, 3000));
  // Destroying settles the rest; nothing is charged after it, so every report below agrees.
  expect((await as(['destroy', 'instance', id])).code).toBe(0);
}, 120_000);

afterAll(() => w?.stop());

/** `$12.34` → 12.34. */
const usd = (s: string) => Number(s.replace('$', ''));

describe('show earnings', { timeout: 90_000 }, () => {
  it('--raw: compute and disk earnings on the rented machine, today; per day and per machine add up', async () => {
    const r = await host(['show', 'earnings', ...SINCE_YESTERDAY(), '--raw']);
    expect(r.code, r.stderr).toBe(0);
    const e = JSON.parse(r.stdout) as MachineEarnings;
    const today = Math.floor(Date.now() / DAY_MS);
    expect(e.eday).toBe(today);
    expect(e.sday).toBe(today - 1);
    expect(e.summary.total_gpu).toBeGreaterThan(0);
    expect(e.summary.total_stor).toBeGreaterThan(0);
    expect(e.summary.total_earn).toBeCloseTo(e.summary.total_gpu + e.summary.total_stor, 6);
    const sum = (xs: { earn: number }[]) => xs.reduce((a, x) => a + x.earn, 0);
    expect(sum(e.per_day)).toBeCloseTo(e.summary.total_earn, 6);
    expect(sum(e.per_machine)).toBeCloseTo(e.summary.total_earn, 6);
    expect(e.per_day.map((d) => d.date)).toEqual([dateOf(Date.now() - DAY_MS), dateOf(Date.now())]);
    expect(e.per_machine.map((m) => m.machine_id).sort((a, b) => a - b)).toEqual(
      [idle, rented].sort((a, b) => a - b),
    );
    expect(e.per_machine.find((m) => m.machine_id === rented)!.earn).toBe(e.summary.total_earn);
    expect(e.per_machine.find((m) => m.machine_id === idle)!.earn).toBe(0);
  });

  it('the tables: per day, per machine, then the total line, each agreeing with --raw', async () => {
    const raw = JSON.parse(
      (await host(['show', 'earnings', ...SINCE_YESTERDAY(), '--raw'])).stdout,
    ) as MachineEarnings;
    const r = await host(['show', 'earnings', ...SINCE_YESTERDAY()]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    const [days, machines, total] = r.stdout.split('\n\n');
    const rows = (t: string) =>
      t
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => l.trim().split(/\s+/));
    expect(days).toMatch(/^Day \(UTC\)\s+Compute\s+Disk\s+Total\n/);
    expect(rows(days!).map((c) => c[0])).toEqual(raw.per_day.map((d) => d.date));
    expect(machines).toMatch(/^Machine\s+Compute\s+Disk\s+Total\n/);
    const cents = (n: number) => `$${n.toFixed(2)}`;
    const s = raw.summary;
    expect(total).toBe(
      `Total ${raw.per_day[0]!.date} to ${raw.per_day[1]!.date}: ${cents(s.total_earn)} (compute ${cents(s.total_gpu)}, disk ${cents(s.total_stor)})\n`,
    );
    expect(usd(cents(s.total_earn))).toBeGreaterThan(0);
    // Each row is in whole cents, so their sum is within a cent a row of the total.
    const dayTotal = rows(days!).reduce((a, c) => a + usd(c[3]!), 0);
    expect(Math.abs(dayTotal - s.total_earn)).toBeLessThanOrEqual(0.005 * raw.per_day.length + 1e-9);
    const byMachine = new Map(rows(machines!).map((c) => [Number(c[0]), c.slice(1)]));
    expect(byMachine.get(rented)).toEqual([cents(s.total_gpu), cents(s.total_stor), cents(s.total_earn)]);
    expect(byMachine.get(idle)).toEqual(['$0.00', '$0.00', '$0.00']);
  });

  it('--machine: one machine; an idle one earned nothing', async () => {
    const r = await host(['show', 'earnings', ...SINCE_YESTERDAY(), '--machine', String(idle)]);
    expect(r.code, r.stderr).toBe(0);
    const [, machines, total] = r.stdout.split('\n\n');
    expect(machines!.trim().split('\n')).toHaveLength(2);
    expect(machines).toMatch(new RegExp(`^\\s*${idle}\\s+\\$0\\.00\\s+\\$0\\.00\\s+\\$0\\.00$`, 'm'));
    expect(total).toMatch(/: \$0\.00 \(compute \$0\.00, disk \$0\.00\)\n$/);
  });

  it("--machine of another host's machine: the server's 404 message, exit 1", async () => {
    const r = await host(['show', 'earnings', '--machine', String(foreign)]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('openrig: No such machine, or it is not yours\n');
  });

  it('no flags is the current period, this month through today; --to alone is that one day', async () => {
    const today = dateOf(Date.now());
    const first = `${today.slice(0, 8)}01`;
    const period = first === today ? today : `${first} to ${today}`;
    const r = await host(['show', 'earnings']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^Total ${period}: \\$\\d+\\.\\d\\d \\(`, 'm'));
    // Today's charges are in it: a host who started today never sees an empty yesterday.
    expect(r.stdout).not.toMatch(/^Total [^:]+: \$0\.00 /m);
    const one = await host(['show', 'earnings', '--to', '2026-01-05', '--raw']);
    expect(JSON.parse(one.stdout)).toMatchObject({ sday: 20458, eday: 20458 });
  });

  it('over 366 days: the server refuses with its message, exit 1', async () => {
    const r = await host(['show', 'earnings', '--from', '2024-01-01', '--to', '2025-12-31']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^openrig: a report covers at most 366 days/);
  });

  it('a key without the billing scope: the 403, exit 1', async () => {
    const k = await host([
      'api-key',
      'create',
      '--name',
      'machines only',
      '--permissions',
      '{"machines":"read"}',
      '--raw',
    ]);
    expect(k.code, k.stderr).toBe(0);
    const key = String(JSON.parse(k.stdout).key);
    const r = await cli(hostHome, ['show', 'earnings'], { OPENRIG_URL: w.url, OPENRIG_API_KEY: key });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('openrig: This API key lacks read permission on billing\n');
  });

  it.each([
    [['--from', 'last week'], '--from: "last week" is not a day: give a date like 2026-11-01'],
    [['--to', '-5'], '--to: "-5" is not a day'],
    [['--from', '2026-01-10', '--to', '2026-01-09'], '--from 2026-01-10 is after --to 2026-01-09'],
    [['--machine', 'seven'], '--machine must be a positive whole number, not "seven"'],
    [['--machines', '1'], "unknown option '--machines'"],
  ])('usage error %j: exit 2, says why, asks nothing of the server', async (args, msg) => {
    const r = await host(['show', 'earnings', ...args]);
    expectUsageError(r, msg);
  });
});
