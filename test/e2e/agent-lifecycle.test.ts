// The whole path with real processes: `serve`, an `openrig agent` with the
// process runtime, a renter who registers an SSH key, searches, creates, polls every second until
// running, runs `echo` over SSH with the system's OpenSSH client; the onstart script stops its own
// instance with CONTAINER_API_KEY; start again; destroy. Then the agent's own restart (re-adoption)
// and the server's restart; finally SIGKILL of the agent: unknown, then offline.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
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
  OPENRIG_SECRET_KEY: 'ef'.repeat(32),
  OPENRIG_HEARTBEAT_S: '0.5',
  OPENRIG_UNKNOWN_AFTER_S: '6',
  OPENRIG_OFFLINE_AFTER_S: '10',
  OPENRIG_SWEEP_INTERVAL_MS: '200',
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
};

const HAS_SSH = existsSync('/usr/bin/ssh') || spawnSync('which', ['ssh']).status === 0;

// The onstart script: waits for the renter's signal (a file made over SSH), then stops its own
// instance with CONTAINER_API_KEY, once (the marker survives stop/start: the directory is kept).
const ONSTART = [
  'echo "$GREETING" > greeting.txt',
  'if [ -f stopped-once ]; then exit 0; fi',
  'while [ ! -f go-stop ]; do sleep 0.2; done',
  'touch stopped-once',
  'curl -s -o stop-reply.json -X PUT -H "Authorization: Bearer $CONTAINER_API_KEY" -H "Content-Type: application/json" -d \'{"state": "stopped"}\' "$OPENRIG_SERVER_URL/api/v0/instances/$CONTAINER_ID/"',
].join('\n');

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

