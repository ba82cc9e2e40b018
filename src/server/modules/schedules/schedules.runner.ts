// The runner of scheduled jobs: in every process that serves HTTP, a pass at each multiple of
// POLL_MS (the same instant in every process) sends each due job's request once. Which process
// runs a due time is decided by the database (schedules.repo.ts claimDue: a conditional UPDATE of
// next_run_at from the due time read to the next), so with several `serve` processes on one
// database each due time runs exactly once; a process that dies in the middle of a run leaves
// that run unfinished (shown so) and never repeats it.
//
// The request goes through the application itself (Fastify's inject): the same routes, schemas,
// authentication and permission checks as the account's own call, with a one-time credential that
// stands for the key or session that made the job (schedules.credential.ts). A 401 (that key or
// session revoked or expired) or a 403 (a permission removed) stops the job.
import { hostname } from 'node:os';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { tx } from '../../db/connection.js';
import { newToken, sha256Hex } from '../../crypto.js';
import { SCHEDULED_RUN_PREFIX } from './schedules.credential.js';
import { nextRun } from './schedules.times.js';
import * as repo from './schedules.repo.js';

/** How often each process looks for due jobs: a run starts at most this long after its due time. */
export const POLL_MS = 5_000;
/** Due jobs taken per pass (the rest are the next pass's). */
const BATCH = 100;
/** A run's reply is kept up to this many characters. */
const RESULT_CHARS = 2000;

/** Sends a request through the application: what Fastify's inject takes and answers, in short. */
export type Inject = (req: {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload: string;
}) => Promise<{ statusCode: number; body: string }>;

/** Claims the job's due time for this process: the run's id and credential, or null (another won). */
async function claim(deps: Deps, job: repo.JobRow, now: number, runner: string) {
  const due = job.next_run_at!;
  const next = nextRun(job, due, now, job.end_at);
  return tx(deps.store, async (trx) => {
    if (!(await repo.claimDue(trx, job.id, due, next))) return null;
    const token = newToken(SCHEDULED_RUN_PREFIX);
    const runId = await repo.insertRun(trx, {
      job_id: job.id,
      due_at: due,
      token_hash: sha256Hex(token),
      runner,
      started_at: now,
    });
    return { runId, token };
  });
}

/** Why a job stops after a run that answered `status`; null when it goes on. */
function stopReason(status: number | null, body: string): string | null {
  if (status === 401) return 'The API key or session that made this job was revoked or has expired';
  if (status === 403) {
    let msg = '';
    try {
      const m = (JSON.parse(body) as { msg?: unknown }).msg;
      if (typeof m === 'string') msg = m;
    } catch {
      /* not JSON */
    }
    return `The credential that made this job lost the permission to run it${msg ? `: ${msg}` : ''}`;
  }
  return null;
}

async function dispatch(deps: Deps, inject: Inject, job: repo.JobRow, run: { runId: number; token: string }) {
  let status: number | null = null;
  let body = '';
  try {
    const res = await inject({
      method: job.request_method,
      url: job.api_endpoint,
      headers: { authorization: `Bearer ${run.token}`, 'content-type': 'application/json' },
      payload: job.request_body,
    });
    status = res.statusCode;
    body = res.body;
  } catch (err) {
    body = `The request could not be sent: ${err instanceof Error ? err.message : String(err)}`;
  }
  const now = deps.clock.now();
  await repo.finishRun(deps.db, run.runId, {
    finished_at: now,
    status_code: status,
    result: body.slice(0, RESULT_CHARS),
  });
  const why = stopReason(status, body);
  if (why) await repo.stopJob(deps.db, job.id, why, now);
}

/** One pass: every job due now that this process wins is run; how many it ran. */
export async function runDueJobs(deps: Deps, inject: Inject, runner: string): Promise<number> {
  const now = deps.clock.now();
  let ran = 0;
  for (const job of await repo.dueJobs(deps.db, now, BATCH)) {
    const run = await claim(deps, job, now, runner);
    if (!run) continue;
    await dispatch(deps, inject, job, run);
    ran++;
  }
  return ran;
}

/** The runner of this process, sending through `app`; stop() (which waits for a pass in progress) before the app closes. */
export function startScheduleRunner(
  deps: Deps,
  app: FastifyInstance,
): { name: string; stop(): Promise<void> } {
  const runner = `${hostname()}:${process.pid}`;
  const inject: Inject = async (r) => {
    const res = await app.inject({
      method: r.method as 'PUT',
      url: r.url,
      headers: r.headers,
      payload: r.payload,
    });
    return { statusCode: res.statusCode, body: res.body };
  };
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<unknown> | null = null;
  let stopped = false;
  const arm = () => {
    if (!stopped) timer = setTimeout(pass, POLL_MS - (Date.now() % POLL_MS));
  };
  const pass = () => {
    timer = null;
    running = runDueJobs(deps, inject, runner)
      .catch((err: unknown) => deps.log.error({ err, job: 'scheduled-jobs' }, 'scheduled jobs pass failed'))
      .finally(() => {
        running = null;
        arm();
      });
  };
  arm();
  const job = {
    name: 'scheduled-jobs',
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
  return job;
}
