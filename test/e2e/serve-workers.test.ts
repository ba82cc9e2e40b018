// `openrig serve --workers 2` as real processes, on both databases: two workers share the port
// and both serve; the background jobs run once, in the primary, and a worker's commit that
// enqueued mail wakes them over IPC; /metrics counts every worker's requests; SIGTERM drains
// every worker and exits 0 with none left behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTestDb, describeEachDb, type TestDb } from '../helpers/db.js';
import { runCli, startServe, waitFor } from '../helpers/process.js';

const SECRET = { OPENRIG_SECRET_KEY: 'b2'.repeat(32) };

/** The pids of a process's children (/proc). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
      if (ppid === pid) out.push(Number(d));
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

const alive = (pid: number) => existsSync(`/proc/${pid}`);

describeEachDb('serve --workers 2', (dialect) => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb(dialect);
  });
  afterAll(async () => db?.cleanup());

  it('serves from both workers, runs the jobs once in the primary, and drains all on SIGTERM', async () => {
    const outbox = path.join(db.dataDir, 'workers-outbox.jsonl');
    const env = {
      ...SECRET,
      OPENRIG_LOG_LEVEL: 'info',
      OPENRIG_MAIL_OUTBOX: outbox,
      SMTP_URL: '',
      // The relay runs on its timer once an hour: only a worker's kick can deliver in time.
      OPENRIG_MAIL_RELAY_INTERVAL_MS: '3600000',
      OPENRIG_RATE_LIMITS: 'off',
      OPENRIG_METRICS_TOKEN: 'workers-metrics-token',
    };
    const dbArgs = ['--data', db.dataDir, '--database-url', db.url];
    const s = await startServe([...dbArgs, '--workers', '2'], env);
    expect(s.stdout()).toMatch(/openrig listening on http:\/\/\S+ \(2 workers\)/);
    const primary = s.child.pid!;
    const workers = childrenOf(primary);
    expect(workers).toHaveLength(2);

    const host = JSON.parse(
      (
        await runCli(
          ['admin', 'create-user', '--database-url', db.url, '--email', `h-${dialect}@example.com`],
          env,
        )
      ).stdout,
    ) as { id: number; api_key: string };
    const made = await runCli(
      [
        'admin',
        'create-machines',
        '--database-url',
        db.url,
        '--owner-email',
        `h-${dialect}@example.com`,
        '--gpu-name',
        'RTX 4090',
        '--num-gpus',
        '1',
        '--count',
        '2',
      ],
      env,
    );
    const { machine_ids } = JSON.parse(made.stdout) as { machine_ids: number[] };

    // Many connections at once: the primary hands them to both workers.
    const N = 400;
    const replies = await Promise.all(
      Array.from({ length: N }, () =>
        fetch(`${s.url}/api/v0/users/current`, {
          headers: { authorization: `Bearer ${host.api_key}`, connection: 'close' },
        }).then((r) => r.status),
      ),
    );
    expect(replies.every((st) => st === 200)).toBe(true);

    // A maintenance batch commits the host's e-mail in a worker; the primary's relay sends it.
    const batch = await fetch(`${s.url}/api/v0/machines/maintenances/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${host.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        machine_ids,
        sdate: Math.floor(Date.now() / 1000) + 86_400,
        duration: 2,
        maintenance_category: 'power',
      }),
    });
    expect(batch.status).toBe(200);
    await waitFor(
      () => existsSync(outbox) && readFileSync(outbox, 'utf8').trim() !== '',
      'the e-mail',
      10_000,
    );

    // /metrics, whichever worker answers it, counts the requests of both.
    const metrics = await (
      await fetch(`${s.url}/metrics`, { headers: { authorization: 'Bearer workers-metrics-token' } })
    ).text();
    const counted =
      /openrig_http_requests_total\{method="GET",route="\/api\/v0\/users\/current",status="200"\} (\d+)/.exec(
        metrics,
      );
    expect(Number(counted?.[1])).toBe(N);

    s.child.kill('SIGTERM');
    expect((await s.exited).code).toBe(0);
    await waitFor(() => workers.every((w) => !alive(w)), 'the workers to exit', 5000);

    const lines = s
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { pid: number; msg: string; route?: string });
    // The jobs started once, in the primary; the workers answered every request, both of them.
    const jobs = lines.filter((l) => l.msg === 'background jobs started');
    expect(jobs.map((l) => l.pid)).toEqual([primary]);
    const servedBy = new Set(lines.filter((l) => l.route === '/api/v0/users/current').map((l) => l.pid));
    expect([...servedBy].sort()).toEqual([...workers].sort());
    // Delivered once: one host e-mail in the outbox file.
    const mails = readFileSync(outbox, 'utf8').trim().split('\n');
    expect(mails).toHaveLength(1);
    // Each worker and the primary shut down on the signal.
    expect(new Set(lines.filter((l) => l.msg === 'shutting down').map((l) => l.pid))).toEqual(
      new Set([primary, ...workers]),
    );
  });
});

describe('serve --workers 2 with a bad configuration', () => {
  it('refuses it once, before forking any worker, and exits 1', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'openrig-workers-bad-'));
    try {
      const r = await runCli(['serve', '--workers', '2', '--data', dir], {
        ...SECRET,
        OPENRIG_LOG_FLUSH_MS: '600000',
      });
      expect(r.code).toBe(1);
      // The workers are forked only once the configuration is known good: one message, not three.
      expect(r.stderr.match(/OPENRIG_LOG_FLUSH_MS/g)).toHaveLength(1);
      expect(r.stdout).not.toContain('listening');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
