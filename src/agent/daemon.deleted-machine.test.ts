// The agent and a machine its host deleted: the sync names it in deleted_machine_ids; the agent
// logs the refusal once, drops the machine without registering again, removes what is left of
// its instances, and stops (a fatal refusal) once it has no machine and nothing left here.
import { describe, expect, it } from 'vitest';
import { AgentFatalError } from './agent-client.js';
import {
  StillRuntime,
  desiredInstance,
  settle,
  stubSync,
  testAgent as quietAgent,
} from '../../test/helpers/fake-runtime.js';
import type { RegisterResponse } from '../contract/agent-protocol.js';

/** An agent on `rt` whose warnings and errors are kept in `logged`. */
function testAgent(rt: StillRuntime) {
  const logged = { error: [] as string[], warn: [] as string[] };
  const agent = quietAgent(rt, {
    log: {
      info: () => {},
      warn: (m: string) => logged.warn.push(m),
      error: (m: string) => logged.error.push(m),
    },
  });
  return { agent, logged };
}

/** The server's answer for an instance it has no live row for on this agent's machines: remove it. */
const gone = (id: number) => desiredInstance(id, 'destroyed', null, { machine_id: 0 });

describe('a machine deleted by its host', () => {
  it('is dropped and logged once, never registered again; its instance here is removed', async () => {
    const rt = new StillRuntime();
    rt.state.set(9, { state: 'running', sshPort: 40009 });
    const { agent, logged } = testAgent(rt);
    agent.machineIds = [5, 6];
    let registers = 0;
    agent.client.register = async (): Promise<RegisterResponse> => {
      registers++;
      throw new Error('not expected');
    };
    stubSync(agent, async () => ({
      unknown_machine_ids: [5],
      deleted_machine_ids: [5],
      instances: (await rt.list()).map(gone),
    }));
    await agent.syncOnce();
    await settle();
    expect(agent.machineIds).toEqual([6]);
    expect(registers).toBe(0);
    expect(logged.error).toEqual([
      'machine 5 was deleted by its host: the server refuses it, and this agent serves it no more',
    ]);
    expect(logged.warn).toEqual([]);
    expect(await rt.list()).toEqual([]);
    // An older reply naming it again logs nothing more.
    await agent.syncOnce();
    expect(logged.error).toHaveLength(1);
    expect([...agent.deletedMachines]).toEqual([5]);
  });

  it('with no machine left and nothing here, the agent stops: a fatal refusal naming the machines', async () => {
    const rt = new StillRuntime();
    rt.state.set(4, { state: 'running', sshPort: 40004 });
    const { agent } = testAgent(rt);
    agent.machineIds = [7];
    stubSync(agent, async () => ({
      unknown_machine_ids: [7],
      deleted_machine_ids: [7],
      instances: (await rt.list()).map(gone),
    }));
    // Its instance is still being removed: the agent stays for it.
    const slow = rt.destroy.bind(rt);
    let finish = () => {};
    rt.destroy = (id: number) => new Promise<void>((r) => (finish = () => void slow(id).then(r)));
    await agent.syncOnce();
    expect(agent.machineIds).toEqual([]);
    finish();
    await settle();
    const err = await agent.syncOnce().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AgentFatalError);
    expect((err as Error).message).toBe(
      'every machine of this agent was deleted by its host (7) and nothing is left to serve; start the agent with a fresh --state-dir to register new machines',
    );
  });

  it('a registration that answers a machine as deleted: logged, not served', async () => {
    const rt = new StillRuntime();
    const { agent, logged } = testAgent(rt);
    agent.client.register = async (): Promise<RegisterResponse> => ({
      success: true,
      machines: [{ slot: 1, machine_id: 12 }],
      deleted_machines: [{ slot: 0, machine_id: 11 }],
      heartbeat_s: 10,
      unknown_after_s: 60,
      offline_after_s: 300,
    });
    stubSync(agent, () => ({ instances: [] }));
    await agent.start();
    await agent.shutdown({ notify: false });
    expect(agent.machineIds).toEqual([12]);
    expect(logged.error).toEqual([
      'machine 11 was deleted by its host: the server refuses it, and this agent serves it no more',
    ]);
  });
});
