// Volumes with the Docker runtime end to end (docs/volumes.md): `serve` and a real `openrig agent
// --runtime docker` (as root with mkfs.ext4 and loop devices: size-limited ext4 volumes). A host
// lists volume space, a renter finds it with search volumes, makes a volume, creates an instance
// linking it (the CLI's --link-volume wire: volume_info), whose on-start script writes a file
// there; writing past the volume's size fails inside the container; deleting the volume while the
// instance uses it is refused; the instance destroyed, a second one linking the volume reads the
// file; the volume deleted, its data (and its image's mount) are gone from the host.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  agentArgs,
  callApi,
  createUser,
  startProc,
  startServe,
  waitFor,
  waitRegistered,
  type Proc,
} from '../helpers/process.js';
import {
  buildTestImage,
  dockerUnavailable,
  lockDocker,
  removeAgentContainers,
  removeAllAgentContainers,
} from '../helpers/docker.js';

const ENV = {
  OPENRIG_SECRET_KEY: 'cf'.repeat(32),
  OPENRIG_HEARTBEAT_S: '0.5',
  OPENRIG_SWEEP_INTERVAL_MS: '200',
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
};

const why = dockerUnavailable();
const noSsh = spawnSync('which', ['ssh']).status !== 0 ? 'no ssh client' : null;
const skip = why ?? noSsh;
if (skip) console.log(`volume docker end-to-end tests skipped: ${skip}`);

