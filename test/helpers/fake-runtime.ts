// A runtime for the agent's own tests: instances that simply are in a state, held in a map, and
// every action a no-op that succeeds. Tests extend it with the behaviour they look at.
import type { InstanceSpec, ObservedState, Runtime } from '../../src/agent/runtime.js';

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
