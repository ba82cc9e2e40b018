// The benchmarks module's public face (docs/benchmarks.md, docs/trust.md): the agent's benchmark
// runs (stored, their figures made the machine's offer fields), `search benchmarks`, and the
// verification that follows the hardware: unverified → verified (an operator, or the rules when
// the benchmarks match the GPU model's reference and the machine has been online long enough) →
// deverified (a hardware or driver change at re-registration, benchmarks out of tolerance,
// repeated failed starts, or an operator). Every change is recorded with its reason and e-mailed
// to the host in the transaction that makes it.
import type { Insertable, Kysely } from 'kysely';
import type { Deps } from '../../deps.types.js';
import type { DB } from '../../db/schema.js';
import type { MachineBenchmarksTable } from '../../db/tables/benchmarks.js';
import { tx } from '../../db/connection.js';
import type { AuthContext } from '../../identity.js';
import type {
  BenchmarkReply,
  BenchmarkReport,
  BenchmarkRow,
  VerificationEvent,
  VerificationState,
} from '../../../contract/benchmarks.js';
import { NET_BENCH_MAX_BYTES } from '../../../contract/benchmarks.js';
import { quoteValue } from '../../errors.js';
import { parseJsonParam, selectFilters, type FilterSpec } from '../../http/select-filters.js';
import { textOf } from '../../../contract/text.js';
import { enqueueEmail } from '../notifications/notifications.outbox.js';
import { verificationChangedEmail } from '../machines/machines.mail.js';
import { BenchmarkErrors } from './benchmarks.errors.js';
import { dlperfOf, judgeBenchmark } from './benchmarks.references.js';
import * as repo from './benchmarks.repo.js';

export type { VerificationState };
export { stateOf } from './benchmarks.repo.js';

/** The verification settings (config.agent.benchmarks), with their defaults when unset. */
export function benchSettings(config: Deps['config']) {
  const s = config.agent.benchmarks ?? {
    autoVerify: true,
    tolerance: 0.25,
    onlineS: 86400,
    intervalS: 86400,
  };
  return { ...s, failedStarts: s.failedStarts ?? 3 };
}

/** What a verification change needs: the database (a transaction), the time, the rule's words. */
export interface VerifyCtx {
  db: Kysely<DB>;
  now: number;
  /** The operator's rule for becoming verified (OPENRIG_VERIFICATION_RULE), said in the e-mail. */
  rule: string;
}

/**
 * Moves a machine's verification to `to`, recording why and who, and e-mails the host; all in
 * `ctx.db` (the caller's transaction). False when it already was `to`, or another change moved it
 * first (the conditional UPDATE applies one of two changes from the same state).
 */
export async function changeVerification(
  ctx: VerifyCtx,
  m: repo.VerifiableMachine,
  to: VerificationState,
  reason: string,
  actor: 'operator' | 'rule',
): Promise<boolean> {
  const from = repo.stateOf(m);
  if (from === to) return false;
  if (!(await repo.moveVerification(ctx.db, m.id, from, to, ctx.now))) return false;
  await repo.insertVerificationEvent(ctx.db, {
    machine_id: m.id,
    from_state: from,
    to_state: to,
    reason,
    actor,
    created_at: ctx.now,
  });
  await mailChange(ctx, m, from, to, reason);
  return true;
}

/** The e-mail to the host of a verification change, in the change's transaction. */
async function mailChange(
  ctx: VerifyCtx,
  m: repo.VerifiableMachine,
  from: VerificationState,
  to: VerificationState,
  reason: string,
): Promise<void> {
  const host = await repo.hostContact(ctx.db, m.host_id);
  if (host) {
    const mail = verificationChangedEmail({
      machine: m,
      from,
      to,
      reason,
      at: ctx.now,
      name: host.full_name,
      rule: ctx.rule,
    });
    await enqueueEmail(ctx.db, ctx.now, {
      key: `machine-verification:${m.id}:${ctx.now}:${from}:${to}`,
      to: host.email,
      ...mail,
      category: 'machine_verification',
    });
  }
}

/**
 * `openrig admin verify-machine --id ID [--unverify]`: an operator verifies the machine, or
 * deverifies it (it stays deverified until an operator verifies it again).
 */
