// `openrig report` and `openrig reports` through the built CLI against a real `serve` and a real
// `openrig agent` (process runtime): a renter who rented the host's machine reports a problem, a
// second report that UTC day is the server's 409 printed as it says it, a machine the caller never
// rented is its 403; the host lists the report (newest first, without who sent it), the renter may
// not; a problem outside the list, a long message and a bad machine ID are usage errors (exit 2).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/process.js';
import { cli, createUser, expectUsageError, startAgentWorld, type AgentWorld } from './cli-harness.js';

let w: AgentWorld;
let other: { api_key: string };
let idle: number;
const as = (key: string, args: string[]) => cli(w.home, args, { OPENRIG_URL: w.url, OPENRIG_API_KEY: key });

beforeAll(async () => {
  w = await startAgentWorld({ env: {}, host: 'rep-host@example.com', renter: 'rep-renter@example.com' });
  other = await createUser(w, 'rep-other@example.com');
  const r = await runCli([
    'admin',
    'create-machines',
    '--data',
    w.data,
    '--owner-email',
    'rep-host@example.com',
    '--gpu-name',
    'L4',
    '--num-gpus',
    '1',
  ]);
  expect(r.code, r.stderr).toBe(0);
  idle = JSON.parse(r.stdout).machine_ids[0];
  const c = await as(w.renterKey, [
    'create',
    'instance',
    String(w.machine),
    '--image',
    'ubuntu:22.04',
    '--disk',
    '5',
    '--wait',
  ]);
  expect(c.code, `${c.stdout}${c.stderr}`).toBe(0);
}, 120_000);

afterAll(() => w?.stop());

describe('openrig report and reports', { timeout: 60_000 }, () => {
  it('the host has no reports at first', async () => {
    const r = await as(w.hostKey, ['reports', String(w.machine)]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`No reports about machine ${w.machine}.\n`);
  });

  it('a renter reports once a day; the second is refused with the server message', async () => {
    const msg = 'nvidia-smi shows no GPU after a reboot';
    const r = await as(w.renterKey, ['report', String(w.machine), '--problem', 'gpu', '--message', msg]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^Report \\d+ about machine ${w.machine} sent \\(gpu, `));
    const again = await as(w.renterKey, ['report', String(w.machine), '--problem', 'slow', '--raw']);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stdout).error).toBe('already_reported');
    expect(again.stderr).toContain(`openrig: ${JSON.parse(again.stdout).msg}`);
  });

  it('someone who never rented the machine is refused', async () => {
    const r = await as(other.api_key, ['report', String(idle), '--problem', 'offline']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^openrig: .+\n$/);
  });

  it('the host lists it with its problem and message, as the API answers; the renter may not', async () => {
    const r = await as(w.hostKey, ['reports', String(w.machine), '--wide']);
    expect(r.code, r.stderr).toBe(0);
    const [head, row, ...rest] = r.stdout.trimEnd().split('\n');
    expect(head).toMatch(/ID\s+When \(UTC\)\s+Problem\s+Message/);
    expect(head).not.toContain('Reporter');
    expect(row).toMatch(/\d+\s+\d{4}-\d\d-\d\d \d\d:\d\d\s+gpu\s+nvidia-smi shows no GPU after a reboot/);
    expect(rest).toEqual([]);
    const raw = await as(w.hostKey, ['reports', String(w.machine), '--raw']);
    const rows = JSON.parse(raw.stdout);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ machine_id: w.machine, problem: 'gpu' });
    expect(rows[0].reporter_id).toBeUndefined();
    const renter = await as(w.renterKey, ['reports', String(w.machine)]);
    expect(renter.code).toBe(1);
    expect(renter.stderr).toMatch(/^openrig: .+\n$/);
  });

  it('usage errors are caught before the server is asked', async () => {
    expectUsageError(
      await as(w.renterKey, ['report', String(w.machine), '--problem', 'noisy']),
      '--problem must be one of',
    );
    expectUsageError(
      await as(w.renterKey, [
        'report',
        String(w.machine),
        '--problem',
        'other',
        '--message',
        'x'.repeat(1001),
      ]),
      '--message is at most 1000 characters',
    );
    expectUsageError(await as(w.hostKey, ['reports', 'twelve']), 'MACHINE_ID');
    const missing = await as(w.renterKey, ['report', String(w.machine)]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("required option '--problem <p>' not specified");
  });
});
