// Scheduled jobs with two `openrig serve` processes on one PostgreSQL schema: both look for due
// jobs at the same instants, and each due time is run once, by one of them (the database's
// conditional UPDATE decides), as the account that made the job.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTestDb, pgUnavailable, type TestDb } from '../helpers/db.js';
import { callApi, killGroup, runCli, startServe, waitFor, type Proc } from '../helpers/process.js';

const ENV = { OPENRIG_SECRET_KEY: 'c3'.repeat(32), OPENRIG_RATE_LIMITS: 'off' };
const pgSkip = await pgUnavailable();

describe.skipIf(pgSkip !== null)('scheduled jobs on two serve processes [postgres]', () => {
  let db: TestDb;
  const nodes: (Proc & { url: string })[] = [];
  beforeAll(async () => {
    db = await createTestDb('postgres');
    for (let i = 0; i < 2; i++) {
      const data = mkdtempSync(path.join(tmpdir(), 'openrig-sched-'));
      nodes.push(await startServe(['--data', data, '--database-url', db.url], ENV));
    }
  });
  afterAll(async () => {
    for (const n of nodes) {
      killGroup(n.child, 'SIGTERM');
      await n.exited;
    }
    await db?.cleanup();
  });

  it('runs each due time exactly once across both nodes', async () => {
    const made = await runCli(
      ['admin', 'create-user', '--database-url', db.url, '--email', 'sched@example.com'],
      ENV,
    );
    expect(made.code, made.stderr).toBe(0);
    const { api_key } = JSON.parse(made.stdout) as { api_key: string };
    const now = Date.now() / 1000;
    const job = await callApi(nodes[0]!.url, 'POST', '/api/v0/commands/schedule_job/', api_key, {
      start_time: now,
      end_time: now + 7 * 86_400,
      api_endpoint: '/api/v0/instances/reboot/987654/',
      request_method: 'PUT',
      request_body: { instance_id: 987654 },
      day_of_the_week: null,
      hour_of_the_day: null,
      frequency: 'HOURLY',
      instance_id: 987654,
    });
    expect(job.status, JSON.stringify(job.body)).toBe(200);
    const id = job.body.scheduled_job_id as number;
    const runs = () =>
      db.store.db
        .selectFrom('scheduled_job_runs')
        .selectAll()
        .where('job_id', '=', id)
        .orderBy('id')
        .execute();

    // Three due times, each made due in the past by hand (an hour is too long to wait for).
    const ROUNDS = 3;
    for (let round = 1; round <= ROUNDS; round++) {
      const due = Date.now() - round * 1000;
      await db.store.db
        .updateTable('scheduled_jobs')
        .set({ next_run_at: due })
        .where('id', '=', id)
        .execute();
      await waitFor(async () => (await runs()).length >= round, `run ${round}`, 20_000);
      const j = await db.store.db
        .selectFrom('scheduled_jobs')
        .select('next_run_at')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      expect(j.next_run_at).toBeGreaterThan(Date.now());
    }
    // A further pass of both nodes runs nothing more.
    await new Promise((r) => setTimeout(r, 6_000));
    const all = await runs();
    expect(all).toHaveLength(ROUNDS);
    expect(new Set(all.map((r) => r.due_at)).size).toBe(ROUNDS);
    for (const r of all) {
      // As the account: its own instance 987654 does not exist (not a 401 of no credential).
      expect(r.status_code, r.result ?? '').toBe(404);
      expect(r.finished_at).not.toBeNull();
      expect(r.token_hash).toBeNull();
      expect(r.runner).toMatch(/:\d+$/);
    }
    // The account sees the runs from either node.
    const shown = await callApi(nodes[1]!.url, 'GET', `/api/v0/commands/schedule_job/${id}/runs/`, api_key);
    expect(shown.status).toBe(200);
    expect(shown.body.runs).toHaveLength(ROUNDS);
  }, 90_000);
});
