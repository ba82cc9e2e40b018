import { describe, expect, it } from 'vitest';
import type { Instance } from '../../contract/api-types.js';
import { ApiError, NetworkError } from '../../client/client.js';
import { describeOutcome, waitForInstance, type WaitIo } from './wait.js';
import { waitText } from './instances.js';

/** A fake client that answers from a script, and a fake clock that sleep() advances. */
function fake(script: (Instance | null | Error)[]) {
  let now = 1_000_000;
  const polls: number[] = [];
  const sleeps: number[] = [];
  const states: string[] = [];
  const io: WaitIo = {
    async getInstance() {
      polls.push(now);
      const next = script.length > 1 ? script.shift()! : script[0]!;
      if (next instanceof Error) throw next;
      return next;
    },
    now: () => now,
    async sleep(ms) {
      sleeps.push(ms);
      now += ms;
    },
    onPoll: (p) => states.push(`${p.state}@${p.elapsedMs / 1000}`),
  };
  return { io, polls, sleeps, states };
}

const inst = (actual_status: string | null, more: Partial<Instance> = {}): Instance => ({
  id: 7,
  actual_status,
  intended_status: 'running',
  ...more,
});
const opts = { intervalMs: 5_000, timeoutMs: 0 };

describe('waiting for an instance', () => {
  it('polls after 0.5 s, then backs off by 1.5 up to the interval, and returns running with the ssh command', async () => {
    const f = fake([
      inst(null),
      inst(null),
      inst('loading'),
      inst('running', { ssh_host: '10.0.0.5', ssh_port: 40022 }),
    ]);
    const r = await waitForInstance(7, f.io, opts);
    expect(r.kind).toBe('running');
    expect(f.sleeps).toEqual([500, 750, 1125]);
    expect(f.states).toEqual(['provisioning@0', 'provisioning@0.5', 'loading@1.25', 'running@2.375']);
    const d = describeOutcome(7, r);
    expect(d.ok).toBe(true);
    expect(d.text).toContain('ssh -p 40022 root@10.0.0.5');
    expect(d.text).toContain('after 2s');
  });

  it('keeps waiting while running has no ssh endpoint yet', async () => {
    const f = fake([inst('running'), inst('running', { ssh_host: 'h', ssh_port: 22 })]);
    expect((await waitForInstance(7, f.io, opts)).kind).toBe('running');
    expect(f.polls.length).toBe(2);
  });

  it.each(['exited', 'unknown', 'offline'])(
    'stops at once on %s, suggesting destroy and another offer',
    async (state) => {
      const f = fake([inst('loading'), inst(state, { status_msg: 'main process died' })]);
      const r = await waitForInstance(7, f.io, opts);
      expect(r).toMatchObject({ kind: 'failed', state });
      const d = describeOutcome(7, r);
      expect(d.ok).toBe(false);
      expect(d.text).toContain(`instance 7 is ${state}: main process died`);
      expect(d.text).toContain('openrig destroy instance 7');
      expect(d.text).toContain('another offer');
      expect(f.sleeps).toEqual([500]);
    },
  );

  it('says so when the instance is gone or stopped', async () => {
    expect(describeOutcome(7, await waitForInstance(7, fake([null]).io, opts)).text).toContain(
      'does not exist',
    );
    const stopped = await waitForInstance(
      7,
      fake([inst('stopped', { intended_status: 'stopped' })]).io,
      opts,
    );
    expect(describeOutcome(7, stopped).text).toContain('openrig start instance 7');
  });

  it('waits for a stopped instance that was just started', async () => {
    const f = fake([
      inst('stopped', { intended_status: 'running' }),
      inst('loading'),
      inst('running', { ssh_host: 'h', ssh_port: 22 }),
    ]);
    expect((await waitForInstance(7, f.io, opts)).kind).toBe('running');
    expect(f.polls.length).toBe(3);
  });

  it('honours a configurable interval and gives up at the timeout', async () => {
    const f = fake([inst('loading')]);
    const r = await waitForInstance(7, f.io, { intervalMs: 2000, timeoutMs: 7000 });
    expect(r).toMatchObject({ kind: 'timeout', state: 'loading' });
    // 0.5, 0.75, 1.125, 1.6875, then the 2 s ceiling.
    expect(f.sleeps).toEqual([500, 750, 1125, 1688, 2000]);
    expect(describeOutcome(7, r).text).toContain('still loading after 6s');
  });

  it('waits for stopped with until: stopped', async () => {
    const f = fake([
      inst('running', { intended_status: 'stopped' }),
      inst('stopped', { intended_status: 'stopped' }),
    ]);
    const r = await waitForInstance(7, f.io, { ...opts, until: 'stopped' });
    expect(r.kind).toBe('halted');
    expect(describeOutcome(7, r)).toEqual({ ok: true, text: 'instance 7 is stopped (after 0s)\n' });
  });

  it('names a key ssh does not try by itself in the Connect line', async () => {
    const r = await waitForInstance(7, fake([inst('running', { ssh_host: 'h', ssh_port: 22 })]).io, opts);
    expect(describeOutcome(7, r, '~/.ssh/work').text).toContain('ssh -i ~/.ssh/work -p 22 root@h');
    expect(describeOutcome(7, r).text).toContain('ssh -p 22 root@h');
  });

  it('rides out a few network failures but not a client error', async () => {
    const f = fake([
      new NetworkError('down'),
      new NetworkError('down'),
      inst('running', { ssh_host: 'h', ssh_port: 2 }),
    ]);
    expect((await waitForInstance(7, f.io, opts)).kind).toBe('running');
    const g = fake([new NetworkError('down')]);
    await expect(waitForInstance(7, g.io, opts)).rejects.toThrow('down');
    expect(g.polls.length).toBe(4);
    const h = fake([new ApiError(401, 'auth_error', 'Invalid user key', {}, '')]);
    await expect(waitForInstance(7, h.io, opts)).rejects.toThrow('Invalid user key');
    expect(h.polls.length).toBe(1);
  });
  it('after a reboot or recycle: says it ran again, or that it failed and how to bring it back', () => {
    const up = inst('running', { ssh_host: 'h', ssh_port: 22022 });
    expect(
      describeOutcome(7, { kind: 'running', instance: up, elapsedMs: 3000 }, undefined, 'reboot').text,
    ).toMatch(
      /^instance 7 is rebooted and running again \(after 3s\)\. Connect with:\n {2}ssh -p 22022 root@h\n/,
    );
    const dead = inst('exited', { status_msg: 'recycle failed: pull access denied' });
    expect(
      describeOutcome(
        7,
        { kind: 'failed', state: 'exited', instance: dead, elapsedMs: 1000 },
        undefined,
        'recycle',
      ),
    ).toEqual({
      ok: false,
      text: 'instance 7: the recycle failed: pull access denied; the instance is exited now. Start it again (openrig start instance 7) or destroy it (openrig destroy instance 7).',
    });
  });
});

describe('the wait line', () => {
  it('cuts the message to the width given and keeps the state and the elapsed time', () => {
    const msg = 'recycling: pulling nvcr.io/nvidia/pytorch:24.05-py3: 312/8450 MB';
    expect(waitText(7, 'loading', msg, 14_000)).toBe(`instance 7: loading: ${msg} (14s)`);
    const cut = waitText(7, 'loading', msg, 14_000, 50);
    expect(cut).toBe('instance 7: loading: recycling: pulling nvc… (14s)');
    expect([...cut].length).toBe(50);
    expect(waitText(7, 'loading', 'two\nlines', 0)).toBe('instance 7: loading: two lines (0s)');
    expect(waitText(7, 'provisioning', msg, 0, 30)).toBe('instance 7: provisioning (0s)');
  });
});
