// SIGKILL harness for the crash tests: starts the real `serve` on a database,
// runs a concurrent workload against it, kills it with SIGKILL at a random moment (or when a
// line appears in its log), and repeats; the tests then restart it and check what survived.
import { readFileSync } from 'node:fs';
import type { Kysely } from 'kysely';
import type { DB } from '../../src/server/db/schema.js';
import { killGroup, startServe, waitFor, type Proc } from '../helpers/process.js';

/** Rounds per database: a short run in `npm test`; OPENRIG_CRASH_ROUNDS=30 for the long one. */
export const ROUNDS = Number(process.env.OPENRIG_CRASH_ROUNDS || 3);

export const CRASH_ENV = {
  OPENRIG_SECRET_KEY: 'c7'.repeat(32),
  OPENRIG_LOG_LEVEL: 'info',
  // Kills can be timed by log lines: each goes out as soon as it is logged, not with a batch.
  OPENRIG_LOG_FLUSH_MS: '0',
  OPENRIG_RATE_LIMITS: 'off',
  OPENRIG_MAIL_RELAY_INTERVAL_MS: '50',
};

export interface Round {
  /** Requests the server acknowledged (2xx) before it died, with what they returned. */
  acked: { req: unknown; body: any }[];
  killedAfterMs: number;
  byLogLine: boolean;
}

/** A deterministic PRNG (mulberry32) so a failing run can be replayed with OPENRIG_CRASH_SEED. */
export function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function serveArgs(dbUrl: string, dataDir: string): string[] {
  return ['--data', dataDir, '--database-url', dbUrl];
}

/**
 * One round: start serve, run `workers` loops of `step` until killed; the kill comes after a
 * random delay in [minMs, maxMs], or as soon as `killOn` appears in the log, whichever is first.
 */
export async function crashRound(opts: {
  dbUrl: string;
  dataDir: string;
  env?: Record<string, string>;
  workers: number;
  minMs: number;
  maxMs: number;
  rnd: () => number;
  killOn?: RegExp;
  step: (
    url: string,
    worker: number,
    i: number,
  ) => Promise<{ req: unknown; status: number; body: any } | null>;
}): Promise<Round> {
  const s = await startServe(serveArgs(opts.dbUrl, opts.dataDir), { ...CRASH_ENV, ...(opts.env ?? {}) });
  const acked: Round['acked'] = [];
  let dead = false;
  const t0 = Date.now();
  const delay = opts.minMs + Math.floor(opts.rnd() * (opts.maxMs - opts.minMs));
  let byLogLine = false;
  const kill = (why: 'timer' | 'log') => {
    if (dead) return;
    dead = true;
    byLogLine = why === 'log';
    killGroup(s.child, 'SIGKILL'); // the primary and its workers at once, as a host dying
  };
  // The clock starts at the first acknowledged reply (or after 3 s), so that every round kills
  // a server that was doing work, not one still warming up.
  let timer: NodeJS.Timeout | undefined;
  let armed = false;
  const arm = () => {
    if (armed) return;
    armed = true;
    timer = setTimeout(() => kill('timer'), delay);
  };
  const fallback = setTimeout(arm, 3000);
  let watch: NodeJS.Timeout | undefined;
  if (opts.killOn && opts.rnd() < 0.5) {
    // Half of the rounds die on the first matching log line after arming; the others at random.
    const re = opts.killOn;
    let seenOut = 0;
    let seenErr = 0;
    watch = setInterval(() => {
      if (!armed) {
        seenOut = s.stdout().length;
        seenErr = s.stderr().length;
        return;
      }
      if (re.test(s.stdout().slice(seenOut)) || re.test(s.stderr().slice(seenErr))) kill('log');
    }, 1);
  }
  const loops = Array.from({ length: opts.workers }, async (_, w) => {
    for (let i = 0; !dead; i++) {
      try {
        const r = await opts.step(s.url, w, i);
        // Acknowledged only when the reply arrived before the kill.
        if (r && r.status >= 200 && r.status < 300) {
          acked.push({ req: r.req, body: r.body });
          arm();
        }
      } catch {
        // The connection died with the server: not acknowledged.
        if (!dead) await new Promise((res) => setTimeout(res, 5));
      }
    }
  });
  await (s as Proc).exited;
  clearTimeout(timer);
  clearTimeout(fallback);
  if (watch) clearInterval(watch);
  await Promise.all(loops);
  return { acked, killedAfterMs: Date.now() - t0, byLogLine };
}

/**
 * Whether the process that wrote a relay's `locked_by` (`host:pid:random`) is still alive; a
 * zombie (killed, not yet reaped by its new parent) counts as dead.
 */
function holderAlive(lockedBy: string): boolean {
  const pid = Number(lockedBy.split(':').at(-2));
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/**
 * Moves into the past every lease on `table` held by a process that is no longer alive: it
 * stands for waiting the lease out, after which a live worker takes the rows over by design.
 * Tests call it repeatedly while they wait, because a claim a killed process sent just before it
 * died can still be executed by its database backend after the restart.
 */
export async function releaseLeasesOfDead(db: Kysely<DB>, table: 'email_outbox' | 'webhooks') {
  const held = await db
    .selectFrom(table)
    .select('locked_by')
    .distinct()
    .where('locked_by', 'is not', null)
    .execute();
  const dead = held.map((r) => r.locked_by!).filter((by) => !holderAlive(by));
  if (dead.length === 0) return;
  await db.updateTable(table).set({ locked_until: 1 }).where('locked_by', 'in', dead).execute();
}

/**
 * Restarts serve on `db` and waits until its e-mail outbox has no pending row (neither sent nor
 * given up), releasing the killed relays' leases (RELAY_LEASE_MS, 5 minutes) as it waits. On a
 * timeout the error shows the server's log and the rows still pending.
 */
export async function restartAndDrain(
  dbUrl: string,
  dataDir: string,
  db: Kysely<DB>,
  env: Record<string, string> = {},
) {
  const releaseDeadLeases = () => releaseLeasesOfDead(db, 'email_outbox');
  await releaseDeadLeases();
  const pending = () =>
    db
      .selectFrom('email_outbox')
      .select(['id', 'category', 'attempts', 'available_at', 'locked_by', 'locked_until', 'last_error'])
      .where('sent_at', 'is', null)
      .where('failed_at', 'is', null);
  const s = await startServe(serveArgs(dbUrl, dataDir), { ...CRASH_ENV, ...env });
  try {
    await waitFor(
      async () => {
        await releaseDeadLeases();
        return (await pending().limit(1).execute()).length === 0;
      },
      'the outbox to deliver every e-mail',
      30_000,
      50,
    );
  } catch (err) {
    const stuck = await pending().limit(5).execute();
    killGroup(s.child, 'SIGKILL');
    await s.exited;
    throw new Error(
      `${(err as Error).message} (now ${Date.now()}); undelivered: ${JSON.stringify(stuck)}; serve's log ends: ${s.stdout().slice(-3000)} ${s.stderr().slice(-2000)}`,
    );
  }
  return s;
}

export async function postJson(
  url: string,
  method: string,
  key: string,
  body: unknown,
): Promise<{ status: number; body: any }> {
  const r = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* keep text */
  }
  return { status: r.status, body: parsed };
}
