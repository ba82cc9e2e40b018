// The agent's own tests: a runtime whose instances simply are in a state (held in a map, every
// action a no-op that succeeds; tests extend it with the behaviour they look at), an agent on it
// that talks to no server, and the replies a stubbed server gives it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';
import { Agent, type AgentLog } from '../../src/agent/daemon.js';
import type { InstanceSpec, ObservedState, Runtime } from '../../src/agent/runtime.js';
import type { DesiredInstance, SyncRequest, SyncResponse } from '../../src/contract/agent-protocol.js';

export class StillRuntime implements Runtime {
  readonly name: Runtime['name'] = 'process';
  readonly state = new Map<number, ObservedState>();
  async prepare(): Promise<void> {}
  async start(spec: InstanceSpec): Promise<{ sshPort: number }> {
    return { sshPort: 40000 + spec.id };
  }
  async stop(_id: number): Promise<void> {}
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
  async reboot(_spec: InstanceSpec): Promise<void> {}
  async recycle(_spec: InstanceSpec): Promise<void> {}
  /** Holds the new configuration's instance, running or stopped, of the spec's generation. */
  async recreate(spec: InstanceSpec, opts: { start: boolean }): Promise<void> {
    const generation = spec.generation ?? 1;
    this.state.set(
      spec.id,
      opts.start
        ? { state: 'running', sshPort: 40000 + spec.id, generation }
        : { state: 'stopped', generation },
    );
  }
  async execute(): Promise<string> {
    return '';
  }
}

export const quietLog: AgentLog = { info: () => {}, warn: () => {}, error: () => {} };

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/**
 * An agent on `rt` that talks to no server (tests stub `agent.client`), keeping its state in `dir`
 * or in a fresh directory removed after the test.
 */
export function testAgent(rt: Runtime, o: { dir?: string; log?: AgentLog } = {}): Agent {
  let dir = o.dir;
  if (!dir) {
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-agent-'));
    dirs.push(dir);
  }
  return new Agent({
    server: 'http://127.0.0.1:1',
    apiKey: 'k',
    stateDir: dir,
    machines: [],
    runtime: rt,
    version: 't',
    log: o.log ?? quietLog,
  });
}

/** An instance as a sync reply lists it: on machine 5, image ubuntu, 5 GB, no onstart, env or keys. */
export const desiredInstance = (
  id: number,
  desired: DesiredInstance['desired'],
  actual: string | null,
  over: Partial<DesiredInstance> = {},
): DesiredInstance => ({
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
  ...over,
});

/**
 * Stubs the agent's sync: each call answers `reply()` (its instances, and whatever else it names)
 * over a reply that knows every machine; returns the reports the agent sent, in order.
 */
export function stubSync(
  agent: Agent,
  reply: () =>
    | (Partial<SyncResponse> & Pick<SyncResponse, 'instances'>)
    | Promise<Partial<SyncResponse> & Pick<SyncResponse, 'instances'>>,
): SyncRequest[] {
  const sent: SyncRequest[] = [];
  agent.client.sync = async (body: SyncRequest): Promise<SyncResponse> => {
    sent.push(body);
    return { success: true, heartbeat_s: 10, server_time: 0, unknown_machine_ids: [], ...(await reply()) };
  };
  // The sync's copies call (copy-runner.ts) answers that no copy is under way.
  agent.client.copies = async () => ({ success: true, copies: [] });
  return sent;
}

/** A few event-loop turns, for the work a sync started in the background. */
export const settle = () => new Promise((r) => setTimeout(r, 20));
