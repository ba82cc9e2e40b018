// The Engine API client against the real engine: exec with a hijacked stream (stdin in, stdout
// and stderr apart, the exit code), files in and out through the archive endpoint, logs, and the
// tar helpers on their own.
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestImage, dockerUnavailable } from '../../test/helpers/docker.js';
import {
  Demuxer,
  DockerEngine,
  TailBuffer,
  demux,
  registryAuthHeader,
  splitRef,
  tarOneFile,
  untarFirstFile,
} from './docker-engine.js';

describe('tar and stream helpers', () => {
  it('a one-file ustar archive reads back', () => {
    const data = Buffer.from('x'.repeat(700));
    const tar = tarOneFile('f.txt', data, 0o640);
    expect(tar.length % 512).toBe(0);
    expect(untarFirstFile(tar).equals(data)).toBe(true);
  });
  it('splits image references', () => {
    expect(splitRef('ubuntu')).toEqual({ name: 'ubuntu', tag: 'latest' });
    expect(splitRef('127.0.0.1:5000/a/b:1.2')).toEqual({ name: '127.0.0.1:5000/a/b', tag: '1.2' });
    expect(splitRef('127.0.0.1:5000/a')).toEqual({ name: '127.0.0.1:5000/a', tag: 'latest' });
  });
  it('demultiplexes framed output', () => {
    const frame = (t: number, s: string) => {
      const h = Buffer.alloc(8);
      h[0] = t;
      h.writeUInt32BE(Buffer.byteLength(s), 4);
      return Buffer.concat([h, Buffer.from(s)]);
    };
    const f = demux(Buffer.concat([frame(1, 'out'), frame(2, 'err')]));
    expect(f.map((x) => [x.stream, x.data.toString()])).toEqual([
      [1, 'out'],
      [2, 'err'],
    ]);
  });
});

