// The agent hands the runtime the launch mode the server sent: runtype `args` with its arguments
// and entrypoint; from an older server, which sends neither, the usual launch with onstart.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Agent } from './daemon.js';
import type { InstanceSpec, ObservedState, Runtime } from './runtime.js';
import type { DesiredInstance, SyncResponse } from '../contract/agent-protocol.js';

class RecordingRuntime implements Runtime {
  readonly name = 'process' as const;
  readonly started: InstanceSpec[] = [];
  private readonly state = new Map<number, ObservedState>();
  async prepare(): Promise<void> {}
  async start(spec: InstanceSpec): Promise<{ sshPort: number }> {
    this.started.push(spec);
    this.state.set(spec.id, { state: 'running', sshPort: 40000 + spec.id });
    return { sshPort: 40000 + spec.id };
  }
  async stop(): Promise<void> {}
  async destroy(): Promise<void> {}
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

const want = (id: number, machine: number, over: Partial<DesiredInstance> = {}): DesiredInstance => ({
  id,
  machine_id: machine,
  desired: 'running',
  actual_status: null,
  image: 'ubuntu:22.04',
  disk: 5,
  onstart: '/bin/sh',
  env: {},
  label: '',
  container_api_key: null,
  authorized_keys: [],
  ...over,
});

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('agent: the launch mode reaches the runtime', () => {
  it('args and entrypoint when the server sends them; null from an older server', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-agent-launch-'));
    dirs.push(dir);
    const rt = new RecordingRuntime();
    const agent = new Agent({
      server: 'http://127.0.0.1:1',
      apiKey: 'k',
      stateDir: dir,
      machines: [],
      runtime: rt,
      version: 't',
      log: { info: () => {}, warn: () => {}, error: () => {} },
    });
    agent.machineIds = [5, 6];
    agent.client.sync = async (): Promise<SyncResponse> => ({
      success: true,
      heartbeat_s: 10,
      server_time: 0,
      unknown_machine_ids: [],
      instances: [
        want(1, 5, { args: ['-c', 'echo from-args; sleep 1000'], entrypoint: '/bin/sh' }),
        // As an older server answers: no args, no entrypoint.
        want(2, 6, { onstart: 'echo hi' }),
      ],
    });
    await agent.syncOnce();
    await new Promise((r) => setTimeout(r, 20));
    const byId = new Map(rt.started.map((s) => [s.id, s]));
    expect(byId.get(1)).toMatchObject({
      onstart: '/bin/sh',
      args: ['-c', 'echo from-args; sleep 1000'],
      entrypoint: '/bin/sh',
    });
    expect(byId.get(2)).toMatchObject({ onstart: 'echo hi', args: null, entrypoint: null });
  });
});