export async function operatorSetVerification(
  deps: { db: Kysely<DB>; now?: number; rule?: string },
  id: number,
  verified: boolean,
  reason?: string,
): Promise<{ id: number; verification: VerificationState }> {
  const now = deps.now ?? Date.now();
  return deps.db.transaction().execute(async (trx) => {
    const m = await repo.machineById(trx, id);
    if (!m) throw new Error(`no machine with id ${id}`);
    const to: VerificationState = verified ? 'verified' : 'deverified';
    await changeVerification(
      { db: trx, now, rule: deps.rule ?? 'an operator of this installation verifies it' },
      m,
      to,
      reason ?? (verified ? 'verified by an operator' : 'deverified by an operator'),
      'operator',
    );
    const after = await repo.machineById(trx, id);
    return { id, verification: repo.stateOf(after ?? m) };
  });
}

/**
 * A rule deverifies a machine (repeated failed starts: afterInstanceExit): for the modules that
 * see the cause. Nothing happens to a machine that is not verified.
 */
export async function ruleDeverify(ctx: VerifyCtx, machineId: number, reason: string): Promise<boolean> {
  const m = await repo.machineById(ctx.db, machineId);
  if (!m || repo.stateOf(m) !== 'verified') return false;
  return changeVerification(ctx, m, 'deverified', reason, 'rule');
}

/** How far back failed starts are looked for: the reliability window (docs/trust.md). */
const FAILED_STARTS_WINDOW_MS = 30 * 86_400_000;

/**
 * After an instance on machine `machineId` exited (the agent's report): when the machine is
 * verified and its last OPENRIG_DEVERIFY_FAILED_STARTS starts since its last verification change
 * (within 30 days) all failed (their instances exited before ever running, as reliability counts
 * them) and came from at least two renters, a rule deverifies it, naming them. An exit after
 * running, or a success among those starts, changes nothing; nor do one renter's failures alone,
 * since a renter's own broken image fails its start too and must not take a host's badge. One transaction; the change is conditional (ruleDeverify), so two
 * reports at once deverify it once.
 */
export async function afterInstanceExit(
  deps: Pick<Deps, 'store' | 'clock' | 'config'>,
  machineId: number,
): Promise<boolean> {
  const n = benchSettings(deps.config).failedStarts;
  if (n <= 0) return false;
  const now = deps.clock.now();
  return tx(deps.store, async (trx) => {
    const m = await repo.machineById(trx, machineId);
    if (!m || repo.stateOf(m) !== 'verified') return false;
    const since = Math.max(m.verification_changed_at ?? 0, now - FAILED_STARTS_WINDOW_MS);
    const starts = await repo.recentStarts(trx, machineId, since, n);
    if (starts.length < n || starts.some((s) => !s.failed)) return false;
    if (new Set(starts.map((s) => s.renter)).size < Math.min(n, 2)) return false;
    const ids = starts.map((s) => s.id).reverse();
    return ruleDeverify(
      { db: trx, now, rule: deps.config.agent.verificationRule },
      machineId,
      `${n} starts in a row failed (instances ${ids.join(', ')} exited before running, rented by ${new Set(starts.map((s) => s.renter)).size} renters; OPENRIG_DEVERIFY_FAILED_STARTS=${n})`,
    );
  });
}

// --- Registration -------------------------------------------------------------------------

/** What re-registration compares: a change of any of these deverifies a verified machine. */
const HARDWARE = ['gpu_name', 'num_gpus', 'gpu_ram', 'driver_version', 'cpu_name'] as const;

/** The machine an agent's slot holds before a registration rewrites it (none: a new machine). */
export function machineBeforeRegistration(db: Kysely<DB>, hostId: number, agentUid: string, slot: number) {
  return repo.machineBySlot(db, hostId, agentUid, slot);
}

/**
 * After a registration wrote machine `machineId` (in the registration's transaction): the
 * registration's GPU count, memory and dlperf are kept as its claims, and the machine advertises
 * no more than its last benchmark saw (GPUs and memory per GPU lowered to it; the measured dlperf,
 * or 0 when that run saw another GPU model: nothing of this one was measured). A new machine
 * verified by OPENRIG_AUTO_VERIFY has that recorded; a known one whose hardware or driver changed
 * (compared as advertised) is deverified, with the changes as the reason.
 */