describe('registryAuthHeader', () => {
  it('is base64url with its = padding, as the docker CLI sends it, for every length mod 3', () => {
    const lengths = new Set<number>();
    for (const password of ['p', 'pw', 'pwd']) {
      const auth = { username: 'u', password, serveraddress: '127.0.0.1:5000' };
      const json = JSON.stringify(auth);
      lengths.add(json.length % 3);
      const h = registryAuthHeader(auth);
      expect(h.length % 4).toBe(0);
      expect(h).toMatch(/^[A-Za-z0-9_-]+={0,2}$/);
      expect(h).toBe(Buffer.from(json).toString('base64').replace(/\+/g, '-').replace(/\//g, '_'));
      expect(Buffer.from(h, 'base64url').toString()).toBe(json);
    }
    expect(lengths.size).toBe(3);
  });
});

describe('Demuxer and TailBuffer', () => {
  const frame = (t: number, s: string | Buffer) => {
    const d = Buffer.isBuffer(s) ? s : Buffer.from(s);
    const h = Buffer.alloc(8);
    h[0] = t;
    h.writeUInt32BE(d.length, 4);
    return Buffer.concat([h, d]);
  };
  it('frames split anywhere across chunks come out whole, in order', () => {
    const all = Buffer.concat([frame(1, 'hello '), frame(2, 'err'), frame(1, 'world\n'), frame(1, '')]);
    for (let cut = 1; cut < all.length; cut++) {
      const out: string[] = [];
      const d = new Demuxer((s, data) => out.push(`${s}:${data.toString()}`));
      d.push(all.subarray(0, cut));
      d.push(all.subarray(cut));
      d.end();
      const byStream = (n: number) =>
        out
          .filter((x) => x.startsWith(`${n}:`))
          .map((x) => x.slice(2))
          .join('');
      expect(byStream(1)).toBe('hello world\n');
      expect(byStream(2)).toBe('err');
    }
  });
  it('a TTY stream (no frame headers) passes as it is', () => {
    const out: Buffer[] = [];
    const d = new Demuxer((_s, data) => out.push(data));
    d.push(Buffer.from('plain '));
    d.push(Buffer.from('text\n'));
    d.end();
    expect(Buffer.concat(out).toString()).toBe('plain text\n');
  });
  it('keeps the last bytes only, from a line start, in linear time', () => {
    const t = new TailBuffer(1000);
    const t0 = Date.now();
    for (let i = 0; i < 200_000; i++) t.push(Buffer.from(`line ${i}\n`));
    expect(Date.now() - t0).toBeLessThan(2000);
    const text = t.text();
    expect(text.length).toBeLessThanOrEqual(1000);
    expect(text.startsWith('line ')).toBe(true);
    expect(text.endsWith('line 199999\n')).toBe(true);
    const small = new TailBuffer(100);
    small.push(Buffer.from('a\nb\n'));
    expect(small.text()).toBe('a\nb\n');
  });
});

describe('DockerEngine connections', () => {
  it('transfers renters hold open, however many, hold up none of the agent calls', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-engine-'));
    const socketPath = path.join(dir, 'engine.sock');
    const held: import('node:http').ServerResponse[] = [];
    const server = createServer((req, res) => {
      if (req.url?.includes('/logs')) {
        // A log that streams on and on.
        res.writeHead(200, { 'content-type': 'application/vnd.docker.raw-stream' });
        res.write(Buffer.from([1, 0, 0, 0, 0, 0, 0, 2, 104, 10]));
        held.push(res);
      } else if (req.url?.startsWith('/v1.41/containers/json')) res.end('[]');
      else res.writeHead(404).end('{"message":"no such thing"}');
    });
    await new Promise<void>((r) => server.listen(socketPath, r));
    const e = new DockerEngine(socketPath);
    try {
      const logs = Array.from({ length: 40 }, () => e.logs('c', 10, 1000).catch(() => ''));
      await new Promise((r) => setTimeout(r, 300));
      const listed = await Promise.race([
        e.call('GET', '/containers/json?all=1'),
        new Promise<never>((_, no) =>
          setTimeout(() => no(new Error('the listing waited behind the transfers')), 5000),
        ),
      ]);
      expect(listed.body).toEqual([]);
      for (const r of held) r.end();
      expect(await Promise.all(logs)).toContain('h\n');
    } finally {
      for (const r of held) r.end();
      await e.close();
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a pull streaming for as long as it takes holds up no other call to the engine', async () => {
    // An engine on a socket of its own whose pull streams until the test lets it end.
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-engine-'));
    const socketPath = path.join(dir, 'engine.sock');
    let endPull!: () => void;
    const pullEnds = new Promise<void>((r) => (endPull = r));
    const server = createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url?.startsWith('/v1.41/images/create')) {
        res.write(
          `${JSON.stringify({ id: 'l1', status: 'Downloading', progressDetail: { current: 1, total: 9 } })}\n`,
        );
        void pullEnds.then(() => res.end(`${JSON.stringify({ id: 'l1', status: 'Pull complete' })}\n`));
      } else if (req.url?.startsWith('/v1.41/containers/json')) res.end('[]');
      else res.writeHead(404).end('{"message":"no such thing"}');
    });
    await new Promise<void>((r) => server.listen(socketPath, r));
    const e = new DockerEngine(socketPath);
    try {
      const progress: number[] = [];
      let pulled = false;
      const pull = e
        .pull('registry.example/big:1', null, (done) => progress.push(done))
        .then(() => {
          pulled = true;
        });
      const listed = await Promise.race([
        e.call('GET', '/containers/json?all=1'),
        new Promise<never>((_, no) =>
          setTimeout(() => no(new Error('the listing waited behind the pull')), 5000),
        ),
      ]);
      expect(listed.body).toEqual([]);
      expect(pulled).toBe(false);
      endPull();
      await pull;
      expect(progress).toEqual([1, 9]);
    } finally {
      endPull();
      await e.close();
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const why = dockerUnavailable();
if (why) console.log(`docker engine tests skipped: ${why}`);

describe.skipIf(why !== null)('DockerEngine against the engine', () => {
  const e = new DockerEngine();
  let id = '';
  beforeAll(async () => {
    const tag = buildTestImage('openrig-test/busybox:1');
    await e.remove('openrig-engine-test');
    id = await e.create('openrig-engine-test', {
      Image: tag,
      Cmd: ['/bin/sh', '-c', 'echo hello-log; trap "exit 0" TERM; while :; do sleep 3600 & wait $!; done'],
      Labels: { 'openrig.test': 'engine' },
    });
    await e.start(id);
  }, 60_000);
  afterAll(async () => {
    await e.remove(id);
    await e.close();
  });

  it('exec: stdin in, stdout and stderr apart, the exit code', async () => {
    const { execId, socket } = await e.exec(id, {
      cmd: ['/bin/sh', '-c', 'cat; echo err >&2; exit 3'],
      tty: false,
    });
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.write('stdin-data\n');
    socket.end();
    await new Promise((r) => socket.on('end', r));
    const frames = demux(Buffer.concat(chunks));
    expect(
      frames
        .filter((f) => f.stream === 1)
        .map((f) => f.data.toString())
        .join(''),
    ).toBe('stdin-data\n');
    expect(
      frames
        .filter((f) => f.stream === 2)
        .map((f) => f.data.toString())
        .join(''),
    ).toBe('err\n');
    expect(await e.execExitCode(execId)).toBe(3);
  });

  it('files in and out, stat, logs', async () => {
    await e.writeFile(id, '/root', 'a.txt', Buffer.from('file-content\n'), 0o600);
    const st = await e.statPath(id, '/root/a.txt');
    expect(st).toMatchObject({ name: 'a.txt', size: 13 });
    expect(st!.mode & 0o777).toBe(0o600);
    expect(await e.statPath(id, '/nope')).toBeNull();
    expect((await e.readFile(id, '/root/a.txt')).toString()).toBe('file-content\n');
    expect(await e.logs(id, 10, 1 << 20)).toBe('hello-log\n');
  });
});
