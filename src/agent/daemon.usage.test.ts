// The agent's reports carry disk usage and GPU utilisation only to a server that takes them (its
// register answer says so), each instance's GPU figure from its machine's GPUs, and a server that
// refuses them (an older one put back under a running agent) gets its syncs without them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Agent } from './daemon.js';
import { AgentHttpError } from './agent-client.js';
import type { DiskUsage } from './runtime.js';
import { StillRuntime } from '../../test/helpers/fake-runtime.js';
import type {
  AgentMachineHardware,
  DesiredInstance,
  RegisterResponse,
  SyncRequest,
  SyncResponse,
} from '../contract/agent-protocol.js';

/** Instances that simply are in a state, each with a disk of a known size. */
class DiskRuntime extends StillRuntime {
  override readonly name = 'docker' as const;
  readonly disks = new Map<number, number>();
  diskCalls = 0;
  async diskUsage(id: number): Promise<DiskUsage | null> {
    this.diskCalls++;
    const b = this.disks.get(id);
    return b === undefined ? null : { bytes: b };
  }
}

const machine = (slot: number): AgentMachineHardware => ({
  slot,
  hostname: `h${slot}`,
  gpu_name: 'RTX 4090',
  num_gpus: 2,
  gpu_ram: 24564,
  cpu_name: 'cpu',
  cpu_cores: 8,
  cpu_ghz: 3,
  cpu_ram: 64000,
  disk_space: 500,
  driver_version: '550.54',
  cuda_max_good: 12.4,
  dlperf: 78,
});

const want = (id: number, machineId: number, desired: DesiredInstance['desired']): DesiredInstance => ({
  id,
  machine_id: machineId,
  desired,
  actual_status: desired === 'running' ? 'running' : 'stopped',
  image: 'ubuntu',
  disk: 10,
  onstart: '',
  env: {},
  label: '',
  container_api_key: 'k',
  authorized_keys: [],
});

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/**
 * An agent with two machines of two real GPUs each (by default devices "0,1" and "2,3"), instance 1
 * running on the first, instance 2 stopped on the second; `usageReports` is what register answers.
 */
async function setup(usageReports: boolean | undefined, devices: (string | null)[] = ['0,1', '2,3']) {
  const dir = mkdtempSync(path.join(tmpdir(), 'openrig-agent-usage-'));
  dirs.push(dir);
  const rt = new DiskRuntime();
  rt.state.set(1, { state: 'running', sshPort: 40001 });
  rt.state.set(2, { state: 'stopped' });
  rt.disks.set(1, 3_000_000);
  rt.disks.set(2, 1_500_000);
  let smiRuns = 0;
  const agent = new Agent({
    server: 'http://127.0.0.1:1',
    apiKey: 'k',
    stateDir: dir,
    machines: [machine(0), machine(1)],
    devices,
    runtime: rt,
    version: 't',
    log: { info: () => {}, warn: () => {}, error: () => {} },
    gpuUtil: async () => (smiRuns++, new Map(Object.entries({ '0': 40, '1': 61, '2': 99, '3': 99 }))),
  });
  agent.client.register = async (): Promise<RegisterResponse> => ({
    success: true,
    machines: [
      { slot: 0, machine_id: 5 },
      { slot: 1, machine_id: 6 },
    ],
    heartbeat_s: 10,
    unknown_after_s: 60,
    offline_after_s: 300,
    ...(usageReports === undefined ? {} : { usage_reports: usageReports }),
  });
  await (agent as unknown as { register(): Promise<void> }).register();
  const sent: SyncRequest[] = [];
  let refuse: string | null = null;
  agent.client.sync = async (body: SyncRequest): Promise<SyncResponse> => {
    sent.push(structuredClone(body));
    if (refuse && JSON.stringify(body).includes(refuse))
      throw new AgentHttpError(400, `/sync: HTTP 400: body.instances.0 must NOT have additional properties`);
    return {
      success: true,
      heartbeat_s: 10,
      server_time: 0,
      unknown_machine_ids: [],
      instances: [want(1, 5, 'running'), want(2, 6, 'stopped')],
    };
  };
  return { agent, rt, sent, smiRuns: () => smiRuns, refuseWith: (s: string) => (refuse = s) };
}

describe('agent: disk usage and GPU utilisation in the reports', () => {
  it('sends them once measured: the disk of each instance, the mean of its machine’s GPUs while it runs', async () => {
    const { agent, rt, sent, smiRuns } = await setup(true);
    await agent.syncOnce(); // measurements begin; nothing known yet, the machines not yet named
    await agent.usage.settled();
    await agent.syncOnce(); // the disks are known; the server has named each instance's machine
    await agent.usage.settled();
    await agent.syncOnce();
    expect(sent[0]!.instances).toEqual([
      { id: 1, state: 'running', status_msg: expect.any(String), ssh_port: 40001 },
      { id: 2, state: 'stopped', status_msg: 'stopped', gpu_util: null },
    ]);
    expect(sent[2]!.instances).toEqual([
      {
        id: 1,
        state: 'running',
        status_msg: expect.any(String),
        ssh_port: 40001,
        disk_usage_bytes: 3_000_000,
        gpu_util: 50.5,
      },
      { id: 2, state: 'stopped', status_msg: 'stopped', disk_usage_bytes: 1_500_000, gpu_util: null },
    ]);
    // At most once a minute: three syncs, one disk measurement per instance, one nvidia-smi run.
    expect(rt.diskCalls).toBe(2);
    expect(smiRuns()).toBe(1);
  });

  it('with simulated GPUs a running instance has no GPU figure (null), and nvidia-smi is never run', async () => {
    const { agent, sent, smiRuns } = await setup(true, [null, null]);
    for (let i = 0; i < 2; i++) {
      await agent.syncOnce();
      await agent.usage.settled();
    }
    expect(sent[1]!.instances[0]).toMatchObject({ id: 1, state: 'running', gpu_util: null });
    expect(smiRuns()).toBe(0);
  });

  it('sends none to a server that does not say it takes them (an older one)', async () => {
    for (const flag of [undefined, false]) {
      const { agent, rt, sent } = await setup(flag);
      for (let i = 0; i < 3; i++) {
        await agent.syncOnce();
        await agent.usage.settled();
      }
      for (const body of sent)
        for (const r of body.instances) {
          expect(r).not.toHaveProperty('disk_usage_bytes');
          expect(r).not.toHaveProperty('gpu_util');
        }
      expect(rt.diskCalls).toBe(0);
    }
  });

  it('a sync refused with them is sent again without them', async () => {
    const { agent, sent, refuseWith } = await setup(true);
    await agent.syncOnce();
    await agent.usage.settled();
    refuseWith('disk_usage_bytes');
    await expect(agent.syncOnce()).rejects.toThrow(/HTTP 400/);
    await agent.syncOnce();
    expect(sent).toHaveLength(3);
    expect(JSON.stringify(sent[1])).toContain('disk_usage_bytes');
    expect(JSON.stringify(sent[2])).not.toContain('disk_usage_bytes');
    expect(JSON.stringify(sent[2])).not.toContain('gpu_util');
  });
});
