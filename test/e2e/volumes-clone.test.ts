// Cloning volumes with real processes (docs/volumes.md): `serve` and two `openrig agent`s with the
// process runtime (each its own state directory and machine), the host's rsync and OpenSSH
// client. A clone into the other agent's machine: that agent makes the volume and opens an SSH
// server for it, the source's agent pushes the volume's files there with the clone's one-time
// key; the new volume is `cloning` until copied, then ready, its files (a tree, a symbolic link
// kept as a link) on the destination host. A clone on the same machine is copied on the host. A
// clone made ready is deleted with its data. A never-written volume clones as an empty one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  callApi,
  createUser,
  processAgentArgs,
  startProc,
  startServe,
  waitFor,
  waitRegistered,
  type Proc,
} from '../helpers/process.js';

const ENV = {
  OPENRIG_SECRET_KEY: 'ce'.repeat(32),
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
  OPENRIG_HEARTBEAT_S: '1',
};
const HAS_TOOLS = spawnSync('rsync', ['--version']).status === 0 && spawnSync('ssh', ['-V']).status === 0;
if (!HAS_TOOLS) console.log('skipping the volume clone tests: rsync or ssh is not installed');

describe.skipIf(!HAS_TOOLS)('volume clones with two process-runtime agents', () => {
  let dir: string;
  let serve: Proc & { url: string };
  const agents: Proc[] = [];
  const states: string[] = [];
  const machines: number[] = [];
  const asks: number[] = [];
  let renterKey: string;
  let hostKey: string;
  const api = (method: string, p: string, body?: unknown, key = renterKey) =>
    callApi(serve.url, method, p, key, body);
  const data = (agent: number, volume: number) =>
    path.join(states[agent]!, 'volumes', String(volume), 'data');
  const volume = async (id: number) =>
    (
      (await api('GET', '/api/v0/volumes?owner=me&type=all_volume')).body.volumes as {
        id: number;
        status: string;
      }[]
    ).find((v) => v.id === id);
  const cloned = (id: number) =>
    waitFor(
      async () => {
        const s = (await volume(id))?.status;
        return s === 'ready' || s?.startsWith('clone failed') ? s : null;
      },
      `volume ${id} to be cloned`,
      60_000,
      200,
    );

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-vclone-'));
    serve = await startServe(['--data', dir], ENV);
    hostKey = (await createUser(dir, ENV, 'host@example.com')).api_key;
    renterKey = (await createUser(dir, ENV, 'renter@example.com', ['--balance', '50'])).api_key;
    for (const n of [0, 1]) {
      states.push(path.join(dir, `agent-${n}`));
      const a = startProc(
        processAgentArgs(serve.url, states[n]!, {
          gpus: 'RTX 4090x1',
          extra: ['--public-host', '127.0.0.1'],
        }),
        { ...ENV, OPENRIG_LOG_LEVEL: 'info', OPENRIG_API_KEY: hostKey },
      );
      agents.push(a);
      machines.push(...(await waitRegistered(a)));
    }
    expect(machines).toHaveLength(2);
    for (const m of machines) {
      const l = await api('POST', '/api/v0/volumes/', { size: 40, machine: m, price_disk: 0.2 }, hostKey);
      expect(l.status, JSON.stringify(l.body)).toBe(200);
      asks.push(l.body.volume_asks[0].id);
    }
  }, 120_000);

  afterAll(() => {
    for (const a of agents) a.child.kill('SIGKILL');
    serve?.child.kill('SIGTERM');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("clones a volume into the other agent's machine over SSH, and on its own machine on the host", async () => {
    const made = await api('PUT', '/api/v0/volumes/', { size: 5, id: asks[0], name: 'ckpt' });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const src = made.body.volume_id as number;
    // What an instance mounting it wrote (the process runtime keeps it as a directory).
    mkdirSync(path.join(data(0, src), 'run/epoch-3'), { recursive: true });
    writeFileSync(path.join(data(0, src), 'run/epoch-3/weights.bin'), Buffer.alloc(2 * 1024 * 1024, 5));
    writeFileSync(path.join(data(0, src), 'notes.txt'), 'checkpoint notes\n');
    symlinkSync('run/epoch-3', path.join(data(0, src), 'latest'));

    const r = await api('POST', '/api/v0/volumes/copy/', { src_id: src, dst_id: asks[1] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const dst = r.body.volume_id as number;
    expect((await volume(dst))?.status).toMatch(/^cloning/);
    expect(await cloned(dst)).toBe('ready');
    expect(readFileSync(path.join(data(1, dst), 'notes.txt'), 'utf8')).toBe('checkpoint notes\n');
    expect(
      readFileSync(path.join(data(1, dst), 'run/epoch-3/weights.bin')).equals(
        Buffer.alloc(2 * 1024 * 1024, 5),
      ),
    ).toBe(true);
    expect(readlinkSync(path.join(data(1, dst), 'latest'))).toBe('run/epoch-3');
    // The destination agent closed the clone's SSH server once the clone ended.
    await waitFor(
      () => /clone \d+ into volume \d+: no longer listed/.test(agents[1]!.stdout()),
      'the SSH server to close',
    );

    // The same machine: copied on the host.
    const same = await api('POST', '/api/v0/volumes/copy/', { src_id: src, dst_id: asks[0], size: 6 });
    expect(same.status, JSON.stringify(same.body)).toBe(200);
    const local = same.body.volume_id as number;
    expect(await cloned(local)).toBe('ready');
    expect(readFileSync(path.join(data(0, local), 'notes.txt'), 'utf8')).toBe('checkpoint notes\n');

    // Deleting the clone deletes its data on its host.
    expect((await api('DELETE', `/api/v0/volumes/?id=${dst}`)).status).toBe(200);
    await waitFor(
      () => !existsSync(path.join(states[1]!, 'volumes', String(dst))),
      'the clone to be deleted',
      20_000,
      200,
    );
    // The source is untouched.
    expect(readdirSync(data(0, src)).sort()).toEqual(['latest', 'notes.txt', 'run']);
  }, 120_000);

  it("copies into a volume on the other agent's machine (copy V.A:/ V.B:/in/)", async () => {
    const a = (await api('PUT', '/api/v0/volumes/', { size: 2, id: asks[0] })).body.volume_id as number;
    const b = (await api('PUT', '/api/v0/volumes/', { size: 2, id: asks[1] })).body.volume_id as number;
    mkdirSync(path.join(data(0, a), 'logs'), { recursive: true });
    writeFileSync(path.join(data(0, a), 'logs/run.txt'), 'across hosts\n');
    const r = await api('PUT', '/api/v0/commands/copy_direct/', {
      client_id: 'me',
      src_id: `V.${a}`,
      dst_id: `V.${b}`,
      src_path: '/',
      dst_path: '/in/',
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const end = await waitFor(
      async () => {
        const list = (await api('GET', '/api/v0/commands/copy_direct/')).body.copies as {
          id: number;
          status: string;
          msg: string;
        }[];
        const c = list.find((x) => x.id === r.body.copy_id);
        return c && ['done', 'failed', 'canceled'].includes(c.status) ? c : null;
      },
      'the copy to end',
      60_000,
      300,
    );
    expect(end.status, end.msg).toBe('done');
    expect(readFileSync(path.join(data(1, b), 'in/logs/run.txt'), 'utf8')).toBe('across hosts\n');
  }, 90_000);

  it('clones a volume never written as an empty one', async () => {
    const made = await api('PUT', '/api/v0/volumes/', { size: 3, id: asks[0] });
    const src = made.body.volume_id as number;
    const r = await api('POST', '/api/v0/volumes/copy/', {
      src_id: src,
      dst_id: asks[1],
      disable_compression: true,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await cloned(r.body.volume_id)).toBe('ready');
    expect(readdirSync(data(1, r.body.volume_id))).toEqual([]);
  }, 90_000);
});
