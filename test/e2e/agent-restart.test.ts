// Remote machines and agent restarts with the process runtime: an agent that reaches the server
// over 127.0.0.2 (through a loopback TCP relay) registers that address as its public host, so its
// instances' ssh_host and public_ipaddr are 127.0.0.2 and SSH answers there. A clean stop
// (SIGTERM) takes the machines offline; the restarted agent re-adopts what still runs (the same
// main process, running again within one heartbeat) and reports the one that died meanwhile exited.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  endInstanceGroups,
  callApi,
  createUser,
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
  OPENRIG_UNKNOWN_AFTER_S: '30',
  OPENRIG_OFFLINE_AFTER_S: '60',
  OPENRIG_SWEEP_INTERVAL_MS: '200',
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
};
const HAS_SSH = existsSync('/usr/bin/ssh') || spawnSync('which', ['ssh']).status === 0;

/** A TCP relay from 127.0.0.2:PORT to the server: the agent reaches the server over 127.0.0.2. */
function relay(target: number): Promise<net.Server & { port: number }> {
  return new Promise((resolve) => {
    const srv = net.createServer((c) => {
      const up = net.connect(target, '127.0.0.1');
      c.pipe(up).pipe(c);
      c.on('error', () => up.destroy());
      up.on('error', () => c.destroy());
    });
    srv.listen(0, '127.0.0.2', () =>
      resolve(Object.assign(srv, { port: (srv.address() as net.AddressInfo).port })),
    );
  });
}