export async function afterRegistration(
  ctx: VerifyCtx,
  before: repo.VerifiableMachine | undefined,
  machineId: number,
): Promise<VerificationState> {
  const after = await repo.machineById(ctx.db, machineId);
  if (!after) return 'unverified';
  const claims = {
    claimed_num_gpus: after.num_gpus,
    claimed_gpu_ram: after.gpu_ram,
    claimed_dlperf: after.dlperf,
  };
  const clamp = await lastBenchmarkClamp(ctx.db, after);
  await repo.updateMeasured(ctx.db, after.id, { ...claims, ...clamp });
  if (!before) {
    if (after.verified === 1 && after.verification !== 'verified') {
      await ctx.db
        .updateTable('machines')
        .set({ verification: 'verified', verification_changed_at: ctx.now })
        .where('id', '=', after.id)
        .execute();
      const reason = 'verified at registration (OPENRIG_AUTO_VERIFY)';
      await repo.insertVerificationEvent(ctx.db, {
        machine_id: after.id,
        from_state: 'unverified',
        to_state: 'verified',
        reason,
        actor: 'rule',
        created_at: ctx.now,
      });
      await mailChange(ctx, after, 'unverified', 'verified', reason);
    }
    return repo.stateOf(after);
  }
  // Compared as the machine advertises it: the registration's claims no more than the last
  // benchmark saw (which is what `before` advertised).
  const advertised = { ...after, ...clamp };
  const changed = HARDWARE.filter((k) => before[k] !== advertised[k]).map(
    (k) => `${k} ${quoteValue(before[k])} → ${quoteValue(advertised[k])}`,
  );
  if (changed.length > 0 && repo.stateOf(after) === 'verified')
    await changeVerification(
      ctx,
      after,
      'deverified',
      `hardware or driver changed at re-registration: ${changed.join(', ')}`,
      'rule',
    );
  return repo.stateOf((await repo.machineById(ctx.db, machineId)) ?? after);
}

/**
 * What the machine's last run that saw a GPU lowers (a later run that saw none, a driver that did
 * not answer, does not bring the claims back): the GPU count and memory to what it saw (whatever
 * the model), dlperf to the measured one; when it saw another model than the one registered, that
 * model's measured figures are not this one's: dlperf, total_flops and gpu_mem_bw are 0 until a
 * run of the registered model. Nothing without such a run.
 */
async function lastBenchmarkClamp(db: Kysely<DB>, m: repo.VerifiableMachine): Promise<repo.MeasuredFields> {
  const run = await repo.lastRun(db, m.id, 'gpu_ram');
  const ram = run.find((r) => r.name === 'gpu_ram');
  if (!ram) return {};
  const lower = {
    ...(ram.num_gpus < m.num_gpus ? { num_gpus: ram.num_gpus } : {}),
    ...(ram.score < m.gpu_ram ? { gpu_ram: Math.floor(ram.score) } : {}),
  };
  if (ram.model.toLowerCase() !== m.gpu_name.toLowerCase())
    return { ...lower, dlperf: 0, total_flops: 0, gpu_mem_bw: 0 };
  const dlperf = run.find((r) => r.name === 'dlperf');
  return { ...lower, ...(dlperf && dlperf.score !== m.dlperf ? { dlperf: dlperf.score } : {}) };
}

// --- Benchmark runs -----------------------------------------------------------------------

