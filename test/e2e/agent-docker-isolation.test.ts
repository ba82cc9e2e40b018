// What one renter of a Docker host can do to another renter and to the host, with real containers:
// - network: a container reaches no other container's ports (published or not, by its address on
//   the bridge), cannot open raw or packet sockets (no ARP spoofing), while a published port is
//   reachable on the host;
// - hardening: no-new-privileges, a pids limit, the offer's memory, rotated logs, nothing mounted;
// - no host credential is readable inside an instance;
// - private images: an image pulled with one renter's credentials is pulled again with the next
//   renter's before use, and a renter without working credentials gets a clear pull error;
// - image_login works for credentials of every length (the X-Registry-Auth header's padding);
// - logs: a log of 120k lines without a tail answers the last LOGS_MAX_LINES lines without
//   stalling the agent's event loop.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, execFileSync, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DockerRuntime, containerName } from '../../src/agent/runtime-docker.js';
import { LOGS_MAX_LINES, type InstanceSpec } from '../../src/agent/runtime.js';
import { buildTestImage, dockerUnavailable } from '../helpers/docker.js';
import { pushImage, registryUnavailable, startRegistry } from '../helpers/docker-registry.js';
import { pollUntil } from '../helpers/poll.js';

const why = dockerUnavailable();
if (why) console.log(`docker isolation tests skipped: ${why}`);
const noRegistry = why ?? registryUnavailable();
if (!why && noRegistry) console.log(`docker registry tests skipped: ${noRegistry}`);

const SECRET = 'ork_host_secret_isolation_0123456789';
// Ids far above the other Docker tests' (their servers number instances from 1).
const A = 987301;
const B = 987302;
const C = 987303;
const L = 987304;
const P = [987311, 987312, 987313, 987314, 987315, 987316];
const S = [987321, 987322];
const noSsh =
  spawnSync('sh', ['-c', 'command -v ssh && command -v scp']).status !== 0 ? 'no ssh/scp client' : null;

function docker(...args: string[]): string {
  return execFileSync('docker', args, { encoding: 'utf8' }).trim();
}

/** Connects to host:port and reads what the other end says before closing (null: no connection). */
function readFrom(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    let out = '';
    s.setTimeout(5000, () => s.destroy());
    s.on('data', (d) => (out += d.toString()));
    s.on('error', () => resolve(null));
    s.on('close', () => resolve(out));
  });
}

