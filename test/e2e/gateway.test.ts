// The HTTPS gateway to instance ports (docs/gateway.md), end to end: `serve` as a cluster of two
// workers (so a request often lands on a worker whose tunnel the agent must be asked for, and the
// agent's dial often lands on the other one first), a real `openrig agent` (process runtime) and
// an app inside the instance (test/fixtures/gateway-app.mjs) on two ports, one its owner's only
// and one public. Through `/i/ID/PORT/` the owner gets plain requests, a WebSocket echo and a
// streaming response that lasts STREAM_S seconds, which no gateway timeout cuts (none is set:
// the default); others are refused.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { WebSocket } from 'undici';
import { ed25519KeyPair } from '../../src/contract/ssh-keygen.js';
import { createTestDb, describeEachDb, type TestDb } from '../helpers/db.js';
import {
  callApi,
  createUser,
  endInstanceGroups,
  processAgentArgs,
  ROOT,
  startProc,
  startServe,
  waitFor,
  waitRegistered,
  type Proc,
} from '../helpers/process.js';

/**
 * How long the streamed response lasts, in seconds. 20 here so the suite stays quick; the
 * requirement is a 5-minute stream: run with GATEWAY_STREAM_S=300 to show it (the test's own
 * timeout follows).
 */
const STREAM_S = Number(process.env.GATEWAY_STREAM_S ?? 20);
/** Seconds between the stream's lines: gaps of silence a short idle timeout would cut. */
const STREAM_EVERY_S = 5;

const ENV = { OPENRIG_SECRET_KEY: 'd5'.repeat(32), OPENRIG_RATE_LIMITS: 'off', OPENRIG_LOG_LEVEL: 'warn' };

/** A reply's JSON body, as the app or the gateway wrote it. */

const json = (r: Response): Promise<any> => r.json();

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

function wsEcho(url: string, headers?: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, headers ? { headers } : undefined);
    const t = setTimeout(() => reject(new Error('no WebSocket answer in 10 s')), 10_000);
    ws.onopen = () => ws.send('ping through the gateway');
    ws.onmessage = (e) => {
      clearTimeout(t);
      ws.close();
      resolve(String(e.data));
    };
    ws.onerror = () => {
      clearTimeout(t);
      reject(new Error('WebSocket failed'));
    };
  });
}

