// Copies with the Docker runtime (docs/data.md), where an engine answers: two containers of an
// image without rsync. The source's agent pushes into the destination container through its SSH
// server, whose rsync daemon (the host's) chroots into the container's /proc/PID/root: a link to
// /etc in the destination is replaced, not written through, and the host's /etc is untouched; a
// laptop's upload as the official CLI runs it lands in the container.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { callApi, createUser, startProc, startServe, waitFor, type Proc } from '../helpers/process.js';
import { buildTestImage, dockerUnavailable, lockDocker, removeAgentContainers } from '../helpers/docker.js';

const ENV = {
  OPENRIG_SECRET_KEY: 'ce'.repeat(32),
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
  OPENRIG_HEARTBEAT_S: '2',
};
const NO_DOCKER = dockerUnavailable();
const HAS_TOOLS = spawnSync('rsync', ['--version']).status === 0 && spawnSync('ssh', ['-V']).status === 0;
if (NO_DOCKER) console.log(`copies with the docker runtime skipped: ${NO_DOCKER}`);

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

const inContainer = (id: number, cmd: string) =>
  execFileSync('docker', ['exec', `openrig-${id}`, 'sh', '-c', cmd], { encoding: 'utf8' });

describe.skipIf(NO_DOCKER !== null || !HAS_TOOLS)('copies with the docker runtime', () => {
  let dir: string;
  let stateDir: string;
  let serve: Proc & { url: string };
  let agent: Proc;
  let renterKey: string;
  let hostKey: string;
  let key: string;
  let release: () => void = () => {};
  const ids: number[] = [];
  const api = (method: string, p: string, body?: unknown) => callApi(serve.url, method, p, renterKey, body);

  beforeAll(async () => {
    release = await lockDocker();
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-copies-docker-'));
    stateDir = path.join(dir, 'agent-state');
    serve = await startServe(['--data', dir, '--port', String(await freePort())], ENV);
    hostKey = (await createUser(dir, ENV, 'host@example.com')).api_key;
    renterKey = (await createUser(dir, ENV, 'renter@example.com', ['--balance', '50'])).api_key;
    key = path.join(dir, 'id_renter');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', key]);
    await api('POST', '/api/v0/ssh/', { ssh_key: readFileSync(`${key}.pub`, 'utf8').trim() });
    agent = startProc(
      [
        'agent',
        '--server',
        serve.url,
        '--runtime',
        'docker',
        '--machines',
        '2',
        '--gpus',
        'RTX 4090x1',
        '--price-gpu',
        '0.5',
        '--state-dir',
        stateDir,
        '--ssh-bind',
        '127.0.0.1',
        '--public-host',
        '127.0.0.1',
      ],
      { ...ENV, OPENRIG_LOG_LEVEL: 'info', OPENRIG_API_KEY: hostKey },
    );
    await waitFor(() => {
      if (agent.child.exitCode !== null) throw new Error(`agent exited: ${agent.stderr()}`);
      return /heartbeat every/.test(agent.stdout());
    }, 'the agent to register');
    const image = buildTestImage('openrig-test/busybox:1');
    const offers = (
      await api('POST', '/api/v0/bundles/', {
        gpu_name: { eq: 'RTX 4090' },
        rentable: { eq: true },
      })
    ).body.offers as { id: number }[];
    for (const o of offers.slice(0, 2)) {
      const r = await api('PUT', `/api/v0/asks/${o.id}/`, {
        client_id: 'me',
        image,
        disk: 5,
        runtype: 'ssh',
      });
      expect(r.status).toBe(200);
      ids.push(r.body.new_contract as number);
    }
    for (const id of ids)
      await waitFor(
        async () =>
          (await api('GET', `/api/v0/instances/${id}/`)).body.instances?.actual_status === 'running',
        `instance ${id} to run`,
        90_000,
        500,
      );
  }, 240_000);

  afterAll(() => {
    agent?.child.kill('SIGKILL');
    serve?.child.kill('SIGTERM');
    removeAgentContainers(stateDir);
    release();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('copies between containers without rsync in the image, confined to the destination', async () => {
    const [a, b] = ids as [number, number];
    expect(ids).toHaveLength(2);
    inContainer(a, 'mkdir -p /work/sub && echo alpha > /work/sub/a.txt');
    inContainer(b, 'mkdir -p /data && ln -s /etc /data/sub');
    const r = await api('PUT', '/api/v0/commands/copy_direct/', {
      client_id: 'me',
      src_id: String(a),
      dst_id: String(b),
      src_path: '/work/',
      dst_path: '/data/',
    });
    expect(r.body.success).toBe(true);
    const end = await waitFor(
      async () => {
        const m = (await api('GET', `/api/v0/instances/${b}/`)).body.instances?.status_msg as string;
        return /copy from .* (done|failed)/.test(m ?? '') ? m : null;
      },
      'the copy to end',
      60_000,
      300,
    );
    expect(end).toMatch(/done/);
    expect(inContainer(b, 'cat /data/sub/a.txt')).toBe('alpha\n');
    expect(inContainer(b, '[ -L /data/sub ] && echo link || echo dir')).toBe('dir\n');
    expect(existsSync('/etc/a.txt')).toBe(false);

    // A laptop's upload, as the official CLI runs rsync.
    const up = (
      await api('PUT', '/api/v0/commands/rsync/', {
        client_id: 'me',
        src_id: null,
        dst_id: `C.${b}`,
        src_path: 'l/',
        dst_path: '/up/',
      })
    ).body;
    const local = path.join(dir, 'l');
    mkdirSync(path.join(local, 't'), { recursive: true });
    writeFileSync(path.join(local, 't/u.txt'), 'up\n');
    const res = spawnSync(
      'sh',
      [
        '-c',
        `rsync -arz -v --progress --rsh=ssh -e 'ssh -i ${key} -p ${up.dst_port} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes' ${local}/ vastai_kaalia@${up.dst_addr}::C.${b}//up/`,
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(res.status, res.stderr).toBe(0);
    expect(inContainer(b, 'cat /up/t/u.txt')).toBe('up\n');
  }, 120_000);

  /** Starts a copy and waits for its end; its row from the list. */
  const copy = async (body: Record<string, unknown>) => {
    const r = await api('PUT', '/api/v0/commands/copy_direct/', { client_id: 'me', ...body });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const id = r.body.copy_id as number;
    return waitFor(
      async () => {
        const list = (await api('GET', '/api/v0/commands/copy_direct/')).body.copies as {
          id: number;
          status: string;
          msg: string;
        }[];
        const c = list.find((x) => x.id === id);
        return c && ['done', 'failed', 'canceled'].includes(c.status) ? c : null;
      },
      `copy ${id} to end`,
      60_000,
      300,
    );
  };

  it('carries no host file that a link in the source container points at', async () => {
    const [a, b] = ids as [number, number];
    // Host paths the containers do not have: a link to them is read inside the container, or not at all.
    const secret = path.join(dir, 'docker-host-secret');
    writeFileSync(secret, 'HOST-ONLY-CONTENT\n');
    mkdirSync(path.join(dir, 'hostdir'));
    writeFileSync(path.join(dir, 'hostdir/h.txt'), 'HOST-ONLY-CONTENT\n');
    inContainer(
      a,
      `mkdir -p /leaks && echo mine > /leaks/own.txt && ln -s ${secret} /leaks/abs && ln -s ../../../../../../../..${secret} /leaks/rel && ln -s ${dir}/hostdir /leaks/dir`,
    );
    const end = await copy({ src_id: String(a), dst_id: String(b), src_path: '/leaks/', dst_path: '/got/' });
    expect(end.status, end.msg).toBe('done');
    expect(inContainer(b, 'cat /got/own.txt')).toBe('mine\n');
    expect(inContainer(b, 'readlink /got/abs')).toBe(`${secret}\n`);
    expect(inContainer(b, 'grep -r -l HOST-ONLY /got 2>/dev/null || true')).toBe('');
    // A source path through a link to a host directory: there is no such directory in the container.
    const through = await copy({
      src_id: String(a),
      dst_id: String(b),
      src_path: '/leaks/dir/',
      dst_path: '/got2/',
    });
    expect(through.status).toBe('failed');
    expect(inContainer(b, 'grep -r -l HOST-ONLY /got2 2>/dev/null || true')).toBe('');
  }, 120_000);

  it('copies from a container into a volume (V.ID) of its host', async () => {
    const [a] = ids as [number, number];
    const machine = (await callApi(serve.url, 'GET', '/api/v0/machines/', hostKey)).body.machines[0]
      .id as number;
    const ask = await callApi(serve.url, 'POST', '/api/v0/volumes/', hostKey, {
      size: 20,
      machine,
      price_disk: 1,
    });
    expect(ask.status, JSON.stringify(ask.body)).toBe(200);
    const made = await api('PUT', '/api/v0/volumes/', {
      size: 1,
      id: ask.body.volume_asks[0].id,
      name: 'into',
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const vol = made.body.volume_id as number;
    inContainer(a, 'mkdir -p /tovol/d && echo vol > /tovol/d/v.txt');
    const end = await copy({ src_id: String(a), dst_id: `V.${vol}`, src_path: '/tovol/', dst_path: '/in/' });
    expect(end.status, end.msg).toBe('done');
    const data = path.join(stateDir, 'volumes', String(vol), 'data');
    expect(readFileSync(path.join(data, 'in/d/v.txt'), 'utf8')).toBe('vol\n');
    // Deleted, its agent unmounts and removes it (no loop mount is left behind by the test).
    expect((await api('DELETE', `/api/v0/volumes/?id=${vol}`)).status).toBe(200);
    await waitFor(
      () => !existsSync(path.dirname(data)),
      `volume ${vol} to be removed from the host`,
      60_000,
      500,
    );
  }, 120_000);
});