/** The rows a run stores, one per measurement. */
function runRows(b: BenchmarkReport, machineId: number, now: number): Insertable<MachineBenchmarksTable>[] {
  const base = { machine_id: machineId, run_at: now, agent_version: b.version };
  const rows: Insertable<MachineBenchmarksTable>[] = [
    // A clock the CPU does not report (a virtual machine's) is not a measurement of 0 GHz.
    ...(b.cpu.ghz > 0
      ? [{ ...base, name: 'cpu_ghz', model: b.cpu.name, score: b.cpu.ghz, unit: 'GHz', num_gpus: 0 }]
      : []),
    { ...base, name: 'cpu_score', model: b.cpu.name, score: b.cpu.score, unit: 'score', num_gpus: 0 },
    { ...base, name: 'mem_bw', model: b.cpu.name, score: b.mem_bw, unit: 'GB/s', num_gpus: 0 },
    { ...base, name: 'disk_bw', model: 'disk', score: b.disk_bw, unit: 'MB/s', num_gpus: 0 },
    { ...base, name: 'inet_up', model: 'network', score: b.inet_up, unit: 'Mbps', num_gpus: 0 },
    { ...base, name: 'inet_down', model: 'network', score: b.inet_down, unit: 'Mbps', num_gpus: 0 },
  ];
  const g = b.gpu;
  if (!('error' in g)) {
    const gpu = (name: string, score: number, unit: string) =>
      rows.push({ ...base, name, model: g.name, score, unit, num_gpus: g.count });
    gpu('gpu_ram', g.ram_mb, 'MB');
    gpu('pcie_bw', g.pcie_bw, 'GB/s');
    if (g.gpu_mem_bw > 0) gpu('gpu_mem_bw', g.gpu_mem_bw, 'GB/s');
    if (g.total_flops > 0) gpu('total_flops', g.total_flops, 'TFLOPS');
    const dl = dlperfOf(g);
    if (dl > 0) gpu('dlperf', dl, 'DLPerf');
  }
  return rows;
}

/** The machine's offer fields from a run; GPU figures only from a GPU of its registered model. */
function measuredFields(b: BenchmarkReport, m: repo.VerifiableMachine, now: number): repo.MeasuredFields {
  const f: repo.MeasuredFields = {
    cpu_arch: b.cpu.arch,
    has_avx: b.cpu.has_avx ? 1 : 0,
    ubuntu_version: b.system.ubuntu_version,
    mobo_name: b.system.mobo_name,
    benchmarked_at: now,
  };
  if (b.cpu.ghz > 0) f.cpu_ghz = Math.round(b.cpu.ghz * 100) / 100;
  if (b.disk_bw > 0) f.disk_bw = Math.round(b.disk_bw);
  if (b.inet_up > 0) f.inet_up = Math.round(b.inet_up);
  if (b.inet_down > 0) f.inet_down = Math.round(b.inet_down);
  const g = b.gpu;
  const none = {
    gpu_arch: '',
    pcie_bw: 0,
    gpu_mem_bw: 0,
    total_flops: 0,
    pci_gen: 0,
    compute_cap: 0,
    gpu_max_power: 0,
    gpu_max_temp: 0,
    gpu_display_active: 0,
    bw_nvlink: 0,
  };
  // A run that saw no GPU measured none of the machine's GPUs: their figures are 0, its declared
  // ones stay for the rest (a machine of simulated GPUs keeps them).
  if ('error' in g) return { ...f, ...none };
  // The registration's claims (the advertised figures for a machine registered before they were
  // kept): a run raises the count and memory up to them, never beyond, and lowers them to what it saw.
  const claimedGpus = m.claimed_num_gpus ?? m.num_gpus;
  const claimedRam = m.claimed_gpu_ram ?? m.gpu_ram;
  const seen = { num_gpus: Math.min(g.count, claimedGpus), gpu_ram: Math.min(g.ram_mb, claimedRam) };
  // Another model than the machine's: nothing of its GPUs was measured (0, dlperf too), and it
  // advertises no more GPUs or memory than the run saw.
  if (g.name.toLowerCase() !== m.gpu_name.toLowerCase())
    return {
      ...f,
      ...none,
      num_gpus: Math.min(g.count, m.num_gpus),
      gpu_ram: Math.min(g.ram_mb, m.gpu_ram),
      dlperf: 0,
    };
  const dl = dlperfOf(g);
  return {
    ...f,
    gpu_arch: 'nvidia',
    pcie_bw: round2(g.pcie_bw),
    gpu_mem_bw: round2(g.gpu_mem_bw),
    total_flops: round2(g.total_flops),
    pci_gen: g.pci_gen,
    compute_cap: g.compute_cap,
    gpu_max_power: g.power_limit,
    gpu_max_temp: g.max_temp,
    gpu_display_active: g.display_active ? 1 : 0,
    bw_nvlink: round2(g.nvlink_bw),
    ...seen,
    dlperf: dl > 0 ? dl : (m.claimed_dlperf ?? m.dlperf),
  };
}

const round2 = (n: number) => Math.round(n * 100) / 100;

