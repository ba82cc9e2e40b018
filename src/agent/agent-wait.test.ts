// The agent's long poll against a server on 127.0.0.1: with a server whose registration says
// `long_polls`, the agent holds a wait after its first sync and syncs at once when it answers
// `wake` (its next wait carries the highest request id it was handed); with an older server it
// never calls wait and syncs on its heartbeat only.
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Agent } from './daemon.js';
import { StillRuntime } from '../../test/helpers/fake-runtime.js';

interface Fake {
  url: string;
  syncs: number;
  waits: { after_request_id?: number; timeout_s?: number }[];
  /** Answers the held wait. */
  wake(): void;
  close(): Promise<void>;
}

async function fakeServer(longPolls: boolean): Promise<Fake> {
  let held: http.ServerResponse | null = null;
  const json = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const f: Fake = {
    url: '',
    syncs: 0,
    waits: [],
    wake: () => {
      if (held) json(held, 200, { success: true, wake: true });
      held = null;
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const body = raw ? JSON.parse(raw) : {};
      if (req.url?.endsWith('/register'))
        return json(res, 200, {
          success: true,
          machines: [{ slot: 0, machine_id: 5 }],
          heartbeat_s: 10,
          unknown_after_s: 60,
          offline_after_s: 300,
          ...(longPolls ? { long_polls: true } : {}),
        });
      if (req.url?.endsWith('/sync')) {
        f.syncs++;
        return json(res, 200, {
          success: true,
          heartbeat_s: 10,
          unknown_machine_ids: [],
          instances: [],
          requests: f.syncs === 2 ? [{ id: 41, instance_id: 9, kind: 'logs' }] : [],
          server_time: Date.now() / 1000,
        });
      }
      if (req.url?.endsWith('/wait') && longPolls) {
        f.waits.push(body);
        held = res;
        return;
      }
      if (req.url?.endsWith('/results')) return json(res, 200, { success: true, accepted: 1 });
      json(res, 404, { error: 'not_found', msg: 'no such route' });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  f.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return f;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function startAgent(fake: Fake): Promise<{ agent: Agent; lines: string[] }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'openrig-agent-wait-'));
  const lines: string[] = [];
  const log = {
    info: (m: string) => lines.push(m),
    warn: (m: string) => lines.push(m),
    error: (m: string) => lines.push(m),
  };
  const agent = new Agent({
    server: fake.url,
    apiKey: 'k',
    stateDir: dir,
    machines: [
      {
        slot: 0,
        hostname: 'h',
        gpu_name: 'RTX 4090',
        num_gpus: 1,
        gpu_ram: 24564,
        cpu_name: 'cpu',
        cpu_cores: 4,
        cpu_ghz: 3,
        cpu_ram: 16000,
        disk_space: 100,
        driver_version: '',
        cuda_max_good: 12,
        dlperf: 1,
      },
    ],
    runtime: new StillRuntime(),
    version: 't',
    log,
  });
  await agent.start();
  cleanups.push(async () => {
    await agent.shutdown({ notify: false });
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { agent, lines };
}

const until = async (cond: () => boolean, ms = 3000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('the agent woken by the server', () => {
  it('holds a wait after its first sync and syncs at once when woken, long before its heartbeat', async () => {
    const fake = await fakeServer(true);
    await startAgent(fake);
    await until(() => fake.syncs >= 1 && fake.waits.length >= 1);
    expect(fake.waits[0]).toMatchObject({ after_request_id: 0, timeout_s: 25 });
    const t0 = Date.now();
    fake.wake();
    // (A third sync may follow at once, the one after posting the request's result.)
    await until(() => fake.syncs >= 2 && fake.waits.length >= 2);
    expect(Date.now() - t0).toBeLessThan(1000); // the heartbeat is 10 s
    // The sync handed it request 41: its next wait says so, and the server holds it.
    expect(fake.waits[1]).toMatchObject({ after_request_id: 41 });
    // Held, not made again and again: one more sync at most (the one after posting the result).
    await new Promise((r) => setTimeout(r, 300));
    expect(fake.waits).toHaveLength(2);
    expect(fake.syncs).toBeLessThanOrEqual(3);
  });

  it('never calls wait on a server whose registration does not offer it, and syncs on its heartbeat', async () => {
    const fake = await fakeServer(false);
    const { lines } = await startAgent(fake);
    await until(() => fake.syncs === 1);
    await new Promise((r) => setTimeout(r, 400));
    expect(fake.waits).toHaveLength(0);
    expect(fake.syncs).toBe(1);
    expect(lines.join('\n')).not.toMatch(/wake-ups/);
  });
});
