// The HTTPS gateway to instance ports (docs/gateway.md) on the Docker runtime, end to end: a real
// `openrig serve`, a real `openrig agent --runtime docker` and a container of an image built here
// (busybox, the host's node and the libraries it loads, and test/fixtures/gateway-app.mjs) whose
// app listens on a port of its own, reached only through the container's address on the
// instances' network: the host opens no port for it. Through `/i/ID/PORT/` the owner exchanges
// WebSocket messages and receives a streaming response lasting GATEWAY_STREAM_S seconds (300 by
// default, with silences of over 100 s between its lines) whose every line arrives when sent; no
// credential gets 401, another renter's 403, the owner's key or signed link 200.
// Skipped, saying why, only where no Docker engine answers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { WebSocket } from 'undici';
import { ed25519KeyPair } from '../../src/contract/ssh-keygen.js';
import {
  agentArgs,
  callApi,
  createUser,
  ROOT,
  startProc,
  startServe,
  waitFor,
  type Proc,
} from '../helpers/process.js';
import { dockerUnavailable, lockDocker, removeAgentContainers } from '../helpers/docker.js';

/**
 * How long the streamed response lasts, in seconds: 5 minutes by default, which is the
 * requirement; GATEWAY_STREAM_S=20 shortens it for a developer's quick run.
 */
const STREAM_S = Number(process.env.GATEWAY_STREAM_S ?? 300);
/** Seconds of silence between the stream's lines: over 100 s in the full run. */
const STREAM_EVERY_S = STREAM_S >= 300 ? 101 : Math.max(1, Math.ceil(STREAM_S / 3));
/** The stream's lines after `start`: `tick N` until N reaches STREAM_S. */
const TICKS = Math.ceil(STREAM_S / STREAM_EVERY_S);
/** The app's port inside the container: the same for every run, as no host port is taken. */
const APP_PORT = 8080;

const ENV = {
  OPENRIG_SECRET_KEY: 'a7'.repeat(32),
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_LOG_LEVEL: 'warn',
  OPENRIG_HEARTBEAT_S: '2',
};
const NO_DOCKER = dockerUnavailable();
if (NO_DOCKER) console.log(`the gateway with the docker runtime skipped: ${NO_DOCKER}`);

const APP = path.join(ROOT, 'test/fixtures/gateway-app.mjs');

/**
 * An image holding busybox, the host's node with the shared libraries it loads, and the gateway
 * app at /app/gateway-app.mjs; tagged by the app's and node's digests, so a change builds anew.
 */
function buildNodeAppImage(): string {
  const node = process.execPath;
  const digest = createHash('sha256')
    .update(readFileSync(APP))
    .update(process.version)
    .update(node)
    .digest('hex')
    .slice(0, 12);
  const tag = `openrig-test/gateway-node:${digest}`;
  if (spawnSync('docker', ['image', 'inspect', tag], { stdio: 'ignore' }).status === 0) return tag;
  const busybox = ['/bin/busybox', '/usr/bin/busybox'].find(
    (b) => spawnSync('test', ['-x', b]).status === 0,
  )!;
  const root = mkdtempSync(path.join(tmpdir(), 'openrig-rootfs-gw-'));
  try {
    for (const d of ['bin', 'root', 'tmp', 'etc', 'usr/bin', 'proc', 'sys', 'dev', 'app'])
      mkdirSync(path.join(root, d), { recursive: true });
    copyFileSync(busybox, path.join(root, 'bin/busybox'));
    for (const a of execFileSync(busybox, ['--list'], { encoding: 'utf8' }).split('\n'))
      if (a && a !== 'busybox') symlinkSync('busybox', path.join(root, 'bin', a));
    writeFileSync(path.join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\n');
    writeFileSync(path.join(root, 'etc/group'), 'root:x:0:\n');
    copyFileSync(node, path.join(root, 'usr/bin/node'));
    const libs = execFileSync('ldd', [node], { encoding: 'utf8' })
      .split('\n')
      .map((l) => /(\/\S+)/.exec(l.includes('=>') ? l.split('=>')[1]! : l)?.[1])
      .filter((x): x is string => !!x);
    for (const lib of libs) {
      mkdirSync(path.join(root, path.dirname(lib)), { recursive: true });
      copyFileSync(lib, path.join(root, lib));
    }
    copyFileSync(APP, path.join(root, 'app/gateway-app.mjs'));
    execFileSync('sh', ['-c', `tar -C '${root}' -c . | docker import -c 'CMD ["/bin/sh"]' - '${tag}'`], {
      stdio: 'ignore',
    });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return tag;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

/** Opens a WebSocket, sends each message in turn and collects each answer; rejects if it fails. */
function wsExchange(url: string, messages: string[], headers?: Record<string, string>): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, headers ? { headers } : undefined);
    const got: string[] = [];
    const t = setTimeout(() => reject(new Error(`no WebSocket answers in 15 s (got ${got.length})`)), 15_000);
    ws.onopen = () => ws.send(messages[0]!);
    ws.onmessage = (e) => {
      got.push(String(e.data));
      if (got.length < messages.length) return ws.send(messages[got.length]!);
      clearTimeout(t);
      ws.close();
      resolve(got);
    };
    ws.onerror = () => {
      clearTimeout(t);
      reject(new Error('WebSocket failed'));
    };
  });
}

