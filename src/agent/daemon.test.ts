// The agent's reconcile loop with a fake runtime and a stubbed server: per machine, a start waits
// until the machine's other instance has really stopped here.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { InstanceSpec, ObservedState } from './runtime.js';
import {
  StillRuntime,
  desiredInstance as want,
  settle,
  stubSync,
  testAgent,
} from '../../test/helpers/fake-runtime.js';
import type { AgentRequest, DesiredInstance, ResultsRequest } from '../contract/agent-protocol.js';

class FakeRuntime extends StillRuntime {
  readonly events: string[] = [];
  readonly started: InstanceSpec[] = [];
  private release: (() => void) | null = null;
  override async start(spec: InstanceSpec): Promise<{ sshPort: number }> {
    this.events.push(`start ${spec.id}`);
    this.started.push(spec);
    this.state.set(spec.id, { state: 'running', sshPort: 40000 + spec.id });
    return { sshPort: 40000 + spec.id };
  }
  /** Stops take until `finishStop()`: the slow stop of a real container. */
  override async stop(id: number): Promise<void> {
    this.events.push(`stop ${id} begins`);
    await new Promise<void>((r) => (this.release = r));
    this.state.set(id, { state: 'stopped' });
    this.events.push(`stop ${id} ends`);
  }
  finishStop(): void {
    this.release?.();
  }
  /** A reboot takes until `finishReboot()`. */
  override async reboot(spec: InstanceSpec): Promise<void> {
    this.events.push(`reboot ${spec.id} begins`);
    await new Promise<void>((r) => (this.rebooted = r));
    this.events.push(`reboot ${spec.id} ends`);
  }
  rebooted: (() => void) | null = null;
  /** A recycle fails; with `recycleLeaves`, the instance is left in that state. */
  recycleLeaves: ObservedState | null = null;
  override async recycle(spec: InstanceSpec): Promise<void> {
    if (this.recycleLeaves) this.state.set(spec.id, this.recycleLeaves);
    throw new Error('pull access denied');
  }
}