describe.skipIf(!HAS_SSH)('agent, process runtime and SSH, end to end', () => {
  let dir: string;
  let stateDir: string;
  let port: number;
  let serve: Proc & { url: string };
  let agent: Proc;
  let hostKey: string;
  let renterKey: string;
  let keyFile: string;

  const api = (method: string, p: string, key: string, body?: unknown) =>
    callApi(serve.url, method, p, key, body);
  const show = async (id: number) => (await api('GET', `/api/v0/instances/${id}/`, renterKey)).body.instances;
  /** Polls every second (faster than a real client, to keep the test short) until the instance is in `want`. */
  const pollUntil = async (id: number, want: string | null, timeoutMs = 30_000) => {
    let last: any = null;
    try {
      return await waitFor(
        async () => {
          last = await show(id);
          return last && last.actual_status === want ? last : null;
        },
        `instance ${id} to be ${want}`,
        timeoutMs,
        1000,
      );
    } catch (err) {
      const idir = path.join(stateDir, 'instances', String(id));
      const files = existsSync(idir) ? readdirSync(path.join(idir, 'root')).join(',') : 'none';
      throw new Error(
        `${(err as Error).message}; last seen ${JSON.stringify(last?.actual_status)}/${last?.intended_status} (${last?.status_msg}); files: ${files}; agent said: ${agent?.stdout()}${agent?.stderr()}; serve said: ${serve.stdout().slice(-3000)}${serve.stderr().slice(-2000)}`,
      );
    }
  };
  const ssh = (sshPort: number, cmd: string) =>
    spawnSync(
      'ssh',
      [
        '-i',
        keyFile,
        '-p',
        String(sshPort),
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
        'root@127.0.0.1',
        cmd,
      ],
      { encoding: 'utf8', timeout: 15_000 },
    );
  const startAgent = () =>
    startProc(processAgentArgs(serve.url, stateDir), {
      ...ENV,
      OPENRIG_LOG_LEVEL: 'info',
      OPENRIG_API_KEY: hostKey,
    });

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-agent-e2e-'));
    stateDir = path.join(dir, 'agent-state');
    port = await freePort();
    serve = await startServe(['--data', dir, '--port', String(port)], ENV);
    const host = await createUser(dir, ENV, 'host@example.com');
    const renter = await createUser(dir, ENV, 'renter@example.com', ['--balance', '50']);
    hostKey = host.api_key;
    renterKey = renter.api_key;
    keyFile = path.join(dir, 'id_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'renter', '-f', keyFile]);
  });

  afterAll(async () => {
    agent?.child.kill('SIGKILL');
    serve?.child.kill('SIGTERM');
    // Instances outlive a killed agent by design: end their process groups here.
    endInstanceGroups(stateDir);
    rmSync(dir, { recursive: true, force: true });
  });

  it('search, create, poll until running, ssh echo, onstart stops it with CONTAINER_API_KEY, start again, destroy', async () => {
    agent = startAgent();
    await waitRegistered(agent);
    const key = await api('POST', '/api/v0/ssh/', renterKey, {
      ssh_key: readFileSync(`${keyFile}.pub`, 'utf8').trim(),
    });
    expect(key.status).toBe(200);

    const search = await api('POST', '/api/v0/bundles/', renterKey, {
      gpu_name: { eq: 'RTX 4090' },
      num_gpus: { eq: 2 },
      rentable: { eq: true },
      order: [['dph_total', 'asc']],
    });
    expect(search.status).toBe(200);
    const offer = search.body.offers.find((o: any) => o.gpu_name === 'RTX 4090');
    expect(offer).toBeTruthy();
    expect(offer.dph_base).toBeCloseTo(1.0); // --price-gpu 0.5 per GPU, two GPUs

    const created = await api('PUT', `/api/v0/asks/${offer.id}/`, renterKey, {
      client_id: 'me',
      image: 'ubuntu:22.04',
      disk: 5,
      env: { GREETING: 'hello-env' },
      onstart: ONSTART,
      runtype: 'ssh',
    });
    expect(created.status).toBe(200);
    expect(created.body.success).toBe(true);
    const id: number = created.body.new_contract;

    const running = await pollUntil(id, 'running');
    expect(running.ssh_host).toBe('127.0.0.1');
    expect(running.ssh_port).toBeGreaterThan(0);
    expect(running.ports['22/tcp'][0].HostPort).toBe(String(running.ssh_port));
    const pidFile = path.join(stateDir, 'instances', String(id), 'main.pid');
    expect(Number(readFileSync(pidFile, 'utf8'))).toBeGreaterThan(1);

    const echo = ssh(running.ssh_port, 'echo hello-over-ssh');
    expect(echo.stderr).toBe('');
    expect(echo.status).toBe(0);
    expect(echo.stdout).toBe('hello-over-ssh\n');
    expect(ssh(running.ssh_port, 'cat greeting.txt').stdout).toBe('hello-env\n');

    // The renter signals; onstart stops its own instance with CONTAINER_API_KEY.
    ssh(running.ssh_port, 'touch go-stop');
    await pollUntil(id, 'stopped');
    await waitFor(() => !existsSync(pidFile), 'the main process to be stopped');
    await waitFor(() => ssh(running.ssh_port, 'true').status !== 0, 'the SSH server to be gone');
    const root = path.join(stateDir, 'instances', String(id), 'root');
    expect(JSON.parse(readFileSync(path.join(root, 'stop-reply.json'), 'utf8')).success).toBe(true);
    expect(existsSync(path.join(root, 'stopped-once'))).toBe(true); // the directory is kept

    const start = await api('PUT', `/api/v0/instances/${id}/`, renterKey, { state: 'running' });
    expect(start.body.success).toBe(true);
    const again = await pollUntil(id, 'running');
    expect(ssh(again.ssh_port, 'echo back; ls stopped-once').stdout).toBe('back\nstopped-once\n');

    // The host's own log of the instance (daemon_logs): what the agent did with it, in order.
    const daemonLogs = await api('PUT', `/api/v0/instances/request_logs/${id}/`, renterKey, {
      daemon_logs: 'true',
    });
    expect(daemonLogs.body.success).toBe(true);
    let journal = '';
    await waitFor(async () => {
      const r = await fetch(daemonLogs.body.result_url);
      journal = await r.text();
      return r.status === 200;
    }, 'the daemon log to arrive');
    const lines = journal.trimEnd().split('\n');
    expect(lines.every((l) => /^\d{4}-\d\d-\d\dT\S+Z (INFO|WARN|ERROR) instance /.test(l))).toBe(true);
    const firstRun = lines.findIndex((l) => l.includes(`instance ${id} running, SSH on port`));
    const stopped = lines.findIndex((l) => l.includes(`instance ${id} stopped`));
    expect(firstRun).toBeGreaterThanOrEqual(0);
    expect(stopped).toBeGreaterThan(firstRun);
    expect(lines.slice(stopped).some((l) => l.includes(`instance ${id} running`))).toBe(true);
    expect(journal).not.toContain('hello-env'); // the container's output is not in it

    const del = await api('DELETE', `/api/v0/instances/${id}/`, renterKey, {});
    expect(del.body.success).toBe(true);
    await waitFor(
      () => !existsSync(path.join(stateDir, 'instances', String(id))),
      'the agent to remove the instance',
      20_000,
    );
    await waitFor(() => ssh(again.ssh_port, 'true').status !== 0, 'the SSH server to be gone');
  }, 120_000);

  it('a dead main process makes the instance exited with a status_msg; a clean agent stop takes its machine offline at once', async () => {
    const offer = (
      await api('POST', '/api/v0/bundles/', renterKey, {
        gpu_name: { eq: 'RTX 4090' },
        rentable: { eq: true },
      })
    ).body.offers[0];
    const id: number = (
      await api('PUT', `/api/v0/asks/${offer.id}/`, renterKey, { image: 'ubuntu:22.04', disk: 5 })
    ).body.new_contract;
    await pollUntil(id, 'running');
    const pid = Number(readFileSync(path.join(stateDir, 'instances', String(id), 'main.pid'), 'utf8'));
    process.kill(pid, 'SIGKILL');
    const exited = await pollUntil(id, 'exited', 15_000);
    expect(exited.status_msg).toMatch(/main process/);
    // It stays exited: never running by itself.
    await new Promise((r) => setTimeout(r, 1500));
    expect((await show(id)).actual_status).toBe('exited');
    // The client starts it again: back to null (provisioning) at once, and the agent restarts it.
    const restart = await api('PUT', `/api/v0/instances/${id}/`, renterKey, { state: 'running' });
    expect(restart.body.success).toBe(true);
    const shown = await show(id);
    expect(shown.intended_status).toBe('running');
    expect([null, 'loading', 'running']).toContain(shown.actual_status);
    const back = await pollUntil(id, 'running', 20_000);
    expect(ssh(back.ssh_port, 'echo restarted').stdout).toBe('restarted\n');
    expect(Number(readFileSync(path.join(stateDir, 'instances', String(id), 'main.pid'), 'utf8'))).not.toBe(
      pid,
    );
    expect((await api('DELETE', `/api/v0/instances/${id}/`, renterKey, {})).body.success).toBe(true);
    await waitFor(
      () => !existsSync(path.join(stateDir, 'instances', String(id))),
      'the agent to remove the instance',
    );

    agent.child.kill('SIGTERM');
    expect((await agent.exited).code).toBe(0);
    const machines = (await api('GET', '/api/v0/machines/', hostKey)).body.machines;
    expect(machines.map((m: any) => m.online_state)).toEqual(['offline']);
    agent = startAgent();
    await waitRegistered(agent);
    const again = (await api('GET', '/api/v0/machines/', hostKey)).body.machines;
    expect(again.map((m: any) => [m.id, m.online_state])).toEqual([[machines[0].id, 'online']]); // the same machine
  }, 120_000);

  it('survives its own restart and the server restart (re-adopts the running instance); SIGKILL makes it unknown, then offline', async () => {
    const search = await api('POST', '/api/v0/bundles/', renterKey, {
      gpu_name: { eq: 'RTX 4090' },
      rentable: { eq: true },
    });
    const created = await api('PUT', `/api/v0/asks/${search.body.offers[0].id}/`, renterKey, {
      image: 'ubuntu:22.04',
      disk: 5,
      onstart: 'sleep 600',
    });
    const id: number = created.body.new_contract;
    const running = await pollUntil(id, 'running');
    const pid = readFileSync(path.join(stateDir, 'instances', String(id), 'main.pid'), 'utf8');

    // The agent dies and comes back before OPENRIG_UNKNOWN_AFTER_S: same machine, same process.
    agent.child.kill('SIGKILL');
    await agent.exited;
    agent = startAgent();
    await waitRegistered(agent);
    expect(readFileSync(path.join(stateDir, 'instances', String(id), 'main.pid'), 'utf8')).toBe(pid);
    expect(ssh(running.ssh_port, 'echo still-here').stdout).toBe('still-here\n');

    // The server restarts on the same port and database; the agent keeps syncing.
    serve.child.kill('SIGTERM');
    expect((await serve.exited).code).toBe(0);
    serve = await startServe(['--data', dir, '--port', String(port)], ENV);
    await new Promise((r) => setTimeout(r, 1500));
    const afterRestart = await show(id);
    expect(afterRestart.actual_status, `${afterRestart.status_msg}; agent said: ${agent.stdout()}`).toBe(
      'running',
    );

    agent.child.kill('SIGKILL');
    await agent.exited;
    const unknown = await pollUntil(id, 'unknown', 20_000);
    expect(unknown.actual_status).toBe('unknown');
    await pollUntil(id, 'offline', 20_000);
    const del = await api('DELETE', `/api/v0/instances/${id}/`, renterKey, {});
    expect(del.body.success).toBe(true);
    expect(await show(id)).toBeNull();
  }, 120_000);
});