describeEachDb('the gateway to instance ports', (dialect) => {
  let db: TestDb;
  let dir: string;
  let stateDir: string;
  let serve: Proc & { url: string };
  let agent: Proc;
  let owner: { id: number; api_key: string };
  let other: { id: number; api_key: string };
  let id: number;
  let privatePort: number;
  let publicPort: number;

  beforeAll(async () => {
    db = await createTestDb(dialect);
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-gateway-'));
    stateDir = path.join(dir, 'agent-state');
    const dbArgs = ['--database-url', db.url];
    serve = await startServe(['--data', db.dataDir, ...dbArgs, '--workers', '2'], ENV);
    const host = await createUser(db.dataDir, ENV, `gw-host-${dialect}@example.com`, dbArgs);
    owner = await createUser(db.dataDir, ENV, `gw-owner-${dialect}@example.com`, [
      ...dbArgs,
      '--balance',
      '50',
    ]);
    other = await createUser(db.dataDir, ENV, `gw-other-${dialect}@example.com`, [
      ...dbArgs,
      '--balance',
      '50',
    ]);
    agent = startProc(processAgentArgs(serve.url, stateDir, { gpus: 'RTX 4090x1' }), {
      ...ENV,
      OPENRIG_LOG_LEVEL: 'info',
      OPENRIG_API_KEY: host.api_key,
    });
    await waitRegistered(agent);
    privatePort = await freePort();
    publicPort = await freePort();
    const api = (method: string, p: string, body?: unknown) =>
      callApi(serve.url, method, p, owner.api_key, body);
    expect((await api('POST', '/api/v0/ssh/', { ssh_key: ed25519KeyPair().public })).status).toBe(200);
    const offer = (await api('POST', '/api/v0/bundles/', { gpu_name: { eq: 'RTX 4090' } })).body.offers[0];
    const app = path.join(ROOT, 'test/fixtures/gateway-app.mjs');
    const created = await api('PUT', `/api/v0/asks/${offer.id}/`, {
      client_id: 'me',
      image: 'ubuntu:22.04',
      disk: 5,
      onstart: `${process.execPath} ${app} ${privatePort} ${publicPort}`,
      runtype: 'ssh',
      portal: [
        { name: 'app', port: privatePort },
        { name: 'open', port: publicPort, public: true },
      ],
    });
    expect(created.body.success, JSON.stringify(created.body)).toBe(true);
    id = created.body.new_contract;
    await waitFor(
      async () => (await api('GET', `/api/v0/instances/${id}/`)).body.instances?.actual_status === 'running',
      () => `instance ${id} to run; agent said: ${agent.stdout().slice(-2000)}${agent.stderr().slice(-1000)}`,
      60_000,
      200,
    );
    // The app inside listens once its onstart has run.
    await waitFor(
      async () => (await fetch(`http://127.0.0.1:${publicPort}/`).catch(() => null))?.ok,
      'the app inside the instance',
      20_000,
    );
  }, 180_000);

  afterAll(async () => {
    agent?.child.kill('SIGKILL');
    serve?.child.kill('SIGTERM');
    if (stateDir) endInstanceGroups(stateDir);
    if (dir) rmSync(dir, { recursive: true, force: true });
    await db?.cleanup();
  });

  it('shows the served ports on the instance row', async () => {
    const r = await callApi(serve.url, 'GET', `/api/v0/instances/${id}/`, owner.api_key);
    expect(r.body.instances.portal).toEqual([
      { name: 'app', port: privatePort, public: false, keep_prefix: false, path: `/i/${id}/${privatePort}/` },
      { name: 'open', port: publicPort, public: true, keep_prefix: false, path: `/i/${id}/${publicPort}/` },
    ]);
  });

  it("refuses the owner's port without a credential and to another renter, and serves it to its owner", async () => {
    const url = `${serve.url}/i/${id}/${privatePort}/hello`;
    const anon = await fetch(url);
    expect(anon.status).toBe(401);
    expect((await json(anon)).error).toBe('auth_required');
    const stranger = await fetch(url, { headers: { authorization: `Bearer ${other.api_key}` } });
    expect(stranger.status).toBe(403);
    const bad = await fetch(url, { headers: { authorization: 'Bearer or_not-a-key' } });
    expect(bad.status).toBe(401);
    const own = await fetch(url, { headers: { authorization: `Bearer ${owner.api_key}` } });
    expect(own.status, await own.clone().text()).toBe(200);
    const body = await json(own);
    expect(body).toMatchObject({ hello: 'from instance', port: privatePort, url: '/hello' });
    // The app never sees openrig's credentials.
    expect(body.authorization).toBeNull();
    expect(body.prefix).toBe(`/i/${id}/${privatePort}`);
    // Another renter's signed link is no link to this instance: the owner's is asked for by the owner only.
    const theirs = await callApi(
      serve.url,
      'POST',
      `/api/v0/instances/${id}/gateway-link/`,
      other.api_key,
      {},
    );
    expect(theirs.status).toBe(404);
  }, 60_000);

  it('trades a signed link for a cookie scoped to the instance, which the app never sees', async () => {
    const link = await callApi(serve.url, 'POST', `/api/v0/instances/${id}/gateway-link/`, owner.api_key, {
      port: privatePort,
    });
    expect(link.status).toBe(200);
    const u = new URL(link.body.url);
    expect(u.pathname).toBe(`/i/${id}/${privatePort}/`);
    const first = await fetch(`${serve.url}${u.pathname}hello${u.search}&x=1`, { redirect: 'manual' });
    expect(first.status).toBe(303);
    expect(first.headers.get('location')).toBe(`/i/${id}/${privatePort}/hello?x=1`);
    const cookie = first.headers.get('set-cookie')!;
    expect(cookie).toMatch(new RegExp(`^openrig_gw=[^;]+; Path=/i/${id}/; .*HttpOnly; SameSite=Lax`));
    const jar = cookie.split(';')[0]!;
    const next = await fetch(`${serve.url}/i/${id}/${privatePort}/hello?x=1`, {
      headers: { cookie: `${jar}; app_cookie=kept` },
    });
    expect(next.status).toBe(200);
    expect((await json(next)).cookie).toBe('app_cookie=kept');
    // A forged or foreign token opens nothing.
    const forged = await fetch(
      `${serve.url}/i/${id}/${privatePort}/hello?openrig_token=${u.searchParams.get('openrig_token')!.slice(0, -3)}AAA`,
      {
        redirect: 'manual',
      },
    );
    expect(forged.status).toBe(403);
  }, 60_000);

  it('serves the public port to anyone, and a port not served to no one', async () => {
    const r = await fetch(`${serve.url}/i/${id}/${publicPort}/hello`);
    expect(r.status).toBe(200);
    expect((await json(r)).port).toBe(publicPort);
    // A redirect of the app at its root stays under the instance's path.
    const redirected = await fetch(`${serve.url}/i/${id}/${publicPort}/redirect`, { redirect: 'manual' });
    expect(redirected.headers.get('location')).toBe(`/i/${id}/${publicPort}/hello`);
    expect((await fetch(`${serve.url}/i/${id}/1/`)).status).toBe(404);
    expect((await fetch(`${serve.url}/i/999999/${publicPort}/`)).status).toBe(404);
  }, 60_000);

  it('passes WebSockets through, for the owner only', async () => {
    const link = await callApi(serve.url, 'POST', `/api/v0/instances/${id}/gateway-link/`, owner.api_key, {
      port: privatePort,
    });
    const token = new URL(link.body.url).searchParams.get('openrig_token')!;
    const ws = serve.url.replace(/^http/, 'ws');
    expect(await wsEcho(`${ws}/i/${id}/${privatePort}/ws?openrig_token=${encodeURIComponent(token)}`)).toBe(
      'echo:ping through the gateway',
    );
    expect(await wsEcho(`${ws}/i/${id}/${publicPort}/ws`)).toBe('echo:ping through the gateway');
    await expect(wsEcho(`${ws}/i/${id}/${privatePort}/ws`)).rejects.toThrow(/failed/);
  }, 60_000);

  it(
    `streams a response that lasts ${STREAM_S} s, with ${STREAM_EVERY_S} s silences, uncut`,
    async () => {
      const t0 = Date.now();
      const r = await fetch(
        `${serve.url}/i/${id}/${privatePort}/stream?s=${STREAM_S}&every=${STREAM_EVERY_S}`,
        {
          headers: { authorization: `Bearer ${owner.api_key}` },
        },
      );
      expect(r.status).toBe(200);
      const reader = r.body!.getReader();
      const dec = new TextDecoder();
      let text = '';
      let firstAt = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += dec.decode(value);
        // Streamed as it comes: the first line arrives long before the end.
        if (firstAt === 0) firstAt = Date.now() - t0;
      }
      const took = (Date.now() - t0) / 1000;
      expect(firstAt).toBeLessThan(STREAM_EVERY_S * 1000);
      expect(text.trim().split('\n').at(-1)).toBe('done');
      expect(text.match(/^tick /gm)?.length).toBe(Math.floor(STREAM_S / STREAM_EVERY_S));
      expect(took).toBeGreaterThanOrEqual(STREAM_S - 1);
    },
    (STREAM_S + 60) * 1000,
  );
});