/**
 * One benchmark run of an agent's machine: stored, its figures written to the machine, and the
 * verification judged against the GPU model's reference (docs/trust.md), in one transaction.
 */
export async function postBenchmarks(
  deps: Deps,
  auth: AuthContext,
  b: BenchmarkReport,
): Promise<BenchmarkReply> {
  const s = benchSettings(deps.config);
  const now = deps.clock.now();
  return tx(deps.store, async (trx) => {
    const m = await repo.machineById(trx, b.machine_id);
    if (!m || m.host_id !== auth.user.id || m.agent_uid !== b.agent_uid) throw BenchmarkErrors.notThisAgent();
    await repo.insertBenchmarkRows(trx, runRows(b, m.id, now));
    await repo.updateMeasured(trx, m.id, measuredFields(b, m, now));
    const ctx: VerifyCtx = { db: trx, now, rule: deps.config.agent.verificationRule };
    const verdict = judgeBenchmark(b.gpu, m, s.tolerance);
    const state = repo.stateOf(m);
    let reason: string;
    if (verdict.ok === false) {
      reason = `benchmarks out of tolerance: ${verdict.why}`;
      if (state === 'verified') await changeVerification(ctx, m, 'deverified', reason, 'rule');
    } else if (verdict.ok === null) {
      reason = `the benchmarks cannot verify it: ${verdict.why}`;
    } else if (state === 'verified') {
      reason = 'benchmarks within tolerance';
    } else {
      reason = await autoVerify(ctx, m, s);
    }
    const after = (await repo.machineById(trx, m.id)) ?? m;
    return { success: true, verification: repo.stateOf(after), verification_reason: reason };
  });
}

/** Verifies a machine whose benchmarks are within tolerance once the rules allow; says why not. */
async function autoVerify(
  ctx: VerifyCtx,
  m: repo.VerifiableMachine,
  s: ReturnType<typeof benchSettings>,
): Promise<string> {
  if (!s.autoVerify)
    return 'benchmarks within tolerance; verification is by an operator (OPENRIG_BENCH_VERIFY off)';
  if (repo.stateOf(m) === 'deverified') {
    const last = await repo.lastVerificationEvent(ctx.db, m.id);
    if (last?.actor === 'operator')
      return 'benchmarks within tolerance; deverified by an operator, who verifies it again';
  }
  if (m.online_state !== 'online') return 'benchmarks within tolerance; the machine is not online';
  // Online throughout: counted from its registration, its last verification change and the last
  // time it went offline, whichever is latest.
  const offlineAt = await repo.lastWentOffline(ctx.db, m.host_id, m.id);
  const since = Math.max(m.created_at, m.verification_changed_at ?? 0, offlineAt ?? 0);
  const onlineMs = ctx.now - since;
  if (onlineMs < s.onlineS * 1000)
    return `benchmarks within tolerance; verified once online for ${s.onlineS} s (${Math.floor(onlineMs / 1000)} s so far)`;
  const reason = `benchmarks within ${Math.round(s.tolerance * 100)} % of the ${m.gpu_name} reference and online for ${s.onlineS} s`;
  await changeVerification(ctx, m, 'verified', reason, 'rule');
  return reason;
}

/** `data` for the agent's download benchmark: `bytes` characters. */
export function netDownload(bytes: number): { data: string } {
  return { data: 'x'.repeat(Math.min(Math.max(1, Math.floor(bytes)), NET_BENCH_MAX_BYTES)) };
}

// --- Search and the host's view -----------------------------------------------------------

type Kind = 'int' | 'real' | 'time' | 'string' | 'name' | 'image';
const SEARCH_FIELDS: Record<string, { col: string; kind: Kind }> = {
  id: { col: 'b.id', kind: 'int' },
  machine_id: { col: 'b.machine_id', kind: 'int' },
  name: { col: 'b.name', kind: 'name' },
  model: { col: 'b.model', kind: 'string' },
  image: { col: 'b.agent_version', kind: 'image' },
  num_gpus: { col: 'b.num_gpus', kind: 'int' },
  score: { col: 'b.score', kind: 'real' },
  last_update: { col: 'b.run_at', kind: 'time' },
};
const IMAGE_PREFIX = 'openrig-agent ';
const bad = (msg: string) => BenchmarkErrors.badRequest(msg);

