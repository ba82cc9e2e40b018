// An instance's usage over its life, for the console's charts: what its agent reports at each
// sync (GPU utilisation, disk use; GPU memory once agents report it), kept as one sample a minute
// for the last day and one an hour before that, for as long as HOURS_KEPT_MS.
//
// A sync comes every few seconds per agent; writing each would cost a commit per sync (the cost
// the heartbeat buffer exists to avoid). So a process writes an instance's sample only at the
// first sync of each minute it sees (deps.usageSamples remembers the minute written): with
// several processes, a minute may be offered twice and the database keeps the first.
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import { tx } from '../../db/connection.js';
import { nextTurn } from '../../clock.js';
import { HOUR_SPAN_S, MINUTE_SPAN_S } from '../../../contract/schemas/usage-history.js';
import * as repo from './usage-history.repo.js';
import { UsageHistoryErrors } from './usage-history.errors.js';

const MINUTE_MS = MINUTE_SPAN_S * 1000;
const HOUR_MS = HOUR_SPAN_S * 1000;
/** Minute samples are kept a day (then rolled into hours). */
export const MINUTES_KEPT_MS = 24 * HOUR_MS;
/** Hourly samples are kept a year and a day: about 8,800 rows for an instance that lives that long. */
export const HOURS_KEPT_MS = 366 * 24 * HOUR_MS;
/** How often a process forgets the minutes it wrote for instances no longer reported. */
const FORGET_EVERY_MS = 10 * MINUTE_MS;

/** The minute each instance's sample was last written by this process (deps.ts `usageSamples`). */
export class UsageSampleMemory {
  readonly written = new Map<number, number>();
  forgotAt = 0;
}

/** What an agent reported of an instance at a sync (a field left out: unchanged). */
export interface ReportedUsage {
  id: number;
  gpu_util?: number | null;
  disk_usage_bytes?: number | null;
}

/** What the server holds of the instance, read by the sync before the report. */
export interface HeldUsage {
  destroyed_at: number | null;
  gpu_util: number | null;
  disk_usage_bytes: number | null;
}

/**
 * Records this minute's sample of each reported live instance whose minute this process has not
 * written yet. A failure is logged, never thrown: the sync that carries it matters more.
 */
export async function recordUsageSamples(
  deps: Pick<Deps, 'db' | 'log' | 'usageSamples'>,
  now: number,
  reports: readonly ReportedUsage[],
  held: ReadonlyMap<number, HeldUsage>,
): Promise<void> {
  const t = Math.floor(now / MINUTE_MS) * MINUTE_MS;
  const mem = deps.usageSamples;
  const rows: repo.SampleRow[] = [];
  for (const rep of reports) {
    const row = held.get(rep.id);
    if (!row || row.destroyed_at !== null || (mem.written.get(rep.id) ?? -1) >= t) continue;
    const gpu = rep.gpu_util !== undefined ? rep.gpu_util : row.gpu_util;
    const disk = rep.disk_usage_bytes !== undefined ? rep.disk_usage_bytes : row.disk_usage_bytes;
    if (gpu === null && disk === null) continue;
    rows.push({
      instance_id: rep.id,
      span_s: MINUTE_SPAN_S,
      t,
      gpu_util: gpu,
      gpu_mem_bytes: null,
      disk_usage_bytes: disk,
    });
  }
  if (now - mem.forgotAt >= FORGET_EVERY_MS) {
    mem.forgotAt = now;
    for (const [id, m] of mem.written) if (m < t - MINUTE_MS) mem.written.delete(id);
  }
  if (rows.length === 0) return;
  try {
    await repo.insertSamples(deps.db, rows);
    for (const r of rows) mem.written.set(r.instance_id, t);
  } catch (err) {
    deps.log.warn({ err }, 'writing usage samples failed; the next sync tries again');
  }
}

export interface UsageSample {
  t: number;
  span_s: typeof MINUTE_SPAN_S | typeof HOUR_SPAN_S;
  gpu_util: number | null;
  gpu_mem_bytes: number | null;
  disk_usage_bytes: number | null;
}

/** The caller's instance's samples, oldest first; not_found when it is not theirs. */
export async function usageHistory(
  deps: Pick<Deps, 'db'>,
  auth: AuthContext,
  instanceId: number,
): Promise<{ instance_id: number; samples: UsageSample[] }> {
  const id = await repo.ownInstance(deps.db, auth.user.id, instanceId);
  if (id === undefined) throw UsageHistoryErrors.notFound();
  const rows = await repo.samplesOf(deps.db, instanceId);
  return {
    instance_id: instanceId,
    samples: rows.map((r) => ({
      t: Number(r.t) / 1000,
      span_s: Number(r.span_s) === HOUR_SPAN_S ? HOUR_SPAN_S : MINUTE_SPAN_S,
      gpu_util: r.gpu_util === null ? null : Number(r.gpu_util),
      gpu_mem_bytes: r.gpu_mem_bytes === null ? null : Number(r.gpu_mem_bytes),
      disk_usage_bytes: r.disk_usage_bytes === null ? null : Number(r.disk_usage_bytes),
    })),
  };
}

export interface RollUpResult {
  /** Minute samples rolled into hours. */
  rolled: number;
  /** Hourly samples past HOURS_KEPT_MS, deleted. */
  pruned: number;
}

/**
 * Rolls every whole hour that ended more than MINUTES_KEPT_MS ago from minutes into one sample an
 * hour, an hour per transaction with a turn of the event loop between, then deletes the hourly
 * samples past HOURS_KEPT_MS. Run by one process at a time (jobs/usage-history.ts).
 */
export async function rollUpUsage(deps: Pick<Deps, 'store' | 'db'>, now: number): Promise<RollUpResult> {
  const cutoff = Math.floor((now - MINUTES_KEPT_MS) / HOUR_MS) * HOUR_MS;
  let rolled = 0;
  for (;;) {
    const oldest = await repo.oldestBefore(deps.db, MINUTE_SPAN_S, cutoff);
    if (oldest === null) break;
    const from = Math.floor(oldest / HOUR_MS) * HOUR_MS;
    rolled += await tx(deps.store, (trx) =>
      repo.rollUpHour(trx, MINUTE_SPAN_S, HOUR_SPAN_S, from, from + HOUR_MS),
    );
    await nextTurn();
  }
  const pruned = await repo.pruneBefore(deps.db, HOUR_SPAN_S, now - HOURS_KEPT_MS);
  return { rolled, pruned };
}
