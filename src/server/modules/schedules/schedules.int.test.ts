// Scheduled jobs: create, show, replace, delete; each refusal writing nothing; each due time run
// once (the database decides between runners), as the account with the permissions its key or
// session has at run time; each run's result recorded and shown.
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { describeEachDb } from '../../../../test/helpers/db.js';
import { useTestApp, type TestApp } from '../../../../test/helpers/app.js';
import { offers, renter, runningInstance } from '../../../../test/helpers/market.js';
import { createSession, PASSWORD_LOGIN } from '../accounts/accounts.sessions.js';
import { runDueJobs, type Inject } from './schedules.runner.js';

const P = '/api/v0/commands/schedule_job/';
const HOUR = 3_600_000;

const injectOf =
  (t: TestApp): Inject =>
  async (r) => {
    const res = await t.app.inject({
      method: r.method as 'PUT',
      url: r.url,
      headers: r.headers,
      payload: r.payload,
    });
    return { statusCode: res.statusCode, body: res.body };
  };

/** A reboot job of `instance`, every hour for a week from now, as the CLI sends it. */
const rebootJob = (t: TestApp, instance: number, over: Record<string, unknown> = {}) => ({
  start_time: t.clock.now() / 1000,
  end_time: t.clock.now() / 1000 + 7 * 24 * 3600,
  api_endpoint: `/api/v0/instances/reboot/${instance}/`,
  request_method: 'PUT',
  request_body: { instance_id: instance },
  day_of_the_week: null,
  hour_of_the_day: null,
  frequency: 'HOURLY',
  instance_id: instance,
  ...over,
});

async function jobRows(t: TestApp, userId: number) {
  return t.deps.db.selectFrom('scheduled_jobs').selectAll().where('user_id', '=', userId).execute();
}
async function runRows(t: TestApp, jobId: number) {
  return t.deps.db
    .selectFrom('scheduled_job_runs')
    .selectAll()
    .where('job_id', '=', jobId)
    .orderBy('id')
    .execute();
}

/** Moves the clock to the job's next due time. */
async function toDue(t: TestApp, jobId: number): Promise<number> {
  const j = await t.deps.db
    .selectFrom('scheduled_jobs')
    .select('next_run_at')
    .where('id', '=', jobId)
    .executeTakeFirstOrThrow();
  expect(j.next_run_at).not.toBeNull();
  if (t.clock.now() < j.next_run_at!) t.clock.set(j.next_run_at!);
  return j.next_run_at!;
}

