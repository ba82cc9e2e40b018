// Earned reliability and renter reports (docs/trust.md).
//
// A machine's reliability is computed from its own record over the last 30 days, by the formula
// docs/trust.md publishes (reliabilityScore below):
//   uptime     U = (online + 24 h × 0.95) / (listed + 24 h), from the uptime sampler's days
//   starts     S = (starts − failed + 5) / (starts + 5)
//   endings    C = (ended − interrupted + 5) / (ended + 5)
//   reports    P = 0.95 ^ (distinct renters who reported a problem)
//   reliability = U × S × C × P, rounded to 4 decimals
// The pseudo-counts give a machine without history 0.95 and keep one event from swinging the
// score of a young machine. The number is stored on the machine row (machines.reliability), which
// offer search filters and orders by (offers' reliability and reliability2), and its parts in
// machine_reliability for the host. It is recomputed for every machine by the trust job (every
// ten minutes, by one process), and for one machine at once when a renter reports it.
// Machines no agent has ever heartbeated for (created by an operator) are not judged: they keep
// the reliability the operator gave them.
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import { isUniqueViolation, tx } from '../../db/connection.js';
import { hasControlChars } from '../../http/plain-text.js';
import { quoteValue } from '../../errors.js';
import { REPORT_PROBLEMS } from '../../../contract/benchmarks.js';
import { TrustErrors } from './trust.errors.js';
import * as repo from './trust.repo.js';
import type { MachineRecord } from './trust.repo.js';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

/** The formula's constants, as docs/trust.md publishes them. */
export const RELIABILITY = {
  windowDays: 30,
  uptimePrior: 0.95,
  uptimePriorMs: 24 * HOUR_MS,
  countPrior: 5,
  reportFactor: 0.95,
} as const;

/** Uptime is sampled this often (by one process); a longer gap counts at most MAX_SAMPLE_GAP_MS. */
export const UPTIME_SAMPLE_MS = 60_000;
/**
 * A gap between samples longer than this (no `serve` process ran, so no agent could heartbeat)
 * counts only this much: hosts are not judged on time nobody could see them.
 */
export const MAX_SAMPLE_GAP_MS = 5 * 60_000;

export interface ReliabilityParts {
  uptime: number;
  starts: number;
  endings: number;
  reports: number;
  score: number;
}

/** The published formula over one machine's record (docs/trust.md, Reliability). */
export function reliabilityScore(r: Omit<MachineRecord, 'machine_id'>): ReliabilityParts {
  const c = RELIABILITY;
  const uptime =
    (Math.min(r.online_ms, r.listed_ms) + c.uptimePriorMs * c.uptimePrior) / (r.listed_ms + c.uptimePriorMs);
  const starts = (r.starts - r.start_failures + c.countPrior) / (r.starts + c.countPrior);
  const endings = (r.ended - r.interrupted + c.countPrior) / (r.ended + c.countPrior);
  const reports = c.reportFactor ** r.reporters;
  const round = (x: number) => Math.round(x * 10_000) / 10_000;
  return {
    uptime: round(uptime),
    starts: round(starts),
    endings: round(endings),
    reports: round(reports),
    score: round(uptime * starts * endings * reports),
  };
}

/**
 * One uptime sample: the time since the last sample (at most MAX_SAMPLE_GAP_MS) is added to every
 * machine expected online today, and to its online time when it is online. Of processes sampling
 * at once one counts the interval (the sampler row's conditional update). Returns the ms counted.
 */
export async function sampleUptime(deps: Pick<Deps, 'store' | 'clock'>): Promise<number> {
  const now = deps.clock.now();
  return tx(deps.store, async (trx) => {
    const prev = await repo.claimSample(trx, now);
    if (prev === null) return 0;
    const ms = Math.min(now - prev, MAX_SAMPLE_GAP_MS);
    await repo.addUptime(trx, { now, day: Math.floor(now / DAY_MS), ms });
    return ms;
  });
}

const COMPUTE_CHUNK = 500;

async function computeFor(db: Kysely<DB>, ids: number[], now: number): Promise<void> {
  const from = now - RELIABILITY.windowDays * DAY_MS;
  const records = await repo.machineRecords(db, ids, from, Math.floor(from / DAY_MS));
  for (const r of records.values()) {
    const { score } = reliabilityScore(r);
    await repo.saveReliability(db, { ...r, score, computed_at: now });
  }
}

/**
 * Recomputes the reliability of every judged machine (or of `machineId` alone), in chunks of 500
 * machines, each in a transaction of its own. Returns how many machines it computed.
 */
export async function computeReliability(
  deps: Pick<Deps, 'store' | 'clock'>,
  machineId?: number,
): Promise<number> {
  const now = deps.clock.now();
  const ids = await repo.judgedMachineIds(deps.store.db, machineId);
  for (let i = 0; i < ids.length; i += COMPUTE_CHUNK) {
    const part = ids.slice(i, i + COMPUTE_CHUNK);
    await tx(deps.store, (trx) => computeFor(trx, part, now));
  }
  return ids.length;
}

const isOperator = (auth: AuthContext) => auth.user.is_admin === 1;

/** The machine, when the caller is its host or the operator: 404 when none, 403 for anyone else. */
async function hostedMachine(db: Kysely<DB>, auth: AuthContext, id: number) {
  const m = await repo.machineById(db, id);
  if (!m || m.deleted_at !== null) throw TrustErrors.notFound(`No machine ${id}`);
  if (Number(m.host_id) !== auth.user.id && !isOperator(auth)) throw TrustErrors.notHost();
  return m;
}