describe.skipIf(skip !== null)('volumes with the docker runtime end to end', () => {
  let dir: string;
  let stateDir: string;
  let serve: Proc & { url: string };
  let agent: Proc;
  let hostKey: string;
  let renterKey: string;
  let keyFile: string;
  let image: string;
  let machine: number;
  let release: (() => void) | undefined;

  const api = (method: string, p: string, key: string, body?: unknown) =>
    callApi(serve.url, method, p, key, body);
  const show = async (id: number) => (await api('GET', `/api/v0/instances/${id}/`, renterKey)).body.instances;
  const until = async (id: number, want: string) => {
    let last: any = null;
    try {
      return await waitFor(
        async () => {
          last = await show(id);
          return last?.actual_status === want ? last : null;
        },
        `instance ${id} to be ${want}`,
        90_000,
        200,
      );
    } catch (err) {
      throw new Error(
        `${(err as Error).message}; last ${last?.actual_status} (${last?.status_msg}); agent: ${agent.stdout().slice(-3000)}${agent.stderr().slice(-3000)}`,
      );
    }
  };
  const ssh = (port: number, cmd: string) =>
    spawnSync(
      'ssh',
      [
        '-i',
        keyFile,
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
        '-p',
        String(port),
        'root@127.0.0.1',
        cmd,
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
  /** An instance on the machine linking volume `vol` at /data, as `--link-volume VOL --mount-path /data` sends it. */
  const rentLinked = async (vol: number, onstart: string) => {
    const r = await api('PUT', `/api/v0/asks/${machine}/`, renterKey, {
      client_id: 'me',
      image,
      disk: 5,
      runtype: 'ssh',
      onstart,
      volume_info: { mount_path: '/data', create_new: false, volume_id: vol },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.new_contract as number;
  };
  const destroy = async (id: number) => {
    expect((await api('DELETE', `/api/v0/instances/${id}/`, renterKey, {})).body.success).toBe(true);
    await waitFor(
      () =>
        execFileSync('docker', ['ps', '-aq', '--filter', `name=^openrig-${id}$`], {
          encoding: 'utf8',
        }).trim() === '',
      `the container of ${id} to be removed`,
      30_000,
    );
  };
  const mounted = (p: string) =>
    readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .some((l) => l.split(' ')[1] === p);

  beforeAll(async () => {
    release = await lockDocker();
    removeAllAgentContainers();
    image = buildTestImage('openrig-test/busybox:1');
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-volumes-docker-'));
    stateDir = path.join(dir, 'agent-state');
    serve = await startServe(['--data', dir], ENV);
    hostKey = (await createUser(dir, ENV, 'host@example.com')).api_key;
    renterKey = (await createUser(dir, ENV, 'renter@example.com', ['--balance', '50'])).api_key;
    keyFile = path.join(dir, 'id_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'renter', '-f', keyFile]);
    expect(
      (
        await api('POST', '/api/v0/ssh/', renterKey, {
          ssh_key: readFileSync(`${keyFile}.pub`, 'utf8').trim(),
        })
      ).status,
    ).toBe(200);
    agent = startProc(
      agentArgs(serve.url, stateDir, {
        runtime: 'docker',
        gpus: 'RTX 4090x1',
        extra: ['--public-host', '127.0.0.1'],
      }),
      { ...ENV, OPENRIG_LOG_LEVEL: 'info', OPENRIG_API_KEY: hostKey },
    );
    [machine] = (await waitRegistered(agent, 30_000)) as [number];
  }, 300_000);

  afterAll(async () => {
    agent?.child.kill('SIGKILL');
    serve?.child.kill('SIGTERM');
    removeAgentContainers(stateDir);
    // A volume image the test left mounted (a failure part-way) is unmounted before its directory goes.
    if (stateDir && existsSync(path.join(stateDir, 'volumes')))
      for (const l of readFileSync('/proc/mounts', 'utf8').split('\n'))
        if (l.split(' ')[1]?.startsWith(path.join(stateDir, 'volumes')))
          spawnSync('umount', [l.split(' ')[1]!], { stdio: 'ignore' });
    release?.();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('keeps a volume across instances, enforces its size, refuses its deletion while mounted, and deletes its data', async () => {
    const method = (await api('GET', '/api/v0/machines/', hostKey)).body.machines.find(
      (m: { id: number }) => m.id === machine,
    )?.volume_method as string;
    if (method !== 'ext4-loop')
      console.log(`the agent keeps volumes as ${method}: the size is not enforced, that check is skipped`);

    // The host lists 3 GB; the renter finds it and makes a 1 GB volume.
    const listed = await api('POST', '/api/v0/volumes/', hostKey, { size: 3, machine, price_disk: 0.2 });
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    const found = (await api('POST', '/api/v0/volumes/search/', renterKey, { disk_space: { gte: 1 } })).body
      .offers;
    const offer = found.find((o: { machine_id: number }) => o.machine_id === machine);
    expect(offer).toMatchObject({ disk_space: 3, storage_cost: 0.2 });
    const made = await api('PUT', '/api/v0/volumes/', renterKey, { size: 1, id: offer.id, name: 'ckpt' });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const vol = made.body.volume_id as number;

    // The first instance writes into it from its on-start script.
    const a = await rentLinked(vol, 'echo written-by-a > /data/f.txt; sleep 7777');
    const ra = await until(a, 'running');
    expect(ra.volume_info).toEqual([
      expect.objectContaining({ id: vol, mount_path: '/data', total_space: 1 }),
    ]);
    await waitFor(
      () => ssh(ra.ssh_port, 'cat /data/f.txt').stdout === 'written-by-a\n',
      'the file in the volume',
      30_000,
      300,
    );
    const data = path.join(stateDir, 'volumes', String(vol), 'data');
    expect(readFileSync(path.join(data, 'f.txt'), 'utf8')).toBe('written-by-a\n');

    if (method === 'ext4-loop') {
      // 1 GB: writing 1.2 GB fails inside the container, and the volume's own file stays.
      const big = ssh(ra.ssh_port, 'dd if=/dev/zero of=/data/big bs=1M count=1200 2>&1; echo exit=$?');
      expect(big.stdout).toMatch(/No space left on device/);
      expect(big.stdout).not.toMatch(/exit=0/);
      expect(ssh(ra.ssh_port, 'rm -f /data/big; cat /data/f.txt').stdout).toBe('written-by-a\n');
      expect(mounted(data)).toBe(true);
    }

    // Mounted by a live instance: its deletion is refused.
    const refused = await api('DELETE', `/api/v0/volumes/?id=${vol}`, renterKey);
    expect(refused.status).toBe(409);
    expect(refused.body.msg).toMatch(new RegExp(`mounted by instance ${a}`));

    // Destroyed: a second instance linking the volume reads what the first wrote.
    await destroy(a);
    const b = await rentLinked(vol, 'sleep 7777');
    const rb = await until(b, 'running');
    expect(ssh(rb.ssh_port, 'cat /data/f.txt').stdout).toBe('written-by-a\n');
    await destroy(b);

    // Deleted: its data and its image are gone from the host.
    const del = await api('DELETE', `/api/v0/volumes/?id=${vol}`, renterKey);
    expect(del.status, JSON.stringify(del.body)).toBe(200);
    await waitFor(
      () => !existsSync(path.join(stateDir, 'volumes', String(vol))),
      'the volume to be deleted on the host',
      30_000,
      200,
    );
    expect(mounted(data)).toBe(false);
  }, 300_000);
});