function coerce(field: string, kind: Kind, v: unknown): string | number | null {
  if (kind === 'string' || kind === 'name' || kind === 'image') {
    if (typeof v === 'number') return String(v);
    if (typeof v !== 'string') throw bad(`select_filters: ${field} takes strings, not ${quoteValue(v)}`);
    // The official CLI sends a value's underscores as spaces ("RTX_4090" is "RTX 4090"): a
    // benchmark's name has no spaces, so its spaces are its underscores again.
    if (kind === 'name') return v.replace(/ /g, '_');
    return kind === 'image' ? v.replace(/^openrig-agent /, '') : v;
  }
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  if (kind === 'int' && !Number.isSafeInteger(n))
    throw bad(`select_filters: ${field} takes integers, not ${quoteValue(v)}`);
  if (!Number.isFinite(n)) throw bad(`select_filters: ${field} takes numbers, not ${quoteValue(v)}`);
  return kind === 'time' ? Math.round(n * 1000) : n;
}

const FILTERS: FilterSpec<Kind> = {
  fields: SEARCH_FIELDS,
  coerce,
  ordered: (kind) => kind === 'int' || kind === 'real' || kind === 'time',
  bad,
};

function rowView(r: {
  id: number;
  machine_id: number;
  name: string;
  model: string;
  agent_version: string;
  num_gpus: number;
  score: number;
  unit: string;
  run_at: number;
}): BenchmarkRow {
  return {
    id: r.id,
    contract_id: null,
    machine_id: r.machine_id,
    name: r.name,
    model: r.model,
    image: `${IMAGE_PREFIX}${r.agent_version}`,
    num_gpus: r.num_gpus,
    score: r.score,
    unit: r.unit,
    last_update: r.run_at / 1000,
  };
}

/** `search benchmarks`: rows of live machines passing select_filters, newest first. */
export async function searchBenchmarks(
  deps: Deps,
  q: { select_filters?: unknown; limit?: unknown },
): Promise<BenchmarkRow[]> {
  const filters = selectFilters(parseJsonParam('select_filters', q.select_filters, bad), FILTERS);
  let limit = 1000;
  if (q.limit !== undefined && q.limit !== '') {
    limit = /^\d+$/.test(textOf(q.limit)) ? Number(q.limit) : NaN;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      throw bad('limit must be an integer from 1 to 1000');
  }
  return (await repo.searchBenchmarkRows(deps.db, filters, limit)).map(rowView);
}

export type VerificationEventView = VerificationEvent;

/**
 * A machine's verification, its history (newest first) and its benchmark rows (newest run
 * first): for the host's machine page and the trust module's host page. No ownership check:
 * callers check it.
 */
export async function machineBenchmarkHistory(
  db: Kysely<DB>,
  machineId: number,
  opts: { history?: number; benchmarks?: number } = {},
): Promise<{
  verification: VerificationState;
  history: VerificationEventView[];
  benchmarks: BenchmarkRow[];
} | null> {
  const m = await repo.machineById(db, machineId);
  if (!m) return null;
  const [events, rows] = await Promise.all([
    repo.verificationHistory(db, machineId, opts.history ?? 100),
    repo.machineBenchmarks(db, machineId, opts.benchmarks ?? 100),
  ]);
  return {
    verification: repo.stateOf(m),
    history: events.map((e) => ({
      id: e.id,
      from: e.from_state as VerificationState,
      to: e.to_state as VerificationState,
      reason: e.reason,
      by: e.actor === 'operator' ? 'operator' : 'rule',
      at: e.created_at / 1000,
    })),
    benchmarks: rows.map(rowView),
  };
}

/** The host's view of one of its machines' verification (GET /machines/:id/verification). */
export async function hostMachineVerification(deps: Deps, auth: AuthContext, machineId: number) {
  const m = await repo.machineById(deps.db, machineId);
  if (!m || m.host_id !== auth.user.id) throw BenchmarkErrors.notFound();
  const v = await machineBenchmarkHistory(deps.db, machineId);
  if (!v) throw BenchmarkErrors.notFound();
  return { machine_id: machineId, verification_rule: deps.config.agent.verificationRule, ...v };
}
