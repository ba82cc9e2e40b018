// Disk usage end to end: `serve` and an `openrig agent` with the process runtime (simulated
// GPUs); an instance whose onstart writes 5 MB reads disk_usage of at least that once the agent
// has measured it, in the single-instance GET and the lists, still after a stop; gpu_util stays
// null (no real GPU to measure).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  callApi,
  createUser,
  endInstanceGroups,
  startProc,
  startServe,
  waitFor,
  type Proc,
  processAgentArgs,
  waitRegistered,
} from '../helpers/process.js';

const ENV = {
  OPENRIG_SECRET_KEY: 'cd'.repeat(32),
  OPENRIG_HEARTBEAT_S: '0.5',
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
};
const PUB = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl renter@laptop';

describe('agent: disk usage of a process-runtime instance, end to end', () => {
  let dir: string;
  let stateDir: string;
  let serve: Proc & { url: string };
  let agent: Proc;
  let renterKey: string;

  const api = (method: string, p: string, body?: unknown) => callApi(serve.url, method, p, renterKey, body);
  const show = async (id: number) => (await api('GET', `/api/v0/instances/${id}/`)).body.instances;
  /** Polls the instance until `ok`; on a timeout says what it last read and what the agent said. */
  const until = async (id: number, ok: (row: any) => boolean, what: string) => {
    let last: any = null;
    try {
      return await waitFor(
        async () => {
          last = await show(id);
          return last && ok(last) ? last : null;
        },
        what,
        30_000,
        250,
      );
    } catch (err) {
      throw new Error(
        `${(err as Error).message}; last read ${JSON.stringify(last)}; agent said: ${agent.stdout()}${agent.stderr()}`,
      );
    }
  };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-usage-e2e-'));
    stateDir = path.join(dir, 'agent-state');
    serve = await startServe(['--data', dir], ENV);
    const host = await createUser(dir, ENV, 'host@example.com');
    const renter = await createUser(dir, ENV, 'renter@example.com', ['--balance', '50']);
    renterKey = renter.api_key;
    agent = startProc(
      processAgentArgs(serve.url, stateDir),
      // Measured every second instead of every minute, to keep the test short.
      { ...ENV, OPENRIG_API_KEY: host.api_key, OPENRIG_USAGE_INTERVAL_S: '1' },
    );
    await waitRegistered(agent);
  });

  afterAll(() => {
    agent?.child.kill('SIGKILL');
    serve?.child.kill('SIGTERM');
    if (stateDir) endInstanceGroups(stateDir);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('an onstart that writes 5 MB: disk_usage reaches it, disk_util follows, gpu_util stays null', async () => {
    expect((await api('POST', '/api/v0/ssh/', { ssh_key: PUB })).status).toBe(200);
    const search = await api('POST', '/api/v0/bundles/', {
      gpu_name: { eq: 'RTX 4090' },
      rentable: { eq: true },
      order: [['dph_total', 'asc']],
    });
    const offer = search.body.offers[0];
    expect(offer).toBeTruthy();
    const created = await api('PUT', `/api/v0/asks/${offer.id}/`, {
      client_id: 'me',
      image: 'ubuntu:22.04',
      disk: 10,
      onstart: 'head -c 5000000 /dev/zero > big.bin && sleep 600',
      runtype: 'ssh',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id: number = created.body.new_contract;

    const row = await until(
      id,
      (r) => r.actual_status === 'running' && r.disk_usage >= 0.005,
      'disk_usage to reach 5 MB',
    );
    // The rest of the directory is the agent's small files of the instance.
    expect(row.disk_usage).toBeLessThan(0.006);
    expect(row.disk_util).toBeCloseTo(row.disk_usage / 10, 9);
    expect(row.gpu_util).toBeNull();
    const v0 = (await api('GET', '/api/v0/instances/')).body.instances.find((i: any) => i.id === id);
    const v1 = (await api('GET', '/api/v1/instances/')).body.instances.find((i: any) => i.id === id);
    for (const x of [v0, v1]) expect(x.disk_usage).toBeGreaterThanOrEqual(0.005);

    // Stopped, its files stay on the host and the row keeps showing them.
    expect((await api('PUT', `/api/v0/instances/${id}/`, { state: 'stopped' })).body.success).toBe(true);
    const stopped = await until(id, (r) => r.actual_status === 'stopped', 'the instance to stop');
    expect(stopped.disk_usage).toBeGreaterThanOrEqual(0.005);
    expect(stopped.gpu_util).toBeNull();

    expect((await api('DELETE', `/api/v0/instances/${id}/`, {})).body.success).toBe(true);
  });
});
