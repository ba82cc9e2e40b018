// The agent's reconcile loop with a fake runtime and a stubbed server: per machine, a start waits
// until the machine's other instance has really stopped here.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Agent } from './daemon.js';
import type { InstanceSpec, ObservedState, Runtime } from './runtime.js';
import type { DesiredInstance, SyncRequest, SyncResponse } from '../contract/agent-protocol.js';

class FakeRuntime implements Runtime {
  readonly name = 'process' as const;
  readonly state = new Map<number, ObservedState>();
  readonly events: string[] = [];
  private release: (() => void) | null = null;
  async prepare(): Promise<void> {}
  async start(spec: InstanceSpec): Promise<{ sshPort: number }> {
    this.events.push(`start ${spec.id}`);
    this.state.set(spec.id, { state: 'running', sshPort: 40000 + spec.id });
    return { sshPort: 40000 + spec.id };
  }
  /** Stops take until `finishStop()`: the slow stop of a real container. */
  async stop(id: number): Promise<void> {
    this.events.push(`stop ${id} begins`);
    await new Promise<void>((r) => (this.release = r));
    this.state.set(id, { state: 'stopped' });
    this.events.push(`stop ${id} ends`);
  }
  finishStop(): void {
    this.release?.();
  }
  async destroy(id: number): Promise<void> {
    this.state.delete(id);
  }
  async inspect(id: number): Promise<ObservedState> {
    return this.state.get(id) ?? { state: 'absent' };
  }
  async updateKeys(): Promise<void> {}
  async list(): Promise<number[]> {
    return [...this.state.keys()];
  }
  async logs(): Promise<string> {
    return '';
  }
  async reboot(): Promise<void> {}
  async recycle(): Promise<void> {}
  async execute(): Promise<string> {
    return '';
  }
}

const want = (id: number, desired: DesiredInstance['desired'], actual: string | null): DesiredInstance => ({
  id,
  machine_id: 5,
  desired,
  actual_status: actual,
  image: 'ubuntu',
  disk: 5,
  onstart: '',
  env: {},
  label: '',
  container_api_key: null,
  authorized_keys: [],
});

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('agent reconcile loop', () => {
  it("client B's start on a machine waits until client A's stop has finished here", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-agent-'));
    dirs.push(dir);
    const rt = new FakeRuntime();
    rt.state.set(1, { state: 'running', sshPort: 40001 }); // A runs
    const quiet = { info: () => {}, warn: () => {}, error: () => {} };
    const agent = new Agent({
      server: 'http://127.0.0.1:1',
      apiKey: 'k',
      stateDir: dir,
      machines: [],
      runtime: rt,
      version: 't',
      log: quiet,
    });
    agent.machineIds = [5];
    const sent: SyncRequest[] = [];
    // The server: A was stopped by its client (the machine is free), B rented it at once.
    agent.client.sync = async (body: SyncRequest): Promise<SyncResponse> => {
      sent.push(body);
      return {
        success: true,
        heartbeat_s: 10,
        server_time: 0,
        unknown_machine_ids: [],
        instances: [want(1, 'stopped', 'stopped'), want(2, 'running', null)],
      };
    };
    const settle = () => new Promise((r) => setTimeout(r, 20));

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
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-agent-'));
    dirs.push(dir);
    const rt = new FakeRuntime();
    rt.state.set(3, { state: 'exited', msg: 'main process exited (code 1)' });
    const quiet = { info: () => {}, warn: () => {}, error: () => {} };
    const agent = new Agent({
      server: 'http://127.0.0.1:1',
      apiKey: 'k',
      stateDir: dir,
      machines: [],
      runtime: rt,
      version: 't',
      log: quiet,
    });
    agent.machineIds = [5];
    let actual: string | null = 'exited';
    agent.client.sync = async (): Promise<SyncResponse> => ({
      success: true,
      heartbeat_s: 10,
      server_time: 0,
      unknown_machine_ids: [],
      instances: [want(3, 'running', actual)],
    });
    const settle = () => new Promise((r) => setTimeout(r, 20));
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
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-agent-'));
    dirs.push(dir);
    const rt = new FakeRuntime();
    rt.state.set(4, { state: 'running', sshPort: 40004 }); // kept running while the agent was away
    const quiet = { info: () => {}, warn: () => {}, error: () => {} };
    const agent = new Agent({
      server: 'http://127.0.0.1:1',
      apiKey: 'k',
      stateDir: dir,
      machines: [],
      runtime: rt,
      version: 't',
      log: quiet,
    });
    agent.machineIds = [5, 6];
    const sent: SyncRequest[] = [];
    agent.client.sync = async (body: SyncRequest): Promise<SyncResponse> => {
      sent.push(body);
      return {
        success: true,
        heartbeat_s: 10,
        server_time: 0,
        unknown_machine_ids: [],
        instances: [want(4, 'running', 'offline'), { ...want(7, 'running', 'offline'), machine_id: 6 }],
      };
    };
    await agent.syncOnce();
    expect(sent[0]!.instances).toEqual([
      { id: 4, state: 'running', status_msg: expect.any(String), ssh_port: 40004 },
    ]);
    await agent.syncOnce();
    expect(sent[1]!.instances).toEqual([
      { id: 4, state: 'running', status_msg: expect.any(String), ssh_port: 40004 },
      { id: 7, state: 'exited', status_msg: expect.stringMatching(/gone from the host/) },
    ]);
    expect(rt.events).toEqual([]); // nothing started or stopped
  });
});