describe.skipIf(NO_DOCKER !== null)('the gateway to a Docker instance', () => {
  let dir: string;
  let stateDir: string;
  let serve: Proc & { url: string };
  let agent: Proc;
  let owner: { id: number; api_key: string };
  let other: { id: number; api_key: string };
  let id: number;
  let release: () => void = () => {};
  const gw = () => `${serve.url}/i/${id}/${APP_PORT}`;

  beforeAll(async () => {
    release = await lockDocker();
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-gateway-docker-'));
    stateDir = path.join(dir, 'agent-state');
    const image = buildNodeAppImage();
    serve = await startServe(['--data', dir, '--port', String(await freePort())], ENV);
    const host = await createUser(dir, ENV, 'gwd-host@example.com');
    owner = await createUser(dir, ENV, 'gwd-owner@example.com', ['--balance', '50']);
    other = await createUser(dir, ENV, 'gwd-other@example.com', ['--balance', '50']);
    agent = startProc(
      agentArgs(serve.url, stateDir, {
        runtime: 'docker',
        gpus: 'RTX 4090x1',
        extra: ['--public-host', '127.0.0.1'],
      }),
      { ...ENV, OPENRIG_LOG_LEVEL: 'info', OPENRIG_API_KEY: host.api_key },
    );
    await waitFor(() => {
      if (agent.child.exitCode !== null) throw new Error(`agent exited: ${agent.stderr()}`);
      return /heartbeat every/.test(agent.stdout());
    }, 'the agent to register');
    const api = (method: string, p: string, body?: unknown) =>
      callApi(serve.url, method, p, owner.api_key, body);
    expect((await api('POST', '/api/v0/ssh/', { ssh_key: ed25519KeyPair().public })).status).toBe(200);
    const offer = (await api('POST', '/api/v0/bundles/', { gpu_name: { eq: 'RTX 4090' } })).body.offers[0];
    const created = await api('PUT', `/api/v0/asks/${offer.id}/`, {
      client_id: 'me',
      image,
      disk: 5,
      onstart: `GATEWAY_APP_HOST=0.0.0.0 /usr/bin/node /app/gateway-app.mjs ${APP_PORT}`,
      runtype: 'ssh',
      portal: [{ name: 'app', port: APP_PORT }],
    });
    expect(created.body.success, JSON.stringify(created.body)).toBe(true);
    id = created.body.new_contract;
    await waitFor(
      async () => (await api('GET', `/api/v0/instances/${id}/`)).body.instances?.actual_status === 'running',
      () => `instance ${id} to run; agent said: ${agent.stdout().slice(-2000)}${agent.stderr().slice(-1000)}`,
      120_000,
      300,
    );
    // The app listens once its onstart has run: asked through the gateway, as nothing else reaches it.
    let last = '';
    await waitFor(
      async () => {
        const r = await fetch(`${gw()}/hello`, {
          headers: { authorization: `Bearer ${owner.api_key}` },
        }).catch((e: Error) => e);
        last = r instanceof Error ? r.message : `${r.status} ${await r.text()}`;
        return !(r instanceof Error) && r.status === 200;
      },
      () =>
        `the app inside the container (last answer: ${last}); container log: ${
          spawnSync('docker', ['logs', `openrig-${id}`], { encoding: 'utf8' }).stdout?.slice(-1000) ?? ''
        }; agent said: ${agent.stdout().slice(-1500)}`,
      60_000,
      500,
    );
  }, 300_000);

  afterAll(() => {
    agent?.child.kill('SIGKILL');
    serve?.child.kill('SIGTERM');
    removeAgentContainers(stateDir);
    release();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves the container port through the gateway only: the host does not publish it', () => {
    const ports = execFileSync('docker', ['port', `openrig-${id}`], { encoding: 'utf8' });
    expect(ports).not.toMatch(new RegExp(`^${APP_PORT}/tcp`, 'm'));
  });

  it("refuses the owner's port without the owner's key or signed link, and serves it with either", async () => {
    const anon = await fetch(`${gw()}/hello`);
    expect(anon.status).toBe(401);
    expect(((await anon.json()) as { error: string }).error).toBe('auth_required');
    const stranger = await fetch(`${gw()}/hello`, { headers: { authorization: `Bearer ${other.api_key}` } });
    expect(stranger.status).toBe(403);

    const own = await fetch(`${gw()}/hello`, { headers: { authorization: `Bearer ${owner.api_key}` } });
    expect(own.status).toBe(200);
    const body = (await own.json()) as { hello: string; port: number; authorization: string | null };
    expect(body).toMatchObject({ hello: 'from instance', port: APP_PORT, authorization: null });

    const link = await callApi(serve.url, 'POST', `/api/v0/instances/${id}/gateway-link/`, owner.api_key, {
      port: APP_PORT,
    });
    expect(link.status).toBe(200);
    const u = new URL(link.body.url as string);
    const first = await fetch(`${serve.url}${u.pathname}hello${u.search}`, { redirect: 'manual' });
    expect(first.status).toBe(303);
    const jar = first.headers.get('set-cookie')!.split(';')[0]!;
    const withCookie = await fetch(`${gw()}/hello`, { headers: { cookie: jar } });
    expect(withCookie.status).toBe(200);
    expect(((await withCookie.json()) as { cookie: string | null }).cookie).toBeNull();
    // The link is the owner's: another renter cannot have one made.
    const theirs = await callApi(serve.url, 'POST', `/api/v0/instances/${id}/gateway-link/`, other.api_key, {
      port: APP_PORT,
    });
    expect(theirs.status).toBe(404);
  }, 60_000);

  it('exchanges WebSocket messages with the owner, and refuses the upgrade to others', async () => {
    const link = await callApi(serve.url, 'POST', `/api/v0/instances/${id}/gateway-link/`, owner.api_key, {
      port: APP_PORT,
    });
    const token = new URL(link.body.url as string).searchParams.get('openrig_token')!;
    const ws = gw().replace(/^http/, 'ws');
    const messages = ['one', 'two', 'x'.repeat(300)];
    expect(await wsExchange(`${ws}/ws?openrig_token=${encodeURIComponent(token)}`, messages)).toEqual(
      messages.map((m) => `echo:${m}`),
    );
    expect(await wsExchange(`${ws}/ws`, ['by key'], { authorization: `Bearer ${owner.api_key}` })).toEqual([
      'echo:by key',
    ]);
    await expect(wsExchange(`${ws}/ws`, ['no credential'])).rejects.toThrow(/failed/);
    await expect(
      wsExchange(`${ws}/ws`, ['not yours'], { authorization: `Bearer ${other.api_key}` }),
    ).rejects.toThrow(/failed/);
  }, 60_000);

  it(
    `streams a response for ${STREAM_S} s with ${STREAM_EVERY_S} s silences, every line arriving when sent`,
    async () => {
      const t0 = Date.now();
      const r = await fetch(`${gw()}/stream?s=${STREAM_S}&every=${STREAM_EVERY_S}`, {
        headers: { authorization: `Bearer ${owner.api_key}` },
      });
      expect(r.status).toBe(200);
      const reader = r.body!.getReader();
      const dec = new TextDecoder();
      let pending = '';
      const lines: { line: string; at: number }[] = [];
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        pending += dec.decode(value, { stream: true });
        const parts = pending.split('\n');
        pending = parts.pop()!;
        for (const line of parts) lines.push({ line, at: (Date.now() - t0) / 1000 });
      }
      const took = (Date.now() - t0) / 1000;
      console.log(
        `gateway-docker: a ${STREAM_S} s stream (${STREAM_EVERY_S} s silences) took ${took.toFixed(1)} s: ${lines
          .map((l) => `${l.line}@${l.at.toFixed(1)}s`)
          .join(', ')}`,
      );
      expect(pending).toBe('');
      expect(lines.map((l) => l.line)).toEqual([
        'start',
        ...Array.from({ length: TICKS }, (_, i) => `tick ${(i + 1) * STREAM_EVERY_S}`),
        'done',
      ]);
      // Each line came when the app wrote it (not held back until the end or the next one).
      expect(lines[0]!.at).toBeLessThan(5);
      for (let i = 1; i <= TICKS; i++) {
        expect(lines[i]!.at).toBeGreaterThan(i * STREAM_EVERY_S - 2);
        expect(lines[i]!.at).toBeLessThan(i * STREAM_EVERY_S + 5);
      }
      expect(took).toBeGreaterThanOrEqual(STREAM_S - 1);
      // The tunnel still serves after the long stream.
      const after = await fetch(`${gw()}/hello`, { headers: { authorization: `Bearer ${owner.api_key}` } });
      expect(after.status).toBe(200);
    },
    (TICKS * STREAM_EVERY_S + 90) * 1000,
  );
});
