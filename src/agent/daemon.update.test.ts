// The agent's side of update instance, with a fake runtime and a stubbed server: it says at
// registration that it recreates by generation (and registers without it when an older server
// refuses the field); an instance here of an older generation is recreated from the server's
// configuration, reported loading with the new generation meanwhile; a failed recreate stops what
// is left and is not retried by itself; an agent restarted part-way converges; a stopped instance
// is replaced and left stopped; with an older server (no generations) nothing is recreated.
import { describe, expect, it } from 'vitest';
import type { Agent } from './daemon.js';
import { AgentFatalError } from './agent-client.js';
import type { InstanceSpec } from './runtime.js';
import {
  StillRuntime,
  desiredInstance,
  quietLog as quiet,
  settle,
  stubSync,
  testAgent,
} from '../../test/helpers/fake-runtime.js';
import type {
  DesiredInstance,
  RegisterRequest,
  RegisterResponse,
  SyncRequest,
} from '../contract/agent-protocol.js';

/** Records every recreate and start; a recreate waits for `finish()` when `gated`, or fails. */
class Recording extends StillRuntime {
  readonly recreated: { spec: InstanceSpec; start: boolean }[] = [];
  readonly started: InstanceSpec[] = [];
  readonly stopped: number[] = [];
  gated = false;
  failWith: string | null = null;
  private release: (() => void) | null = null;
  finish(): void {
    this.release?.();
  }
  override async recreate(spec: InstanceSpec, opts: { start: boolean }): Promise<void> {
    this.recreated.push({ spec, start: opts.start });
    if (this.gated) await new Promise<void>((r) => (this.release = r));
    if (this.failWith) throw new Error(this.failWith);
    return super.recreate(spec, opts);
  }
  override async start(spec: InstanceSpec): Promise<{ sshPort: number }> {
    this.started.push(spec);
    this.state.set(spec.id, { state: 'running', sshPort: 40000 + spec.id, generation: spec.generation });
    return { sshPort: 40000 + spec.id };
  }
  override async stop(id: number): Promise<void> {
    this.stopped.push(id);
    const st = this.state.get(id);
    if (st && st.state !== 'absent') this.state.set(id, { state: 'stopped', generation: st.generation });
  }
}

/** An instance of the updated configuration: python:3.12, onstart `echo two`, FOO=two. */
const want = (
  id: number,
  desired: DesiredInstance['desired'],
  actual: string | null,
  over: Partial<DesiredInstance> = {},
): DesiredInstance =>
  desiredInstance(id, desired, actual, {
    image: 'python:3.12',
    onstart: 'echo two',
    env: { FOO: 'two' },
    ...over,
  });

const registered = (over: Partial<RegisterResponse> = {}): RegisterResponse => ({
  success: true,
  machines: [{ slot: 0, machine_id: 5 }],
  heartbeat_s: 10,
  unknown_after_s: 60,
  offline_after_s: 300,
  usage_reports: true,
  config_generations: true,
  ...over,
});

/** Registers with a stubbed server that answers `reply` (and records what the agent sent). */
async function register(agent: Agent, reply: () => RegisterResponse): Promise<RegisterRequest[]> {
  const sent: RegisterRequest[] = [];
  agent.client.register = async (body: RegisterRequest) => {
    sent.push(body);
    return reply();
  };
  await (agent as unknown as { register(): Promise<void> }).register();
  return sent;
}

/** A stubbed sync: answers `instances()` and records the reports. */
const serve = (agent: Agent, instances: () => DesiredInstance[]): SyncRequest[] =>
  stubSync(agent, () => ({ instances: instances() }));

