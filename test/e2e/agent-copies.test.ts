// Copies with real processes (docs/data.md): `serve`, an `openrig agent` with the process runtime
// and two machines, the host's rsync and OpenSSH client. Between instances: the source's agent
// pushes over the destination's SSH server with a one-time key, progress and the end land in the
// destination's status_msg and the webhook feed, nothing is written outside the destination and
// no symbolic link of the source is followed out of it, and a second login with the key is
// refused. With a laptop: `PUT /commands/rsync/` answers the instance's SSH server and rsync runs
// there exactly as the official CLI runs it (both directions, a tree, an --exclude, a resumed
// partial file), as `vastai_kaalia`, which may run nothing but rsync's daemon.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
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
} from '../helpers/process.js';

const ENV = {
  OPENRIG_SECRET_KEY: 'cd'.repeat(32),
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
  OPENRIG_HEARTBEAT_S: '2',
};
const HAS_TOOLS = spawnSync('rsync', ['--version']).status === 0 && spawnSync('ssh', ['-V']).status === 0;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

describe.skipIf(!HAS_TOOLS)('copies with the process runtime', () => {
  let dir: string;
  let stateDir: string;
  let serve: Proc & { url: string };
  let agent: Proc;
  let renterKey: string;
  let hostKey: string;
  let key: string;
  const ids: number[] = [];
  const api = (method: string, p: string, body?: unknown) => callApi(serve.url, method, p, renterKey, body);
  const root = (id: number) => path.join(stateDir, 'instances', String(id), 'root');

  /** rsync as the official CLI runs it, with `extra` options. */
  const cliRsync = (port: number, src: string, dst: string, extra: string[] = [], user = 'vastai_kaalia') =>
    spawnSync(
      'sh',
      [
        '-c',
        `rsync -arz -v --progress --rsh=ssh -e 'ssh -i ${key} -p ${port} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes' ${extra.join(' ')} ${src.replace('USER', user)} ${dst.replace('USER', user)}`,
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-copies-'));
    stateDir = path.join(dir, 'agent-state');
    serve = await startServe(['--data', dir, '--port', String(await freePort())], ENV);
    hostKey = (await createUser(dir, ENV, 'host@example.com')).api_key;
    renterKey = (await createUser(dir, ENV, 'renter@example.com', ['--balance', '50'])).api_key;
    key = path.join(dir, 'id_renter');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', key]);
    expect(
      (await api('POST', '/api/v0/ssh/', { ssh_key: readFileSync(`${key}.pub`, 'utf8').trim() })).status,
    ).toBe(200);
    agent = startProc(
      [
        'agent',
        '--server',
        serve.url,
        '--runtime',
        'process',
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
    const offers = (
      await api('POST', '/api/v0/bundles/', { gpu_name: { eq: 'RTX 4090' }, rentable: { eq: true } })
    ).body.offers as { id: number }[];
    expect(offers.length).toBe(2);
    for (const o of offers) {
      const r = await api('PUT', `/api/v0/asks/${o.id}/`, {
        client_id: 'me',
        image: 'ubuntu:22.04',
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
        60_000,
        300,
      );
  }, 180_000);

  afterAll(() => {
    agent?.child.kill('SIGKILL');
    serve?.child.kill('SIGTERM');
    if (stateDir) endInstanceGroups(stateDir);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const instance = async (id: number) => (await api('GET', `/api/v0/instances/${id}/`)).body.instances;

  it('copies a tree from one instance to another, following no link out of the source and writing nothing outside the destination', async () => {
    const [a, b] = ids as [number, number];
    const secret = path.join(dir, 'host-secret');
    writeFileSync(secret, 'host secret\n');
    const outside = path.join(dir, 'outside');
    mkdirSync(outside);
    mkdirSync(path.join(root(a), 'work/sub'), { recursive: true });
    writeFileSync(path.join(root(a), 'work/a.txt'), 'alpha\n');
    writeFileSync(path.join(root(a), 'work/sub/b.txt'), 'beta\n');
    writeFileSync(path.join(root(a), 'work/skip.log'), 'excluded\n');
    // Links out of the source instance: copied as links, never read through.
    symlinkSync(secret, path.join(root(a), 'work/leak'));
    symlinkSync(outside, path.join(root(a), 'work/out'));
    // In the destination, a link out of it where the tree has a directory.
    mkdirSync(path.join(root(b), 'data'), { recursive: true });
    symlinkSync(outside, path.join(root(b), 'data/sub'));

    const r = await api('PUT', '/api/v0/commands/copy_direct/', {
      client_id: 'me',
      src_id: String(a),
      dst_id: `C.${b}`,
      src_path: '/work/',
      dst_path: '/data/',
      exclude: ['*.log'],
    });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    const copyId = r.body.copy_id as number;
    const done = await waitFor(
      async () => {
        const i = await instance(b);
        return /copy from .* (done|failed)/.test(i?.status_msg ?? '') ? (i.status_msg as string) : null;
      },
      'the copy to end',
      60_000,
      300,
    );
    expect(done).toMatch(/done/);
    expect(readFileSync(path.join(root(b), 'data/a.txt'), 'utf8')).toBe('alpha\n');
    expect(readFileSync(path.join(root(b), 'data/sub/b.txt'), 'utf8')).toBe('beta\n');
    expect(existsSync(path.join(root(b), 'data/skip.log'))).toBe(false);
    // The link came across as a link (its text), not as the host file it points at.
    expect(readlinkSync(path.join(root(b), 'data/leak'))).toBe(secret);
    // The destination's link out was replaced by the directory: nothing landed outside.
    expect(statSync(path.join(root(b), 'data/sub')).isDirectory()).toBe(true);
    expect(existsSync(path.join(outside, 'b.txt'))).toBe(false);

    const list = (await api('GET', '/api/v0/commands/copy_direct/')).body.copies as {
      id: number;
      status: string;
    }[];
    expect(list.find((c) => c.id === copyId)?.status).toBe('done');
    const feed = (await api('GET', '/api/v0/events/')).body;
    const types = JSON.stringify(feed);
    expect(types).toContain('copy.started');
    expect(types).toContain('copy.completed');
  }, 90_000);

  it('refuses a source path that leads out of the source instance through a link', async () => {
    const [a, b] = ids as [number, number];
    const outside = path.join(dir, 'outside2');
    mkdirSync(outside);
    writeFileSync(path.join(outside, 'x.txt'), 'host file\n');
    symlinkSync(outside, path.join(root(a), 'escape'));
    const r = await api('PUT', '/api/v0/commands/copy_direct/', {
      client_id: 'me',
      src_id: a,
      dst_id: b,
      src_path: '/escape/',
      dst_path: '/got/',
    });
    expect(r.status).toBe(200);
    const end = await waitFor(
      async () => {
        const i = await instance(b);
        return /copy from .* (done|failed)/.test(i?.status_msg ?? '') && /escape/.test(i.status_msg)
          ? (i.status_msg as string)
          : null;
      },
      'the copy to end',
      60_000,
      300,
    );
    // The link is read against the instance's own root: /proc-less host path inside it does not exist.
    expect(end).toMatch(/failed/);
    expect(existsSync(path.join(root(b), 'got/x.txt'))).toBe(false);
  }, 90_000);

  it('serves the official CLI rsync both ways, with a tree, an exclude and a resumed file, and nothing else to vastai_kaalia', async () => {
    const [a] = ids as [number, number];
    const up = (
      await api('PUT', '/api/v0/commands/rsync/', {
        client_id: 'me',
        src_id: null,
        dst_id: String(a),
        src_path: 'local/',
        dst_path: '/up/',
      })
    ).body;
    expect(up.success).toBe(true);
    expect(up.dst_addr).toBe('127.0.0.1');
    const port = up.dst_port as number;
    const local = path.join(dir, 'local');
    mkdirSync(path.join(local, 'tree/deep'), { recursive: true });
    writeFileSync(path.join(local, 'tree/deep/f.txt'), 'deep\n');
    writeFileSync(path.join(local, 'tree/skip.tmp'), 'x\n');
    const big = Buffer.alloc(3 * 1024 * 1024, 7);
    writeFileSync(path.join(local, 'tree/big.bin'), big);
    // A partial file already there, as an interrupted --partial transfer leaves it.
    mkdirSync(path.join(root(a), 'up/tree'), { recursive: true });
    writeFileSync(path.join(root(a), 'up/tree/big.bin'), big.subarray(0, 1024 * 1024));
    const r1 = cliRsync(port, `${local}/`, `USER@127.0.0.1::${a}//up/`, ['--partial', '--exclude=*.tmp']);
    expect(r1.status, r1.stderr).toBe(0);
    expect(readFileSync(path.join(root(a), 'up/tree/deep/f.txt'), 'utf8')).toBe('deep\n');
    expect(readFileSync(path.join(root(a), 'up/tree/big.bin')).equals(big)).toBe(true);
    expect(existsSync(path.join(root(a), 'up/tree/skip.tmp'))).toBe(false);
    // Download, with the C.ID module name the CLI sends for C.ID:/path.
    const back = path.join(dir, 'back');
    mkdirSync(back);
    const r2 = cliRsync(port, `USER@127.0.0.1::C.${a}//up/tree`, back);
    expect(r2.status, r2.stderr).toBe(0);
    expect(readFileSync(path.join(back, 'tree/deep/f.txt'), 'utf8')).toBe('deep\n');
    // Another module, a shell, a command: refused.
    const r3 = cliRsync(port, `USER@127.0.0.1::${a + 100}/`, back);
    expect(r3.status).not.toBe(0);
    const sh = spawnSync(
      'ssh',
      [
        '-i',
        key,
        '-p',
        String(port),
        '-o',
        'StrictHostKeyChecking=no',
        '-o',
        'UserKnownHostsFile=/dev/null',
        '-o',
        'BatchMode=yes',
        'vastai_kaalia@127.0.0.1',
        'id',
      ],
      { encoding: 'utf8' },
    );
    expect(sh.status).not.toBe(0);
    expect(sh.stdout).not.toMatch(/uid=/);
  }, 90_000);

  /** Waits for copy `id` to end; its row from the list. */
  const copyEnd = (id: number) =>
    waitFor(
      async () => {
        const list = (await api('GET', '/api/v0/commands/copy_direct/')).body.copies as {
          id: number;
          status: string;
          msg: string;
          dst_kind?: string;
        }[];
        const c = list.find((x) => x.id === id);
        return c && ['done', 'failed', 'canceled'].includes(c.status) ? c : null;
      },
      `copy ${id} to end`,
      60_000,
      300,
    );

  it('copies into a volume (V.ID) of the host, carrying no host file that a link in the source points at', async () => {
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
      size: 5,
      id: ask.body.volume_asks[0].id,
      name: 'into',
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const vol = made.body.volume_id as number;
    const secret = path.join(dir, 'volume-host-secret');
    writeFileSync(secret, 'HOST-ONLY-CONTENT\n');
    const src = path.join(root(a), 'vsrc');
    mkdirSync(path.join(src, 'd'), { recursive: true });
    writeFileSync(path.join(src, 'd/x.txt'), 'to the volume\n');
    symlinkSync(secret, path.join(src, 'abs'));
    symlinkSync(path.relative(src, secret), path.join(src, 'rel'));
    symlinkSync(path.relative(path.join(src, 'd'), secret), path.join(src, 'd/deep'));

    const r = await api('PUT', '/api/v0/commands/copy_direct/', {
      client_id: 'me',
      src_id: String(a),
      dst_id: `V.${vol}`,
      src_path: '/vsrc/',
      dst_path: '/in/',
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const end = await copyEnd(r.body.copy_id as number);
    expect(end.status, end.msg).toBe('done');
    expect(end.dst_kind).toBe('volume');
    const data = path.join(stateDir, 'volumes', String(vol), 'data');
    expect(readFileSync(path.join(data, 'in/d/x.txt'), 'utf8')).toBe('to the volume\n');
    // The links arrived as links; no file in the volume holds the host file's content.
    expect(readlinkSync(path.join(data, 'in/abs'))).toBe(secret);
    const found = spawnSync('grep', ['-r', '-l', 'HOST-ONLY-CONTENT', data], { encoding: 'utf8' });
    expect(found.stdout).toBe('');
    // A source path through a link to the host's file is read inside the instance, where it is not.
    const through = await api('PUT', '/api/v0/commands/copy_direct/', {
      client_id: 'me',
      src_id: String(a),
      dst_id: `V.${vol}`,
      src_path: '/vsrc/abs',
      dst_path: '/through/',
    });
    expect((await copyEnd(through.body.copy_id as number)).status).toBe('failed');
    expect(spawnSync('grep', ['-r', '-l', 'HOST-ONLY-CONTENT', data], { encoding: 'utf8' }).stdout).toBe('');
    // Nothing is under way into it now; a volume that is not the renter's is no destination.
    const none = await api('DELETE', '/api/v0/commands/copy_direct/', {
      client_id: 'me',
      dst_id: `V.${vol}`,
    });
    expect(none.body).toMatchObject({ success: false, canceled: 0 });
    const foreign = await api('PUT', '/api/v0/commands/copy_direct/', {
      client_id: 'me',
      src_id: String(a),
      dst_id: `V.${vol + 1000}`,
      src_path: '/vsrc/',
      dst_path: '/',
    });
    expect(foreign.status).toBe(404);
  }, 120_000);

  it('cancel copy stops a copy under way', async () => {
    const [a, b] = ids as [number, number];
    mkdirSync(path.join(root(a), 'many'), { recursive: true });
    for (let i = 0; i < 40; i++)
      writeFileSync(path.join(root(a), `many/f${i}.bin`), Buffer.alloc(4 * 1024 * 1024, i));
    const r = await api('PUT', '/api/v0/commands/copy_direct/', {
      client_id: 'me',
      src_id: a,
      dst_id: b,
      src_path: '/many/',
      dst_path: '/many/',
    });
    expect(r.body.success).toBe(true);
    const again = await api('PUT', '/api/v0/commands/copy_direct/', {
      client_id: 'me',
      src_id: a,
      dst_id: b,
      src_path: '/many/',
      dst_path: '/x/',
    });
    expect(again.status).toBe(409);
    const c = await api('DELETE', '/api/v0/commands/copy_direct/', { client_id: 'me', dst_id: String(b) });
    expect(c.status).toBe(200);
    expect(c.body.success).toBe(true);
    expect((await instance(b)).status_msg).toBe('copy canceled');
    const list = (await api('GET', '/api/v0/commands/copy_direct/')).body.copies as {
      id: number;
      status: string;
    }[];
    expect(list[0]!.status).toBe('canceled');
  }, 90_000);
});