describeEachDb('scheduled jobs', (dialect) => {
  const t = useTestApp(dialect);
  const call = (method: string, key: string | null, path = P, body?: unknown) =>
    t().request(method, path, { key, body });

  describe('create, show, replace, delete', () => {
    let u: { id: number; apiKey: string };
    let inst: number;
    beforeAll(async () => {
      u = await renter(t());
      const [m] = await offers(t(), 1);
      inst = await runningInstance(t(), u.apiKey, m!);
    });

    it('creates a job and shows it as the CLI reads it', async () => {
      const r = await call('POST', u.apiKey, P, rebootJob(t(), inst));
      expect(r.status, r.raw).toBe(200);
      expect(r.body.success).toBe(true);
      const id = r.body.scheduled_job_id as number;
      const list = await call('GET', u.apiKey);
      expect(list.status).toBe(200);
      expect(list.body).toHaveLength(1);
      const j = list.body[0];
      expect(j).toMatchObject({
        id,
        instance_id: inst,
        api_endpoint: `/api/v0/instances/reboot/${inst}/`,
        request_method: 'PUT',
        request_body: {},
        day_of_the_week: null,
        hour_of_the_day: null,
        min_of_the_hour: 0,
        frequency: 'HOURLY',
        stopped: null,
        last_run: null,
      });
      // The next whole hour from now.
      expect(j.next_run_time * 1000).toBe(Math.ceil(t().clock.now() / HOUR) * HOUR);
      expect(j.start_time).toBeCloseTo(t().clock.now() / 1000, 0);
    });

    it('a second job for the same command and instance is a 422 naming the first; PUT replaces it', async () => {
      const [first] = await jobRows(t(), u.id);
      const again = await call(
        'POST',
        u.apiKey,
        P,
        rebootJob(t(), inst, { frequency: 'DAILY', hour_of_the_day: 16 }),
      );
      expect(again.status, again.raw).toBe(422);
      expect(again.body.scheduled_job_id).toBe(first!.id);
      expect(again.body.msg).toContain(`${first!.id}`);
      expect(await jobRows(t(), u.id)).toEqual([first]);
      const put = await call(
        'PUT',
        u.apiKey,
        `${P}${first!.id}/`,
        rebootJob(t(), inst, { frequency: 'DAILY', hour_of_the_day: 16 }),
      );
      expect(put.status, put.raw).toBe(200);
      const [after] = await jobRows(t(), u.id);
      expect(after).toMatchObject({
        id: first!.id,
        frequency: 'DAILY',
        hour_of_the_day: 16,
        day_of_the_week: null,
      });
      expect(new Date(after!.next_run_at!).getUTCHours()).toBe(16);
    });

    it('two creates of one job at once: one is made, the other answers 422 with its id', async () => {
      const other = await renter(t());
      const [m] = await offers(t(), 1);
      const i = await runningInstance(t(), other.apiKey, m!);
      const body = {
        ...rebootJob(t(), i),
        api_endpoint: `/api/v0/instances/command/${i}/`,
        request_body: { command: 'ls', instance_id: i },
      };
      const rs = await Promise.all(Array.from({ length: 6 }, () => call('POST', other.apiKey, P, body)));
      const ok = rs.filter((r) => r.status === 200);
      expect(ok).toHaveLength(1);
      const id = ok[0]!.body.scheduled_job_id as number;
      for (const r of rs.filter((x) => x.status !== 200)) {
        expect(r.status, r.raw).toBe(422);
        expect(r.body.scheduled_job_id).toBe(id);
      }
      expect(await jobRows(t(), other.id)).toHaveLength(1);
    });

    it("another account's job is a 404 to change or delete, and stays", async () => {
      const [mine] = await jobRows(t(), u.id);
      const stranger = await t().user();
      expect((await call('DELETE', stranger.apiKey, `${P}${mine!.id}/`)).status).toBe(404);
      expect((await call('PUT', stranger.apiKey, `${P}${mine!.id}/`, rebootJob(t(), inst))).status).toBe(404);
      expect((await call('GET', stranger.apiKey, `${P}${mine!.id}/runs/`)).status).toBe(404);
      expect((await call('GET', stranger.apiKey)).body).toEqual([]);
      expect(await jobRows(t(), u.id)).toEqual([mine]);
    });

    it('deletes a job', async () => {
      const [mine] = await jobRows(t(), u.id);
      const r = await call('DELETE', u.apiKey, `${P}${mine!.id}/`);
      expect(r.status, r.raw).toBe(200);
      expect(r.body.success).toBe(true);
      expect(await jobRows(t(), u.id)).toEqual([]);
      expect((await call('DELETE', u.apiKey, `${P}${mine!.id}/`)).status).toBe(404);
    });

    it('a key without write access to instances cannot schedule; no key is a 401', async () => {
      const ro = await t().request('POST', '/api/v0/auth/apikeys/', {
        key: u.apiKey,
        body: { name: 'ro', permissions: 'read_only' },
      });
      const r = await call('POST', ro.body.key as string, P, rebootJob(t(), inst));
      expect(r.status).toBe(403);
      expect((await call('POST', null, P, rebootJob(t(), inst))).status).toBe(401);
      expect(await jobRows(t(), u.id)).toEqual([]);
    });
  });

  describe('refusals write nothing', () => {
    it.each([
      [
        { api_endpoint: '/api/v0/commands/rclone/', request_method: 'POST' },
        'cloud copy cannot be scheduled',
      ],
      [{ api_endpoint: '/api/v0/instances/7/' }, 'cannot be scheduled'],
      [{ api_endpoint: '/api/v0/auth/apikeys/' }, 'cannot be scheduled'],
      [{ request_method: 'DELETE' }, 'request_method must be PUT'],
      [{ frequency: 'HOURLY', hour_of_the_day: 3 }, 'For HOURLY jobs'],
      [{ frequency: 'DAILY', hour_of_the_day: null }, 'For DAILY jobs'],
      [{ frequency: 'DAILY', day_of_the_week: 2, hour_of_the_day: 3 }, 'For DAILY jobs'],
      [{ frequency: 'WEEKLY', day_of_the_week: null, hour_of_the_day: 3 }, 'For WEEKLY jobs'],
      [{ frequency: 'MONTHLY' }, 'frequency'],
      [{ frequency: 'WEEKLY', day_of_the_week: 7, hour_of_the_day: 3 }, 'day_of_the_week'],
      [{ frequency: 'DAILY', hour_of_the_day: 24 }, 'hour_of_the_day'],
      [{ end_time: 1 }, 'end_time must be later than start_time'],
      [{ instance_id: 999 }, 'instance_id 999 is not the instance'],
      [{ start_time: 'soon' }, 'start_time'],
    ])('%j: 400 (%s)', async (over, words) => {
      const u = await t().user();
      const body = { ...rebootJob(t(), 5), ...over };
      const r = await call('POST', u.apiKey, P, body);
      expect(r.status, r.raw).toBe(400);
      expect(r.body.msg).toContain(words);
      expect(await jobRows(t(), u.id)).toEqual([]);
    });

    it('execute without a command, and a window with no due time, are 400s', async () => {
      const u = await t().user();
      const exec = { ...rebootJob(t(), 5), api_endpoint: '/api/v0/instances/command/5/', request_body: {} };
      expect((await call('POST', u.apiKey, P, exec)).body.msg).toContain('request_body.command');
      const now = t().clock.now() / 1000;
      const short = rebootJob(t(), 5, {
        frequency: 'WEEKLY',
        day_of_the_week: 0,
        hour_of_the_day: 0,
        start_time: now,
        end_time: now + 60,
      });
      const r = await call('POST', u.apiKey, P, short);
      // A minute from now holds no weekly due time unless it is that very minute.
      if (r.status !== 200) expect(r.body.msg).toContain('No due time');
      expect(await jobRows(t(), u.id)).toHaveLength(r.status === 200 ? 1 : 0);
    });
  });

  describe('runs', () => {
    // Each test counts the runs of its own jobs alone.
    beforeEach(async () => {
      await t().deps.db.deleteFrom('scheduled_jobs').execute();
    });

    it('runs each due time once, as the account, and records and shows the result', async () => {
      const u = await renter(t());
      const [m] = await offers(t(), 1);
      const inst = await runningInstance(t(), u.apiKey, m!);
      const c = await call('POST', u.apiKey, P, rebootJob(t(), inst));
      const id = c.body.scheduled_job_id as number;
      const inject = injectOf(t());
      // Nothing is due yet.
      expect(await runDueJobs(t().deps, inject, 'a')).toBe(0);
      const due = await toDue(t(), id);
      expect(await runDueJobs(t().deps, inject, 'a')).toBe(1);
      expect(await runDueJobs(t().deps, inject, 'b')).toBe(0);
      const runs = await runRows(t(), id);
      expect(runs).toHaveLength(1);
      expect(runs[0]).toMatchObject({ due_at: due, status_code: 200, token_hash: null, runner: 'a' });
      expect(JSON.parse(runs[0]!.result!)).toMatchObject({ success: true });
      // The reboot reached the instance: its request is queued for the host.
      const reqs = await t()
        .deps.db.selectFrom('instance_requests')
        .selectAll()
        .where('instance_id', '=', inst)
        .execute();
      expect(reqs.map((r) => r.kind)).toContain('reboot');
      const [job] = await jobRows(t(), u.id);
      expect(job!.next_run_at).toBe(due + HOUR);
      // Shown: the last run in the list, every run under /runs/.
      const list = await call('GET', u.apiKey);
      expect(list.body[0].last_run).toMatchObject({ due_time: due / 1000, status_code: 200, ok: true });
      const shown = await call('GET', u.apiKey, `${P}${id}/runs/`);
      expect(shown.status, shown.raw).toBe(200);
      expect(shown.body.runs).toHaveLength(1);
      // The next due time runs once more; due times missed meanwhile are skipped, not caught up.
      t().clock.advance(5 * HOUR + 60_000);
      expect(await runDueJobs(t().deps, inject, 'a')).toBe(1);
      expect(await runRows(t(), id)).toHaveLength(2);
      expect((await jobRows(t(), u.id))[0]!.next_run_at).toBe(due + 6 * HOUR);
    });

    it('runners racing for one due time: exactly one runs it', async () => {
      const u = await renter(t());
      const [m] = await offers(t(), 1);
      const inst = await runningInstance(t(), u.apiKey, m!);
      const id = (await call('POST', u.apiKey, P, rebootJob(t(), inst))).body.scheduled_job_id as number;
      await toDue(t(), id);
      const inject = injectOf(t());
      const ran = await Promise.all(
        Array.from({ length: 8 }, (_, i) => runDueJobs(t().deps, inject, `r${i}`)),
      );
      expect(ran.reduce((a, b) => a + b, 0)).toBe(1);
      expect(await runRows(t(), id)).toHaveLength(1);
    });

    it('a revoked key stops its jobs: the run is refused (401) and nothing more runs', async () => {
      const u = await renter(t());
      const [m] = await offers(t(), 1);
      const inst = await runningInstance(t(), u.apiKey, m!);
      const k = await t().request('POST', '/api/v0/auth/apikeys/', {
        key: u.apiKey,
        body: { name: 'sched' },
      });
      const id = (await call('POST', k.body.key, P, rebootJob(t(), inst))).body.scheduled_job_id as number;
      expect((await call('DELETE', u.apiKey, `/api/v0/auth/apikeys/${k.body.id}/`)).status).toBe(200);
      await toDue(t(), id);
      expect(await runDueJobs(t().deps, injectOf(t()), 'a')).toBe(1);
      const [run] = await runRows(t(), id);
      expect(run!.status_code).toBe(401);
      const [job] = await jobRows(t(), u.id);
      expect(job!.next_run_at).toBeNull();
      expect(job!.stopped).toContain('revoked');
      const reqs = await t()
        .deps.db.selectFrom('instance_requests')
        .selectAll()
        .where('instance_id', '=', inst)
        .execute();
      expect(reqs).toEqual([]);
      const list = await call('GET', u.apiKey);
      expect(list.body[0]).toMatchObject({ next_run_time: null, last_run: { status_code: 401, ok: false } });
      t().clock.advance(2 * HOUR);
      expect(await runDueJobs(t().deps, injectOf(t()), 'a')).toBe(0);
    });

    it('a permission removed at run time stops the job (403)', async () => {
      const u = await renter(t());
      const [m] = await offers(t(), 1);
      const inst = await runningInstance(t(), u.apiKey, m!);
      const k = await t().request('POST', '/api/v0/auth/apikeys/', {
        key: u.apiKey,
        body: { name: 'sched', permissions: { instances: 'write' } },
      });
      const id = (await call('POST', k.body.key, P, rebootJob(t(), inst))).body.scheduled_job_id as number;
      await t()
        .deps.db.updateTable('api_keys')
        .set({ permissions: JSON.stringify({ instances: 'read' }) })
        .where('id', '=', k.body.id)
        .execute();
      await toDue(t(), id);
      expect(await runDueJobs(t().deps, injectOf(t()), 'a')).toBe(1);
      const [run] = await runRows(t(), id);
      expect(run!.status_code).toBe(403);
      const [job] = await jobRows(t(), u.id);
      expect(job).toMatchObject({ next_run_at: null });
      expect(job!.stopped).toContain('lacks write permission on instances');
    });

    it("a job made by a session runs with it, and stops once it is revoked; another user's instance is a 404", async () => {
      const u = await renter(t());
      const [m1, m2] = await offers(t(), 2);
      const inst = await runningInstance(t(), u.apiKey, m1!);
      const other = await renter(t());
      const theirs = await runningInstance(t(), other.apiKey, m2!);
      const s = await createSession(t().deps.db, {
        userId: u.id,
        teamId: null,
        kind: 'cli',
        isAdmin: false,
        now: t().clock.now(),
        ttlS: 30 * 24 * 3600,
        origin: PASSWORD_LOGIN,
      });
      const id = (await call('POST', s.token, P, rebootJob(t(), inst))).body.scheduled_job_id as number;
      const id2 = (await call('POST', s.token, P, rebootJob(t(), theirs))).body.scheduled_job_id as number;
      expect((await jobRows(t(), u.id)).map((j) => [j.session_id, j.api_key_id])).toEqual([
        [s.id, null],
        [s.id, null],
      ]);
      await toDue(t(), id);
      expect(await runDueJobs(t().deps, injectOf(t()), 'a')).toBe(2);
      expect((await runRows(t(), id))[0]!.status_code).toBe(200);
      // Acting as the account: the other account's instance is not found, and the job goes on.
      expect((await runRows(t(), id2))[0]!.status_code).toBe(404);
      expect((await jobRows(t(), u.id)).every((j) => j.next_run_at !== null)).toBe(true);
      await t()
        .deps.db.updateTable('sessions')
        .set({ revoked_at: t().clock.now() })
        .where('id', '=', s.id)
        .execute();
      await toDue(t(), id);
      expect(await runDueJobs(t().deps, injectOf(t()), 'a')).toBe(2);
      expect((await runRows(t(), id))[1]!.status_code).toBe(401);
      expect((await jobRows(t(), u.id)).every((j) => j.next_run_at === null)).toBe(true);
      const theirReqs = await t()
        .deps.db.selectFrom('instance_requests')
        .selectAll()
        .where('instance_id', '=', theirs)
        .execute();
      expect(theirReqs).toEqual([]);
    });

    it("a run's credential works only while that run runs", async () => {
      const u = await t().user();
      // A credential of the right form that no run holds is an unknown key.
      const r = await call('GET', 'orj_' + 'A'.repeat(43), P);
      expect(r.status).toBe(401);
      void u;
    });
  });
});