describe.skipIf(why !== null)('docker runtime: one renter against another and the host', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'openrig-docker-isolation-'));
  const rt = new DockerRuntime({
    stateDir: dir,
    agentUid: 'agent-isolation-test',
    sshBind: '127.0.0.1',
    log: { info: () => {}, warn: () => {} },
    stopGraceS: 1,
    keyCheck: { server: 'http://127.0.0.1:9', apiKey: SECRET },
  });
  let image = '';
  const spec = (id: number, over: Partial<InstanceSpec> = {}): InstanceSpec => ({
    id,
    image,
    disk: 1,
    onstart: '',
    env: { CONTAINER_API_KEY: `ori_own_${id}` },
    authorizedKeys: [],
    ...over,
  });
  const sh = async (id: number, script: string) => rt.execute(id, ['/bin/sh', '-c', script]);

  beforeAll(async () => {
    image = buildTestImage('openrig-test/busybox:1');
    for (const id of [A, B, C, L, ...P, ...S]) await rt.engine.remove(containerName(id));
  }, 60_000);
  afterAll(async () => {
    for (const id of [A, B, C, L, ...P, ...S]) await rt.destroy(id).catch(() => {});
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a container reaches neither port of another renter's container, opens no raw socket; a published port answers on the host", async () => {
    await rt.start(spec(A));
    await rt.start(
      spec(B, {
        onstart: 'nc -ll -p 7000 -e /bin/echo private-7000 & nc -ll -p 8000 -e /bin/echo published-8000',
        ports: [{ container: 8000, proto: 'tcp' }],
      }),
    );
    const ipB = docker(
      'inspect',
      '-f',
      '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}',
      containerName(B),
    );
    expect(ipB).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    // B listens: from inside B both ports answer.
    expect(
      await pollUntil(
        () => sh(B, 'nc -w 2 127.0.0.1 7000; nc -w 2 127.0.0.1 8000'),
        (s) => s.includes('private-7000') && s.includes('published-8000'),
        15_000,
        200,
      ),
    ).toContain('published-8000');
    // From A: neither port of B, by B's address on the bridge.
    const probe = await sh(A, `nc -w 3 ${ipB} 7000; nc -w 3 ${ipB} 8000; echo probed`);
    expect(probe).toContain('probed');
    expect(probe).not.toContain('private-7000');
    expect(probe).not.toContain('published-8000');
    // No raw or packet socket: ARP (spoofing) and raw ICMP are refused.
    const arp = await sh(A, `arping -c 1 -w 2 -I eth0 ${ipB} 2>&1; echo "arping=$?"`);
    expect(arp).toMatch(/Operation not permitted|permission denied/i);
    expect(arp).toContain('arping=1');
    // The published port answers on the host, on the address the operator chose.
    const st = await rt.inspect(B);
    expect(st.state).toBe('running');
    const hostPort = Number(st.state === 'running' ? st.ports?.['8000/tcp']?.[0]?.HostPort : 0);
    expect(await readFrom('127.0.0.1', hostPort)).toBe('published-8000\n');
    const c = JSON.parse(docker('inspect', containerName(B)))[0];
    expect(c.HostConfig.PortBindings['8000/tcp']).toEqual([
      { HostIp: '127.0.0.1', HostPort: String(hostPort) },
    ]);
  }, 90_000);

  it('runs hardened: no new privileges, a pids limit, the offer memory, rotated logs, nothing of the host mounted, no host key inside', async () => {
    await rt.start(spec(C, { limits: { cpus: 1, memoryMb: 256 } }));
    const c = JSON.parse(docker('inspect', containerName(C)))[0];
    expect(c.HostConfig.SecurityOpt).toEqual(['no-new-privileges']);
    expect(c.HostConfig.CapDrop).toEqual(expect.arrayContaining(['NET_RAW']));
    expect(c.HostConfig.PidsLimit).toBeGreaterThan(0);
    expect(c.HostConfig.PidsLimit).toBeLessThanOrEqual(8192);
    expect(c.HostConfig.Memory).toBe(256 * 1024 * 1024);
    expect(c.HostConfig.LogConfig).toEqual({
      Type: 'json-file',
      Config: { 'max-file': '3', 'max-size': '20m' },
    });
    expect(c.HostConfig.Binds ?? []).toEqual([]);
    expect(c.Mounts).toEqual([]);
    const inside = await sh(
      C,
      'grep NoNewPrivs /proc/self/status; cat /proc/1/environ | tr "\\0" "\\n"; env; grep -rl ork_host /root /tmp /etc /bin 2>/dev/null; echo end',
    );
    expect(inside).toMatch(/NoNewPrivs:\s+1/);
    expect(inside).toContain(`CONTAINER_API_KEY=ori_own_${C}`);
    expect(inside).not.toContain(SECRET);
    expect(JSON.stringify(c)).not.toContain(SECRET);
  }, 60_000);

  const LOG_ONSTART = "seq 1 120000 | sed 's/$/ a log line of some length to make it long/'";

  it('logs without a tail: the last lines up to the cap, read without stalling the event loop; a tail is the engine’s', async () => {
    const N = 120_000;
    await rt.start(spec(L, { onstart: LOG_ONSTART }));
    await pollUntil(
      () => rt.logs(L, 1),
      (s) => s.startsWith(`${N} a log line`),
      60_000,
      300,
    );
    let worst = 0;
    let last = performance.now();
    const tick = setInterval(() => {
      const now = performance.now();
      worst = Math.max(worst, now - last);
      last = now;
    }, 5);
    const t0 = performance.now();
    const all = await rt.logs(L, null);
    const took = performance.now() - t0;
    clearInterval(tick);
    const lines = all.split('\n').filter(Boolean);
    expect(lines.length).toBe(LOGS_MAX_LINES);
    expect(lines.at(-1)).toBe(`${N} a log line of some length to make it long`);
    expect(lines[0]).toBe(`${N - LOGS_MAX_LINES + 1} a log line of some length to make it long`);
    expect(took).toBeLessThan(5000);
    expect(worst).toBeLessThan(250);
    expect(await rt.logs(L, 3)).toBe(
      [N - 2, N - 1, N].map((n) => `${n} a log line of some length to make it long\n`).join(''),
    );
  }, 120_000);

  describe.skipIf(noRegistry !== null)('with a local registry', () => {
    const registries: ChildProcess[] = [];
    afterAll(() => {
      for (const r of registries) r.kill('SIGTERM');
    });

    it('image_login works for credentials of every length mod 3', async () => {
      // The same password under names of three lengths: the credentials' JSON has each length mod 3.
      const users = ['ra', 'rab', 'rabc'].map((name) => ({ name, password: 'pw-0123' }));
      const lengths = new Set(
        users.map(
          (u) =>
            JSON.stringify({ username: u.name, password: u.password, serveraddress: '127.0.0.1:5' }).length %
            3,
        ),
      );
      expect(lengths.size).toBe(3);
      const reg = await startRegistry(mkdtempSync(path.join(dir, 'reg-')), users);
      registries.push(reg.child);
      const ref = `127.0.0.1:${reg.port}/openrig/lengths:1`;
      pushImage(dir, image, ref, users[0]);
      for (const [i, u] of users.entries()) {
        const login = `-u ${u.name} -p ${u.password} 127.0.0.1:${reg.port}`;
        await rt.prepare(spec(P[i]!, { image: ref, imageLogin: login }));
        expect(docker('image', 'inspect', '-f', '{{.Id}}', ref)).toMatch(/^sha256:/);
        docker('rmi', ref);
      }
    }, 120_000);

    it("an image pulled with one renter's credentials is pulled again with the next renter's: without working ones, a clear error", async () => {
      const owner = { name: 'owner', password: 'owner-pw-1' };
      const other = { name: 'other', password: 'other-pw-22' };
      const reg = await startRegistry(mkdtempSync(path.join(dir, 'reg-')), [owner, other]);
      registries.push(reg.child);
      const ref = `127.0.0.1:${reg.port}/openrig/private:1`;
      pushImage(dir, image, ref, owner);
      const at = `127.0.0.1:${reg.port}`;
      await rt.prepare(
        spec(P[3]!, { image: ref, imageLogin: `-u ${owner.name} -p ${owner.password} ${at}` }),
      );
      expect(docker('image', 'inspect', '-f', '{{.Id}}', ref)).toMatch(/^sha256:/);
      // Another renter naming it without credentials, or with wrong ones, does not get it.
      await expect(rt.prepare(spec(P[4]!, { image: ref }))).rejects.toThrow(
        /private image.*(unauthorized|authentication required|no basic auth)/i,
      );
      await expect(
        rt.prepare(spec(P[4]!, { image: ref, imageLogin: `-u ${owner.name} -p wrong ${at}` })),
      ).rejects.toThrow(/private image.*(unauthorized|authentication required|no basic auth)/i);
      await expect(rt.start(spec(P[4]!, { image: ref }))).rejects.toThrow(/private image/);
      expect(await rt.engine.inspect(containerName(P[4]!))).toBeNull();
      // Nor by the image's id.
      const id = docker('image', 'inspect', '-f', '{{.Id}}', ref);
      await expect(rt.prepare(spec(P[4]!, { image: id }))).rejects.toThrow(/private image/);
      // The same content under a local tag never pulled with credentials stays usable.
      await rt.prepare(spec(P[4]!, { image }));
      // A renter with credentials the registry accepts does.
      await rt.prepare(
        spec(P[5]!, { image: ref, imageLogin: `-u ${other.name} -p ${other.password} ${at}` }),
      );
      // The record outlives the agent: a new runtime on the same state directory refuses too.
      const again = new DockerRuntime({
        stateDir: dir,
        agentUid: 'agent-isolation-test',
        sshBind: '127.0.0.1',
        log: { info: () => {}, warn: () => {} },
      });
      await expect(again.prepare(spec(P[4]!, { image: ref }))).rejects.toThrow(/private image/);
      await again.close();
      docker('rmi', ref);
    }, 120_000);
  });

  describe.skipIf(noSsh !== null)('copies over the agent SSH server, and other renters meanwhile', () => {
    const keyFile = path.join(dir, 'id_ed25519');
    const big = path.join(dir, 'big.bin');
    const SIZE = 64 * 1024 * 1024;
    let pub = '';
    let portOf: Record<number, number> = {};
    const sshOpts = (port: number) => [
      ...['-i', keyFile, '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null'],
      ...['-o', 'BatchMode=yes', '-o', 'IdentitiesOnly=yes', '-o', 'LogLevel=ERROR', '-o', `Port=${port}`],
    ];
    /** Runs a client program without blocking this process, whose event loop serves the SSH servers. */
    const run = (cmd: string, args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string; ms: number }>((resolve) => {
        const t0 = performance.now();
        execFile(
          cmd,
          args,
          { encoding: 'utf8', timeout: 120_000, maxBuffer: 1 << 20 },
          (err, stdout, stderr) =>
            resolve({ code: err ? Number(err.code) || 1 : 0, stdout, stderr, ms: performance.now() - t0 }),
        );
      });
    const sha = (f: string) => createHash('sha256').update(readFileSync(f)).digest('hex');
    /**
     * The most Buffer memory this process held live while `fn` ran, above what it held before:
     * sampled after a full collection (garbage of chunks already passed on is not held).
     */
    const peakBuffers = async <T>(fn: () => Promise<T>): Promise<{ value: T; peak: number }> => {
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as () => void;
      gc();
      const base = process.memoryUsage().arrayBuffers;
      let peak = 0;
      const t = setInterval(() => {
        gc();
        peak = Math.max(peak, process.memoryUsage().arrayBuffers - base);
      }, 100);
      try {
        const value = await fn();
        return { value, peak };
      } finally {
        clearInterval(t);
      }
    };

    beforeAll(async () => {
      execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'renter', '-f', keyFile]);
      pub = readFileSync(`${keyFile}.pub`, 'utf8').trim();
      writeFileSync(
        big,
        Buffer.alloc(SIZE, 7).map((_, i) => (i * 2654435761) >>> 24),
      );
      portOf = {};
      for (const id of S) portOf[id] = (await rt.start(spec(id, { authorizedKeys: [pub] }))).sshPort;
    }, 60_000);

    it('scp -O and SFTP stream both ways in constant memory; a directory is refused where a file is expected', async () => {
      const port = portOf[S[0]!]!;
      const up = await peakBuffers(() =>
        run('scp', ['-O', ...sshOpts(port), big, 'root@127.0.0.1:/root/big-o']),
      );
      expect(up.value.code, up.value.stderr).toBe(0);
      expect(up.value.ms).toBeLessThan(20_000);
      expect(up.peak).toBeLessThan(32 * 1024 * 1024);
      const down = path.join(dir, 'down-o.bin');
      const dl = await peakBuffers(() =>
        run('scp', ['-O', ...sshOpts(port), 'root@127.0.0.1:/root/big-o', down]),
      );
      expect(dl.value.code, dl.value.stderr).toBe(0);
      expect(dl.peak).toBeLessThan(32 * 1024 * 1024);
      expect(sha(down)).toBe(sha(big));
      // SFTP (scp's default protocol) both ways.
      const sup = await peakBuffers(() =>
        run('scp', ['-s', ...sshOpts(port), big, 'root@127.0.0.1:/root/big-s']),
      );
      expect(sup.value.code, sup.value.stderr).toBe(0);
      expect(sup.peak).toBeLessThan(32 * 1024 * 1024);
      const sdown = path.join(dir, 'down-s.bin');
      const sdl = await peakBuffers(() =>
        run('scp', ['-s', ...sshOpts(port), 'root@127.0.0.1:/root/big-s', sdown]),
      );
      expect(sdl.value.code, sdl.value.stderr).toBe(0);
      expect(sdl.peak).toBeLessThan(32 * 1024 * 1024);
      expect(sha(sdown)).toBe(sha(big));
      // The upload's spool on the host is gone once the file is in.
      expect(
        await pollUntil(
          () => readdirSync(rt.dir(S[0]!)).filter((n) => n.startsWith('sftp-')),
          (l) => l.length === 0,
          5000,
          100,
        ),
      ).toEqual([]);
      // An SFTP OPEN of a directory is refused, not answered with the directory as an archive.
      const { ssh2 } = await import('../../src/agent/ssh-server.js');
      const client = new (ssh2().Client)();
      const opened = await new Promise<string>((resolve, reject) => {
        client
          .on('ready', () =>
            client.sftp((err, sftp) => {
              if (err) return reject(err);
              sftp.open('/bin', 'r', (e) => resolve(e ? `refused: ${e.message}` : 'opened'));
            }),
          )
          .on('error', reject)
          .connect({ host: '127.0.0.1', port, username: 'root', privateKey: readFileSync(keyFile) });
      });
      client.end();
      expect(opened).toMatch(/^refused: .*is a directory/);
    }, 180_000);

    it("one renter's huge log without a tail and big copies leave another renter's login under a second and the event loop on time", async () => {
      // The log instance of the logs test (made here when that test did not run): 120k lines.
      await rt.start(spec(L, { onstart: LOG_ONSTART }));
      expect(
        await pollUntil(
          () => rt.logs(L, 1),
          (t) => t.startsWith('120000 '),
          60_000,
          300,
        ),
      ).toMatch(/^120000 /);
      const h = monitorEventLoopDelay({ resolution: 10 });
      h.enable();
      // A heartbeat every 300 ms: none may come more than 200 ms late.
      let lateness = 0;
      let expected = performance.now() + 300;
      const beat = setInterval(() => {
        const now = performance.now();
        lateness = Math.max(lateness, now - expected);
        expected = now + 300;
      }, 300);
      let busy = true;
      const heavy = (async () => {
        const port = portOf[S[0]!]!;
        await Promise.all([
          (async () => {
            while (busy) await rt.logs(L, null);
          })(),
          (async () => {
            while (busy) await run('scp', ['-O', ...sshOpts(port), big, 'root@127.0.0.1:/root/load']);
          })(),
        ]);
      })();
      const logins: number[] = [];
      try {
        await new Promise((r) => setTimeout(r, 500));
        for (let i = 0; i < 5; i++) {
          const r = await run('ssh', [...sshOpts(portOf[S[1]!]!), 'root@127.0.0.1', 'true']);
          expect(r.code, r.stderr).toBe(0);
          logins.push(r.ms);
          await new Promise((res) => setTimeout(res, 200));
        }
      } finally {
        busy = false;
        await heavy;
        clearInterval(beat);
        h.disable();
      }
      // Never starved: half the logins under a second and none over two, with the rest of the
      // suite sharing the machine's two cores.
      const shown = `logins: ${logins.map(Math.round).join(', ')} ms`;
      expect([...logins].sort((x, y) => x - y)[Math.floor(logins.length / 2)], shown).toBeLessThan(1000);
      expect(Math.max(...logins), shown).toBeLessThan(2000);
      expect(lateness).toBeLessThan(200);
      expect(h.max / 1e6).toBeLessThan(200);
    }, 180_000);
  });
});