/** A machine's reliability with the parts it is computed from (the host and the operator). */
export async function machineReliability(deps: Pick<Deps, 'db'>, auth: AuthContext, id: number) {
  const m = await hostedMachine(deps.db, auth, id);
  const r = await repo.reliabilityOf(deps.db, id);
  const record = {
    listed_ms: Number(r?.listed_ms ?? 0),
    online_ms: Number(r?.online_ms ?? 0),
    starts: Number(r?.starts ?? 0),
    start_failures: Number(r?.start_failures ?? 0),
    ended: Number(r?.ended ?? 0),
    interrupted: Number(r?.interrupted ?? 0),
    reporters: Number(r?.reporters ?? 0),
  };
  const parts = reliabilityScore(record);
  return {
    machine_id: id,
    reliability: Number(m.reliability),
    judged: m.last_heartbeat_at !== null,
    computed_at: r ? Number(r.computed_at) / 1000 : null,
    window_days: RELIABILITY.windowDays,
    listed_hours: record.listed_ms / HOUR_MS,
    online_hours: record.online_ms / HOUR_MS,
    starts: record.starts,
    start_failures: record.start_failures,
    ended: record.ended,
    interrupted: record.interrupted,
    reporters: record.reporters,
    factors: {
      uptime: parts.uptime,
      starts: parts.starts,
      endings: parts.endings,
      reports: parts.reports,
    },
    formula:
      'U × S × C × P; U = (online + 24 h × 0.95) / (listed + 24 h); S = (starts − failed + 5) / (starts + 5); C = (ended − interrupted + 5) / (ended + 5); P = 0.95 ^ reporters; over the last 30 days',
  };
}

const MESSAGE_MAX = 1000;

/**
 * A renter reports a problem with a machine it rented (an instance on it, live or destroyed in
 * the last 30 days). One report per renter per machine per UTC day: the unique index decides, a
 * second one is a 409. The machine's reliability is recomputed in the same transaction.
 */
export async function createReport(
  deps: Pick<Deps, 'store' | 'clock'>,
  auth: AuthContext,
  machineId: number,
  body: { problem?: unknown; message?: unknown },
) {
  const problem = body.problem;
  if (typeof problem !== 'string' || !(REPORT_PROBLEMS as readonly string[]).includes(problem))
    throw TrustErrors.badRequest(
      `problem must be one of ${REPORT_PROBLEMS.join(', ')}, not ${quoteValue(problem)}`,
    );
  const message = body.message ?? '';
  if (typeof message !== 'string' || message.length > MESSAGE_MAX || hasControlChars(message))
    throw TrustErrors.badRequest(
      `message must be plain text of at most ${MESSAGE_MAX} characters (no control characters)`,
    );
  const now = deps.clock.now();
  const m = await repo.machineById(deps.store.db, machineId);
  if (!m || m.deleted_at !== null) throw TrustErrors.notFound(`No machine ${machineId}`);
  const since = now - RELIABILITY.windowDays * DAY_MS;
  if (!(await repo.rentedSince(deps.store.db, auth.user.id, machineId, since))) throw TrustErrors.notRenter();
  try {
    const row = await tx(deps.store, async (trx) => {
      const r = await repo.insertReport(trx, {
        machine_id: machineId,
        host_id: Number(m.host_id),
        reporter_id: auth.user.id,
        problem,
        message: message.trim(),
        day: Math.floor(now / DAY_MS),
        created_at: now,
      });
      if (m.last_heartbeat_at !== null) await computeFor(trx, [machineId], now);
      return r;
    });
    return reportView(row);
  } catch (err) {
    if (isUniqueViolation(err)) throw TrustErrors.alreadyReported();
    throw err;
  }
}

function reportView(r: repo.ReportRow) {
  return {
    id: Number(r.id),
    machine_id: Number(r.machine_id),
    problem: r.problem,
    message: r.message,
    created_at: Number(r.created_at) / 1000,
  };
}

/**
 * A machine's reports, newest first (at most 500): to its host and the operator only; the
 * operator also sees who reported. Anyone else gets a 403 (a missing machine a 404).
 */
export async function listReports(deps: Pick<Deps, 'db'>, auth: AuthContext, machineId: number) {
  await hostedMachine(deps.db, auth, machineId);
  const rows = await repo.reportsOf(deps.db, machineId, 500);
  return rows.map((r) =>
    isOperator(auth) ? { ...reportView(r), reporter_id: Number(r.reporter_id) } : reportView(r),
  );
}

/** The caller's machines with their reliability parts and report counts (the console's trust page). */
export async function hostTrust(deps: Pick<Deps, 'db'>, hostId: number) {
  const rows = await repo.hostMachinesTrust(deps.db, hostId);
  return rows.map((r) => {
    const record = {
      listed_ms: Number(r.listed_ms ?? 0),
      online_ms: Number(r.online_ms ?? 0),
      starts: Number(r.starts ?? 0),
      start_failures: Number(r.start_failures ?? 0),
      ended: Number(r.ended ?? 0),
      interrupted: Number(r.interrupted ?? 0),
      reporters: Number(r.reporters ?? 0),
    };
    const f = reliabilityScore(record);
    return {
      machine_id: Number(r.id),
      hostname: r.hostname,
      gpu_name: r.gpu_name,
      num_gpus: Number(r.num_gpus),
      reliability: Number(r.reliability),
      online_state: r.online_state,
      judged: r.last_heartbeat_at !== null,
      computed_at: r.computed_at === null ? null : Number(r.computed_at) / 1000,
      listed_hours: record.listed_ms / HOUR_MS,
      online_hours: record.online_ms / HOUR_MS,
      starts: record.starts,
      start_failures: record.start_failures,
      ended: record.ended,
      interrupted: record.interrupted,
      reporters: record.reporters,
      reports: Number(r.reports),
      factors: { uptime: f.uptime, starts: f.starts, endings: f.endings, reports: f.reports },
    };
  });
}