describe.skipIf(!HAS_SSH)('agent restarts strand nothing; --public-host by default', () => {
  let dir: string;
  let stateDir: string;
  let serve: Proc & { url: string };
  let agent: Proc;
  let hostKey: string;
  let renterKey: string;
  let keyFile: string;
  let proxy: net.Server & { port: number };
  /** The instance the first test keeps running across the restarts. */
  let keptId = 0;

  const api = (method: string, p: string, key: string, body?: unknown) =>
    callApi(serve.url, method, p, key, body);
  const show = async (id: number) => (await api('GET', `/api/v0/instances/${id}/`, renterKey)).body.instances;
  const until = (id: number, want: string, ms = 30_000, step = 100) =>
    waitFor(
      async () => {
        const i = await show(id);
        return i?.actual_status === want ? i : null;
      },
      `instance ${id} to be ${want}`,
      ms,
      step,
    );
  const ssh = (host: string, port: number, cmd: string) =>
    spawnSync(
      'ssh',
      [
        '-i',
        keyFile,
        '-p',
        String(port),
        '-o',
        'StrictHostKeyChecking=no',
        '-o',
        'UserKnownHostsFile=/dev/null',
        '-o',
        'BatchMode=yes',
        '-o',
        'IdentitiesOnly=yes',
        '-o',
        'LogLevel=ERROR',
        `root@${host}`,
        cmd,
      ],
      { encoding: 'utf8', timeout: 15_000 },
    );
  const startAgent = () =>
    startProc(
      processAgentArgs(`http://127.0.0.2:${proxy.port}`, stateDir, {
        sshBind: '127.0.0.2',
        extra: ['--machines', '2'],
      }),
      { ...ENV, OPENRIG_LOG_LEVEL: 'info', OPENRIG_API_KEY: hostKey },
    );

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-agent-restart-'));
    stateDir = path.join(dir, 'agent-state');
    serve = await startServe(['--data', dir], ENV);
    proxy = await relay(Number(new URL(serve.url).port));
    const user = (email: string, extra: string[] = []) => createUser(dir, ENV, email, extra);
    hostKey = (await user('host@example.com')).api_key;
    renterKey = (await user('renter@example.com', ['--balance', '50'])).api_key;
    keyFile = path.join(dir, 'id_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'renter', '-f', keyFile]);
    expect(
      (
        await api('POST', '/api/v0/ssh/', renterKey, {
          ssh_key: readFileSync(`${keyFile}.pub`, 'utf8').trim(),
        })
      ).status,
    ).toBe(200);
  });

  afterAll(async () => {
    agent?.child.kill('SIGKILL');
    serve?.child.kill('SIGTERM');
    proxy?.close();
    endInstanceGroups(stateDir);
    rmSync(dir, { recursive: true, force: true });
  });

  it('ssh_host is the address the agent reaches the server from; a restart re-adopts survivors within a heartbeat', async () => {
    agent = startAgent();
    await waitRegistered(agent);
    expect(agent.stdout() + agent.stderr()).toMatch(/renters reach them at 127\.0\.0\.2/);
    const offers = (await api('POST', '/api/v0/bundles/', renterKey, { gpu_name: { eq: 'RTX 4090' } })).body
      .offers;
    expect(offers).toHaveLength(2);
    const ids: number[] = [];
    for (const o of offers)
      ids.push(
        (await api('PUT', `/api/v0/asks/${o.id}/`, renterKey, { image: 'ubuntu:22.04', disk: 5 })).body
          .new_contract,
      );
    const [keep, dies] = [await until(ids[0]!, 'running'), await until(ids[1]!, 'running')];
    expect(keep.ssh_host).toBe('127.0.0.2');
    expect(keep.public_ipaddr).toBe('127.0.0.2');
    expect(ssh('127.0.0.2', keep.ssh_port, 'echo here').stdout).toBe('here\n');
    const pidOf = (id: number) =>
      readFileSync(path.join(stateDir, 'instances', String(id), 'main.pid'), 'utf8');
    const pid = pidOf(keep.id);

    // A clean stop (what every upgrade does): machines and instances offline at once.
    agent.child.kill('SIGTERM');
    expect((await agent.exited).code).toBe(0);
    expect((await show(keep.id)).actual_status).toBe('offline');
    // While the agent is away, one instance's main process dies.
    process.kill(Number(pidOf(dies.id)), 'SIGKILL');

    agent = startAgent();
    await waitRegistered(agent);
    const back = Date.now();
    const again = await until(keep.id, 'running', 5_000, 50);
    // One heartbeat (0.5 s) plus the time to poll.
    expect(Date.now() - back).toBeLessThan(1500);
    expect(pidOf(keep.id)).toBe(pid); // re-adopted, not restarted
    expect(again.ssh_port).toBe(keep.ssh_port);
    expect(ssh('127.0.0.2', again.ssh_port, 'echo still-here').stdout).toBe('still-here\n');
    const exited = await until(dies.id, 'exited', 10_000);
    expect(exited.status_msg).toMatch(/main process/);

    // SIGKILL and restart before the unknown threshold: still running, same process.
    agent.child.kill('SIGKILL');
    await agent.exited;
    agent = startAgent();
    await waitRegistered(agent);
    await new Promise((r) => setTimeout(r, 1000));
    expect((await show(keep.id)).actual_status).toBe('running');
    expect(pidOf(keep.id)).toBe(pid);
    keptId = keep.id;
  }, 120_000);

  it('an instance that vanished while the agent was away is exited, not made anew; one never started is started', async () => {
    expect(keptId).toBeGreaterThan(0);
    const instDir = (id: number) => path.join(stateDir, 'instances', String(id));
    // SIGKILL, then the instance is removed from the host; the agent is back before the unknown
    // threshold, so the server still shows it running.
    agent.child.kill('SIGKILL');
    await agent.exited;
    process.kill(-Number(readFileSync(path.join(instDir(keptId), 'main.pid'), 'utf8')), 'SIGKILL');
    rmSync(instDir(keptId), { recursive: true, force: true });
    expect((await show(keptId)).actual_status).toBe('running');
    agent = startAgent();
    await waitRegistered(agent);
    const gone = await until(keptId, 'exited', 10_000);
    expect(gone.status_msg).toBe(
      'the instance is gone from the host (found missing when its agent came back)',
    );
    await new Promise((r) => setTimeout(r, 1500));
    expect((await show(keptId)).actual_status).toBe('exited');
    expect(existsSync(instDir(keptId))).toBe(false); // not made anew
    expect(agent.stdout() + agent.stderr()).not.toMatch(new RegExp(`instance ${keptId}: start`));

    // Free the machines, then rent one while the agent is paused and stop it cleanly before it
    // ever hears of the instance: the shutdown (what a SIGTERM sends) takes it offline.
    for (const i of (await api('GET', '/api/v0/instances/', renterKey)).body.instances)
      expect((await api('DELETE', `/api/v0/instances/${i.id}/`, renterKey, {})).body.success).toBe(true);
    const offer = await waitFor(
      async () => {
        const o = (await api('POST', '/api/v0/bundles/', renterKey, { gpu_name: { eq: 'RTX 4090' } })).body
          .offers;
        return o.length === 2 ? o[0] : null;
      },
      'both machines to be offered again',
      10_000,
    );
    const machines = /registered machines ([\d, ]+)/
      .exec(agent.stdout() + agent.stderr())![1]!
      .split(', ')
      .map(Number);
    const agentUid = JSON.parse(readFileSync(path.join(stateDir, 'agent.json'), 'utf8')).agent_uid;
    agent.child.kill('SIGSTOP');
    try {
      const id = (
        await api('PUT', `/api/v0/asks/${offer.id}/`, renterKey, { image: 'ubuntu:22.04', disk: 5 })
      ).body.new_contract as number;
      expect((await show(id)).actual_status).toBe(null);
      const down = await api('POST', '/api/agent/v1/shutdown', hostKey, {
        agent_uid: agentUid,
        machine_ids: machines,
      });
      expect(down.body.instances_offline).toBe(1);
      expect((await show(id)).actual_status).toBe('offline');
      agent.child.kill('SIGKILL');
      await agent.exited;
      expect(existsSync(instDir(id))).toBe(false);

      agent = startAgent();
      await waitRegistered(agent);
      const up = await until(id, 'running', 30_000);
      expect(existsSync(path.join(instDir(id), 'main.pid'))).toBe(true);
      expect(ssh('127.0.0.2', up.ssh_port, 'echo started').stdout).toBe('started\n');
    } finally {
      if (agent.child.exitCode === null) agent.child.kill('SIGCONT');
    }
  }, 120_000);
});
