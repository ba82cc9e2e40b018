// Host maintenance through the built CLI against a real `serve`:
// a batch with a foreign ID (per-entry failure, exit 1), the published validation
// texts on stderr, the windows listed in UTC with relative times, single and batch cancel.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/process.js';
import { cli, createUser, makeHome, startWorld, type CliWorld } from './cli-harness.js';

let w: CliWorld;
let home: string;
let ids: number[];
const run = (args: string[]) => cli(home, args);
const iso = (epochS: number) => new Date(epochS * 1000).toISOString().slice(0, 16) + 'Z';

beforeAll(async () => {
  w = await startWorld();
  const host = await createUser(w, 'maint-host@example.com');
  const r = await runCli([
    'admin',
    'create-machines',
    '--data',
    w.data,
    '--owner-email',
    'maint-host@example.com',
    '--gpu-name',
    'RTX 4090',
    '--num-gpus',
    '1',
    '--count',
    '3',
    '--price-gpu',
    '0.4',
  ]);
  expect(r.code).toBe(0);
  ids = (JSON.parse(r.stdout) as { machine_ids: number[] }).machine_ids;
  home = makeHome();
  expect((await run(['login', '--url', w.url, '--api-key', host.api_key])).code).toBe(0);
}, 60_000);
afterAll(() => w?.stop());

describe('schedule maint / show maints / cancel maint', { timeout: 90_000 }, () => {
  const day = Math.floor(Date.now() / 1000) + 86_400 + 3600;

  it('show machines lists the host machines', async () => {
    const r = await run(['show', 'machines']);
    expect(r.code).toBe(0);
    for (const id of ids) expect(r.stdout).toMatch(new RegExp(`^\\s*${id}\\s+1x RTX 4090\\s+yes\\s`, 'm'));
  });

  it('a batch with a machine that is not yours: table of results, the failure named, exit 1', async () => {
    const r = await run([
      'schedule',
      'maint',
      '--machines',
      `${ids[0]},${ids[1]},999999`,
      '--sdate',
      iso(day),
      '--duration',
      '2',
      '--category',
      'gpu',
    ]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^Machine\s+Result\s+Renters notified\s+Message$/m);
    expect(r.stdout).toMatch(new RegExp(`^\\s*${ids[0]}\\s+scheduled\\s+0\\s+-$`, 'm'));
    expect(r.stdout).toMatch(/^\s*999999\s+failed: not_found\s+-\s+\S/m);
    expect(r.stderr).toBe('openrig: 1 of 3 machines were not scheduled\n');
  }, 60_000);

  it('an all-good batch exits 0; --raw is the server reply', async () => {
    const r = await run([
      'schedule',
      'maint',
      '--machines',
      String(ids[2]),
      '--sdate',
      String(day + 86_400),
      '--raw',
    ]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      success: true,
      results: [{ success: true, machine_id: ids[2], notifications_sent: 0 }],
    });
  });

  it.each([
    [['--sdate', '1'], 'sdate must be in the future'],
    [['--sdate', String(Math.floor(Date.now() / 1000) + 400 * 86_400)], 'sdate must be within 1 year'],
    [
      ['--category', 'weather'],
      'maintenance_category must be one of: disk, gpu, internet, other, power, software',
    ],
    [['--duration', '-1'], 'duration must be a positive number'],
  ])('validation %j: the published text on stderr, exit 1', async (extra, msg) => {
    const args = ['schedule', 'maint', '--machines', String(ids[0]), '--sdate', String(day), ...extra];
    const r = await run(args);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`openrig: ${msg}\n`);
  });

  it('no machine of yours: the 400 still shows each entry, exit 1', async () => {
    const r = await run(['schedule', 'maint', '--machines', '999998,999999', '--sdate', String(day)]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^\s*999998\s+failed: not_found/m);
    expect(r.stderr).toMatch(/^openrig: \S/);
  });

  it('show maints: UTC start and end, relative time, duration; --machines filters', async () => {
    const r = await run(['show', 'maints']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\s*Window\s+Machine\s+Category\s+Start\s+When\s+End\s+Duration$/m);
    // cancel maint takes the machine ID, and the listing says so.
    expect(r.stdout).toContain('openrig cancel maint MACHINE_ID (the Machine column, not the window ID)');
    const start = new Date(day * 1000).toISOString().slice(0, 16).replace('T', ' ');
    expect(r.stdout).toMatch(
      new RegExp(`^\\s*\\d+\\s+${ids[0]}\\s+gpu\\s+${start} UTC\\s+in 1d( 1h)?\\s+\\S+ \\S+ UTC\\s+2h$`, 'm'),
    );
    const only = await run(['show', 'maints', '--machines', String(ids[1])]);
    expect(only.stdout.trim().split('\n').length).toBe(3);
    expect(only.stdout).toMatch(new RegExp(`^\\s*\\d+\\s+${ids[1]}\\s`, 'm'));
  });

  it("a renter's show instance lists the scheduled windows of its machine", async () => {
    const renter = await createUser(w, 'maint-renter@example.com');
    const rhome = makeHome();
    const as = (args: string[]) => cli(rhome, args, { OPENRIG_URL: w.url, OPENRIG_API_KEY: renter.api_key });
    expect((await as(['ssh-key', 'add'])).code).toBe(0);
    const c = await as(['create', 'instance', String(ids[0]), '--image', 'ubuntu:22.04']);
    expect(c.code, c.stderr).toBe(0);
    const id = /Created instance (\d+)/.exec(c.stdout)![1]!;
    const start = new Date(day * 1000).toISOString().slice(0, 16).replace('T', ' ');
    const one = await as(['show', 'instance', id]);
    expect(one.stdout).toMatch(new RegExp(`^Maintenance:\\s+gpu ${start} UTC \\(in 1d( 1h)?\\), 2h$`, 'm'));
    expect((await as(['destroy', 'instance', id])).code).toBe(0);
  });

  it('cancel maint one machine, then several at once', async () => {
    const one = await run(['cancel', 'maint', String(ids[0])]);
    expect(one.code).toBe(0);
    expect(one.stdout).toBe(`machine ${ids[0]}: 1 maintenance window(s) cancelled\n`);
    const many = await run(['cancel', 'maint', String(ids[1]), String(ids[2])]);
    expect(many.code).toBe(0);
    expect(many.stdout).toMatch(new RegExp(`^\\s*${ids[1]}\\s+cancelled\\s+1`, 'm'));
    expect((await run(['show', 'maints'])).stdout).toBe('No maintenance scheduled.\n');
    const foreign = await run(['cancel', 'maint', '999999']);
    expect(foreign.code).toBe(1);
  }, 60_000);
});
