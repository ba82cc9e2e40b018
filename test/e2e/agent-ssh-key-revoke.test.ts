// A key detached from an instance stops working at once, with the default 10 s heartbeat: the
// instance's SSH server asks the control server before it accepts a key, so the refusal does not
// wait for the agent's next sync. Real processes: `serve`, an `openrig agent` with the process
// runtime and, where an engine answers, with the Docker runtime, and the system's OpenSSH client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
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
} from '../helpers/process.js';
import {
  buildTestImage,
  dockerUnavailable,
  lockDocker,
  removeAgentContainers,
  removeAllAgentContainers,
} from '../helpers/docker.js';

// No OPENRIG_HEARTBEAT_S: the agent syncs at the default heartbeat (10 s).
const ENV = {
  OPENRIG_SECRET_KEY: 'ab'.repeat(32),
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
};

const HAS_SSH = existsSync('/usr/bin/ssh') || spawnSync('which', ['ssh']).status === 0;
const NO_DOCKER = dockerUnavailable();
if (NO_DOCKER) console.log(`key revocation with the docker runtime skipped: ${NO_DOCKER}`);

/** Each runtime keeps the synced keys in its own per-instance directory of the state dir. */
const RUNTIMES = [
  { runtime: 'process', skip: false, keysDir: 'instances' },
  { runtime: 'docker', skip: NO_DOCKER !== null, keysDir: 'containers' },
] as const;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

/** Runs `echo ok` over SSH with one key; resolves with the exit status. */
function sshWith(keyFile: string, port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const c = spawn(
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
        'root@127.0.0.1',
        'echo ok',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.on('close', (code) => resolve(code === 0 && out === 'ok\n' ? 0 : (code ?? -1)));
  });
}

describe.each(RUNTIMES)(
  'a detached SSH key is refused within a second (default heartbeat, $runtime runtime)',
  ({ runtime, skip, keysDir }) => {
    if (!HAS_SSH) console.log('key revocation skipped: no ssh client');
    let dir: string;
    let stateDir: string;
    let serve: Proc & { url: string };
    let agent: Proc;
    let hostKey: string;
    let renterKey: string;
    const keyA = () => path.join(dir, 'id_a');
    const keyB = () => path.join(dir, 'id_b');

    const api = (method: string, p: string, body?: unknown) => callApi(serve.url, method, p, renterKey, body);

    let release: (() => void) | undefined;

    beforeAll(async () => {
      if (runtime === 'docker' && !skip && HAS_SSH) {
        release = await lockDocker();
        removeAllAgentContainers();
      }
      dir = mkdtempSync(path.join(tmpdir(), 'openrig-key-revoke-'));
      stateDir = path.join(dir, 'agent-state');
      const port = await freePort();
      serve = await startServe(['--data', dir, '--port', String(port)], ENV);
      const user = async (email: string, extra: string[] = []) =>
        (await createUser(dir, ENV, email, extra)).api_key;
      hostKey = await user('host@example.com');
      renterKey = await user('renter@example.com', ['--balance', '50']);
      for (const f of [keyA(), keyB()])
        execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', path.basename(f), '-f', f]);
    }, 300_000);

    afterAll(async () => {
      agent?.child.kill('SIGKILL');
      serve?.child.kill('SIGTERM');
      if (runtime === 'process') endInstanceGroups(stateDir);
      else removeAgentContainers(stateDir);
      release?.();
      rmSync(dir, { recursive: true, force: true });
    });

    it.skipIf(!HAS_SSH || skip)(
      'refuses the detached key on the first login after the DELETE, while the other key works',
      async () => {
        agent = startProc(
          [
            'agent',
            '--server',
            serve.url,
            '--runtime',
            runtime,
            '--gpus',
            'RTX 4090x1',
            '--price-gpu',
            '0.5',
            '--state-dir',
            stateDir,
            '--ssh-bind',
            '127.0.0.1',
          ],
          { ...ENV, OPENRIG_LOG_LEVEL: 'info', OPENRIG_API_KEY: hostKey },
        );
        await waitFor(() => {
          if (agent.child.exitCode !== null) throw new Error(`agent exited: ${agent.stderr()}`);
          // The banner and the daemon's log line (with the heartbeat) are written separately.
          return /registered with/.test(agent.stdout()) && /heartbeat every/.test(agent.stdout());
        }, 'the agent to register');
        expect(agent.stdout()).toMatch(/heartbeat every 10s/);

        for (const f of [keyA(), keyB()])
          expect(
            (await api('POST', '/api/v0/ssh/', { ssh_key: readFileSync(`${f}.pub`, 'utf8').trim() })).status,
          ).toBe(200);
        const keys = (await api('GET', '/api/v0/ssh/')).body.ssh_keys as {
          id: number;
          public_key?: string;
          ssh_key?: string;
        }[];
        const pubA = readFileSync(`${keyA()}.pub`, 'utf8').trim();
        const idA = keys.find((k) => (k.public_key ?? k.ssh_key ?? '').trim() === pubA)?.id;
        expect(idA).toBeGreaterThan(0);

        const offers = (
          await api('POST', '/api/v0/bundles/', { gpu_name: { eq: 'RTX 4090' }, rentable: { eq: true } })
        ).body.offers as { id: number }[];
        expect(offers.length).toBeGreaterThan(0);
        const created = await api('PUT', `/api/v0/asks/${offers[0]!.id}/`, {
          client_id: 'me',
          image: runtime === 'docker' ? buildTestImage('openrig-test/busybox:1') : 'ubuntu:22.04',
          disk: 5,
          runtype: 'ssh',
        });
        expect(created.status).toBe(200);
        const id: number = created.body.new_contract;
        let last: unknown;
        const running = await waitFor(
          async () => {
            const i = (await api('GET', `/api/v0/instances/${id}/`)).body.instances;
            last = i && { actual_status: i.actual_status, status_msg: i.status_msg, ssh_port: i.ssh_port };
            return i?.actual_status === 'running' && i.ssh_port ? (i as { ssh_port: number }) : null;
          },
          () =>
            `the instance to run (last seen ${JSON.stringify(last)}; the agent's output ends: ${agent.stdout().slice(-1500)}; its stderr: ${agent.stderr().slice(-1500)})`,
          60_000,
          500,
        );

        expect(await sshWith(keyA(), running.ssh_port)).toBe(0);
        expect(await sshWith(keyB(), running.ssh_port)).toBe(0);
        // Past the one-second memory of the server's last answer.
        await new Promise((r) => setTimeout(r, 1200));

        const t0 = Date.now();
        const det = await api('DELETE', `/api/v0/instances/${id}/ssh/${idA}/`);
        expect(det.status).toBe(200);
        // The first login after the DELETE is refused, long before the next 10 s sync.
        expect(await sshWith(keyA(), running.ssh_port)).not.toBe(0);
        const refusedAfterMs = Date.now() - t0;
        expect(refusedAfterMs).toBeLessThan(1000);
        // The synced file still lists the detached key: the refusal came from the server's answer.
        const synced = readFileSync(path.join(stateDir, keysDir, String(id), 'authorized_keys'), 'utf8');
        expect(synced).toContain(pubA.split(/\s+/)[1]);
        expect(await sshWith(keyB(), running.ssh_port)).toBe(0);
      },
      120_000,
    );
  },
);