describe('agent: update instance (configuration generations)', () => {
  it('says config_generations at registration; an older server that refuses it gets a registration without it', async () => {
    const agent = testAgent(new Recording());
    expect((await register(agent, () => registered()))[0]).toMatchObject({ config_generations: true });

    const warnings: string[] = [];
    const old = testAgent(new Recording(), { log: { ...quiet, warn: (m) => warnings.push(m) } });
    let calls = 0;
    const sent = await register(old, () => {
      if (++calls === 1)
        throw new AgentFatalError('/register: HTTP 400: body must NOT have additional properties', 400);
      return registered({ usage_reports: undefined, config_generations: undefined });
    });
    expect(sent).toHaveLength(2);
    expect(sent[0]).toHaveProperty('config_generations', true);
    expect(sent[1]).not.toHaveProperty('config_generations');
    expect(warnings.join('\n')).toMatch(/refused config_generations/);
    // That server takes no generation in reports.
    const rt = old['o'].runtime as Recording;
    rt.state.set(1, { state: 'running', sshPort: 40001, generation: 1 });
    const reports = serve(old, () => [want(1, 'running', 'running')]);
    await old.syncOnce();
    expect(reports[0]!.instances[0]).not.toHaveProperty('generation');
  });

  it('sends its event-loop delay with a sync only to a server whose registration says it takes it', async () => {
    const delay = { p50: 1, p99: 20, max: 35 };
    const withDelay = (agent: Agent) => {
      (agent['o'] as { loopDelay?: () => typeof delay }).loopDelay = () => delay;
      return agent;
    };
    const older = withDelay(testAgent(new Recording()));
    await register(older, () => registered());
    const toOlder = serve(older, () => []);
    await older.syncOnce();
    expect(toOlder[0]).not.toHaveProperty('event_loop_delay_ms');

    const current = withDelay(testAgent(new Recording()));
    await register(current, () => registered({ loop_delay_reports: true }));
    const toCurrent = serve(current, () => []);
    await current.syncOnce();
    expect(toCurrent[0]).toMatchObject({ event_loop_delay_ms: delay });
  });

  it('recreates an instance of an older generation; loading with the new generation meanwhile, then running', async () => {
    const rt = new Recording();
    rt.state.set(1, { state: 'running', sshPort: 40001, generation: 1 });
    rt.gated = true;
    const agent = testAgent(rt);
    await register(agent, () => registered());
    let actual = 'running';
    let generation = 1;
    const sent = serve(agent, () => [want(1, 'running', actual, { generation })]);

    await agent.syncOnce();
    expect(sent[0]!.instances).toEqual([expect.objectContaining({ id: 1, state: 'running', generation: 1 })]);
    await settle();
    expect(rt.recreated).toEqual([]); // up to date: nothing to do

    // The client updated it: the server shows loading and generation 2.
    actual = 'loading';
    generation = 2;
    await agent.syncOnce();
    await settle();
    expect(rt.recreated).toHaveLength(1);
    expect(rt.recreated[0]!.start).toBe(true);
    expect(rt.recreated[0]!.spec).toMatchObject({
      id: 1,
      image: 'python:3.12',
      onstart: 'echo two',
      generation: 2,
      env: expect.objectContaining({ FOO: 'two' }),
    });
    await agent.syncOnce(); // meanwhile: loading, of the new generation
    expect(sent.at(-1)!.instances).toEqual([
      expect.objectContaining({
        id: 1,
        state: 'loading',
        generation: 2,
        status_msg: expect.stringMatching(/^updating/),
      }),
    ]);
    expect(rt.recreated).toHaveLength(1); // one operation at a time

    rt.finish();
    await settle();
    await agent.syncOnce();
    expect(sent.at(-1)!.instances).toEqual([
      expect.objectContaining({ id: 1, state: 'running', ssh_port: 40001, generation: 2 }),
    ]);
    await settle();
    expect(rt.recreated).toHaveLength(1);
  });

  it('a failed recreate stops what is left, is reported exited, and is tried again only on a client start', async () => {
    const rt = new Recording();
    rt.state.set(2, { state: 'running', sshPort: 40002, generation: 1 });
    rt.failWith = 'pull access denied for python';
    const agent = testAgent(rt);
    await register(agent, () => registered());
    let actual: string | null = 'loading';
    const sent = serve(agent, () => [want(2, 'running', actual, { generation: 2 })]);
    await agent.syncOnce();
    await settle();
    expect(rt.recreated).toHaveLength(1);
    expect(rt.stopped).toEqual([2]); // the old container does not run on unseen
    await agent.syncOnce();
    expect(sent.at(-1)!.instances).toEqual([
      expect.objectContaining({
        id: 2,
        state: 'exited',
        status_msg: 'failed to recreate: pull access denied for python',
        generation: 2,
      }),
    ]);
    actual = 'exited';
    await agent.syncOnce();
    await settle();
    await agent.syncOnce();
    await settle();
    expect(rt.recreated).toHaveLength(1); // not retried by itself
    // A client start sets it back to null: tried again.
    rt.failWith = null;
    actual = null;
    await agent.syncOnce();
    await settle();
    expect(rt.recreated).toHaveLength(2);
    await agent.syncOnce();
    expect(sent.at(-1)!.instances).toEqual([
      expect.objectContaining({ id: 2, state: 'running', generation: 2 }),
    ]);
  });

  it('an agent restarted part-way converges: a removed container is started anew, a surviving old one recreated', async () => {
    const rt = new Recording();
    // The first agent died after removing the old container of 3, and before touching that of 4.
    rt.state.set(4, { state: 'running', sshPort: 40004, generation: 1 });
    const agent = testAgent(rt);
    await register(agent, () => registered());
    serve(agent, () => [
      want(3, 'running', 'loading', { generation: 2 }),
      want(4, 'running', 'loading', { generation: 2, machine_id: 6 }),
    ]);
    agent.machineIds = [5, 6];
    await agent.syncOnce();
    await settle();
    expect(rt.started.map((s) => [s.id, s.generation])).toEqual([[3, 2]]);
    expect(rt.recreated.map((r) => [r.spec.id, r.spec.generation, r.start])).toEqual([[4, 2, true]]);
    expect(await rt.inspect(3)).toMatchObject({ state: 'running', generation: 2 });
    expect(await rt.inspect(4)).toMatchObject({ state: 'running', generation: 2 });
  });

  it('a stopped instance is stopped first, then replaced and left stopped (reported stopped meanwhile)', async () => {
    const rt = new Recording();
    rt.state.set(5, { state: 'stopped', generation: 1 });
    rt.gated = true;
    const agent = testAgent(rt);
    await register(agent, () => registered());
    const sent = serve(agent, () => [want(5, 'stopped', 'stopped', { generation: 2 })]);
    await agent.syncOnce();
    await settle();
    expect(rt.recreated.map((r) => r.start)).toEqual([false]);
    await agent.syncOnce();
    expect(sent.at(-1)!.instances).toEqual([
      expect.objectContaining({ id: 5, state: 'stopped', generation: 2 }),
    ]);
    rt.finish();
    await settle();
    expect(await rt.inspect(5)).toEqual({ state: 'stopped', generation: 2 });
  });

  it('with an older server (no generation in the sync) nothing is recreated', async () => {
    const rt = new Recording();
    rt.state.set(6, { state: 'running', sshPort: 40006, generation: 1 });
    const agent = testAgent(rt);
    await register(agent, () => registered({ config_generations: undefined }));
    const sent = serve(agent, () => [want(6, 'running', 'running')]);
    await agent.syncOnce();
    await settle();
    expect(rt.recreated).toEqual([]);
    expect(sent[0]!.instances[0]).not.toHaveProperty('generation');
  });
});