describe('agent reconcile loop', () => {
  it("client B's start on a machine waits until client A's stop has finished here", async () => {
    const rt = new FakeRuntime();
    rt.state.set(1, { state: 'running', sshPort: 40001 }); // A runs
    const agent = testAgent(rt);
    agent.machineIds = [5];
    // The server: A was stopped by its client (the machine is free), B rented it at once.
    const sent = stubSync(agent, () => ({
      instances: [want(1, 'stopped', 'stopped'), want(2, 'running', null)],
    }));

    await agent.syncOnce();
    await settle();
    expect(rt.events).toEqual(['stop 1 begins']);
    await agent.syncOnce(); // a heartbeat while A still stops: B still waits
    await settle();
    expect(rt.events).toEqual(['stop 1 begins']);

    rt.finishStop();
    await settle();
    await agent.syncOnce();
    await settle();
    expect(rt.events).toEqual(['stop 1 begins', 'stop 1 ends', 'start 2']);
    // B's start is announced as loading in the next report, then running.
    await agent.syncOnce();
    expect(sent.at(-1)!.instances).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: 2, state: 'loading' }),
        expect.objectContaining({ id: 1, state: 'stopped' }),
      ]),
    );
    await agent.syncOnce();
    expect(sent.at(-1)!.instances).toEqual(
      expect.arrayContaining([expect.objectContaining({ id: 2, state: 'running', ssh_port: 40002 })]),
    );
  });

  it('an exited instance is restarted once the server shows it null again (a client start)', async () => {
    const rt = new FakeRuntime();
    rt.state.set(3, { state: 'exited', msg: 'main process exited (code 1)' });
    const agent = testAgent(rt);
    agent.machineIds = [5];
    let actual: string | null = 'exited';
    stubSync(agent, () => ({ instances: [want(3, 'running', actual)] }));
    await agent.syncOnce();
    await settle();
    expect(rt.events).toEqual([]); // exited never runs again by itself
    actual = null;
    const finishing = agent.syncOnce();
    await settle();
    rt.finishStop(); // the restart first clears the dead main process
    await finishing;
    await settle();
    expect(rt.events).toEqual(['stop 3 begins', 'stop 3 ends', 'start 3']);
  });

  it('after offline: a survivor is reported running (not restarted), a vanished one exited', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-agent-held-'));
    try {
      // Before the agent stopped, both ran here.
      const before = new FakeRuntime();
      before.state.set(4, { state: 'running', sshPort: 40004 });
      before.state.set(7, { state: 'running', sshPort: 40007 });
      const first = testAgent(before, { dir });
      first.machineIds = [5, 6];
      stubSync(first, () => ({
        instances: [want(4, 'running', 'running'), want(7, 'running', 'running', { machine_id: 6 })],
      }));
      await first.syncOnce();

      const rt = new FakeRuntime();
      rt.state.set(4, { state: 'running', sshPort: 40004 }); // kept running while the agent was away
      const agent = testAgent(rt, { dir });
      agent.machineIds = [5, 6];
      const sent = stubSync(agent, () => ({
        instances: [want(4, 'running', 'offline'), want(7, 'running', 'offline', { machine_id: 6 })],
      }));
      await agent.syncOnce();
      expect(sent[0]!.instances).toEqual([
        { id: 4, state: 'running', status_msg: expect.any(String), ssh_port: 40004 },
      ]);
      await agent.syncOnce();
      expect(sent[1]!.instances).toEqual([
        { id: 4, state: 'running', status_msg: expect.any(String), ssh_port: 40004 },
        {
          id: 7,
          state: 'exited',
          status_msg: 'the instance is gone from the host (found missing when its agent came back)',
        },
      ]);
      expect(rt.events).toEqual([]); // nothing started or stopped
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('after offline: an instance created just before the agent stopped, never started here, is started', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-agent-held-'));
    try {
      // The agent stopped (its shutdown took the machine and the null instance offline) before a
      // sync handed it instance 9; instance 4 ran here.
      const before = new FakeRuntime();
      before.state.set(4, { state: 'running', sshPort: 40004 });
      const first = testAgent(before, { dir });
      first.machineIds = [5];
      stubSync(first, () => ({ instances: [want(4, 'running', 'running')] }));
      await first.syncOnce();
      expect(JSON.parse(readFileSync(path.join(dir, 'held.json'), 'utf8'))).toEqual({ ids: [4] });

      for (const lost of ['offline', 'unknown']) {
        const rt = new FakeRuntime();
        const agent = testAgent(rt, { dir });
        agent.machineIds = [5, 6];
        const sent = stubSync(agent, () => ({
          instances: [want(9, 'running', lost, { machine_id: 6 })],
        }));
        await agent.syncOnce();
        await settle();
        expect(rt.events).toEqual(['start 9']);
        await agent.syncOnce();
        expect(sent[1]!.instances).toEqual([expect.objectContaining({ id: 9, state: 'loading' })]);
        await agent.syncOnce();
        expect(sent[2]!.instances).toEqual([expect.objectContaining({ id: 9, state: 'running' })]);
        // Once started here it is held: were it to vanish, it is gone, not started again.
        expect(JSON.parse(readFileSync(path.join(dir, 'held.json'), 'utf8')).ids).toContain(9);
        rt.state.delete(9);
        const again = new FakeRuntime();
        const next = testAgent(again, { dir });
        next.machineIds = [5, 6];
        const told = stubSync(next, () => ({ instances: [want(9, 'running', lost, { machine_id: 6 })] }));
        await next.syncOnce();
        await next.syncOnce();
        await settle();
        expect(again.events).toEqual([]);
        expect(told[1]!.instances).toEqual([
          expect.objectContaining({ id: 9, state: 'exited', status_msg: expect.stringMatching(/gone/) }),
        ]);
        // Destroyed: forgotten (and so is 4, which the server no longer lists and is not here).
        stubSync(next, () => ({ instances: [want(9, 'destroyed', lost, { machine_id: 6 })] }));
        await next.syncOnce();
        expect(JSON.parse(readFileSync(path.join(dir, 'held.json'), 'utf8'))).toEqual({ ids: [] });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a running instance whose container vanished is reported exited, not made anew; a client start makes it anew', async () => {
    const rt = new FakeRuntime();
    rt.state.set(3, { state: 'running', sshPort: 40003 });
    const agent = testAgent(rt);
    agent.machineIds = [5];
    let actual: string | null = 'running';
    const sent = stubSync(agent, () => ({ instances: [want(3, 'running', actual)] }));
    await agent.syncOnce();
    rt.state.delete(3); // removed behind the agent's back
    await agent.syncOnce();
    await agent.syncOnce();
    await settle();
    expect(rt.events).toEqual([]);
    expect(sent.at(-1)!.instances).toEqual([
      {
        id: 3,
        state: 'exited',
        status_msg: 'the instance is gone from the host (its files were removed while it ran)',
      },
    ]);
    actual = 'exited'; // what the server made of the report: still not started
    await agent.syncOnce();
    await settle();
    expect(rt.events).toEqual([]);
    actual = null; // the client's start
    await agent.syncOnce();
    await settle();
    expect(rt.events).toEqual(['start 3']);
  });

  it('a restarted agent that finds a running instance missing reports it exited, and does not start it', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-agent-held-'));
    try {
      // A fresh state directory too: the server saw it run, which is enough.
      for (const d of [dir, undefined]) {
        const rt = new FakeRuntime();
        const agent = testAgent(rt, { dir: d });
        agent.machineIds = [5];
        const sent = stubSync(agent, () => ({ instances: [want(3, 'running', 'running')] }));
        await agent.syncOnce();
        await agent.syncOnce();
        await settle();
        expect(rt.events).toEqual([]);
        expect(sent[1]!.instances).toEqual([
          {
            id: 3,
            state: 'exited',
            status_msg: 'the instance is gone from the host (found missing when its agent came back)',
          },
        ]);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a reboot is an operation: reported loading with its step, left alone by the reconcile, answered with the new start; a failed recycle that stopped it is reported exited', async () => {
    const rt = new FakeRuntime();
    rt.state.set(8, { state: 'running', sshPort: 40008 });
    const agent = testAgent(rt);
    agent.machineIds = [5];
    const answers: ResultsRequest['results'] = [];
    let requests: AgentRequest[] = [{ id: 21, instance_id: 8, kind: 'reboot' }];
    let desired: DesiredInstance['desired'] = 'running';
    const sent = stubSync(agent, () => ({ instances: [want(8, desired, 'loading')], requests }));
    agent.client.results = async (body: ResultsRequest) => {
      answers.push(...body.results);
      return { success: true };
    };
    const last = () => sent.at(-1)!.instances.find((i) => i.id === 8);

    await agent.syncOnce(); // hands out the reboot
    await settle();
    expect(rt.events).toEqual(['reboot 8 begins']);
    await agent.syncOnce(); // the same request listed again while under way: not run twice
    await settle();
    expect(last()).toEqual({ id: 8, state: 'loading', status_msg: 'rebooting: restarting the container' });
    expect(rt.events).toEqual(['reboot 8 begins']); // no start or stop from the reconcile
    expect(answers).toEqual([]);
    rt.rebooted!();
    await settle();
    expect(answers).toEqual([
      { id: 21, ok: true, output: expect.stringMatching(/^rebooted: the container started again at \d{4}-/) },
    ]);
    requests = [];
    await agent.syncOnce();
    expect(last()).toMatchObject({ id: 8, state: 'running', ssh_port: 40008 });

    // A recycle that failed and left nothing running: exited, with the reason.
    rt.recycleLeaves = { state: 'stopped' };
    requests = [{ id: 22, instance_id: 8, kind: 'recycle' }];
    await agent.syncOnce();
    await settle();
    expect(answers.at(-1)).toEqual({ id: 22, ok: false, output: 'pull access denied' });
    requests = [];
    await agent.syncOnce();
    expect(last()).toEqual({ id: 8, state: 'exited', status_msg: 'recycle failed: pull access denied' });

    // A reboot of an instance the client stopped meanwhile is refused, not carried out.
    rt.state.set(8, { state: 'running', sshPort: 40008 });
    desired = 'stopped';
    requests = [{ id: 23, instance_id: 8, kind: 'reboot' }];
    await agent.syncOnce();
    await settle();
    expect(answers.at(-1)).toMatchObject({
      id: 23,
      ok: false,
      output: expect.stringMatching(/to be stopped/),
    });
    expect(rt.events.filter((e) => e.startsWith('reboot'))).toHaveLength(2);
  });

  // The launch mode: runtype `args` with its arguments and entrypoint; an older server sends
  // neither, and the instance launches the usual way, with onstart.
  it('hands the runtime args and entrypoint when the server sends them; null from an older server', async () => {
    const rt = new FakeRuntime();
    const agent = testAgent(rt);
    agent.machineIds = [5, 6];
    stubSync(agent, () => ({
      instances: [
        want(1, 'running', null, {
          onstart: '/bin/sh',
          args: ['-c', 'echo from-args; sleep 1000'],
          entrypoint: '/bin/sh',
        }),
        want(2, 'running', null, { machine_id: 6, onstart: 'echo hi' }),
      ],
    }));
    await agent.syncOnce();
    await settle();
    const byId = new Map(rt.started.map((x) => [x.id, x]));
    expect(byId.get(1)).toMatchObject({
      onstart: '/bin/sh',
      args: ['-c', 'echo from-args; sleep 1000'],
      entrypoint: '/bin/sh',
    });
    expect(byId.get(2)).toMatchObject({ onstart: 'echo hi', args: null, entrypoint: null });
  });
});
