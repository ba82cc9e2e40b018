// Maintenance scheduling: the batch call, dnotify, the listing and cancel_maint
// (docs/maintenance.md). The windows and every e-mail about them are written in ONE
// transaction (`tx`) through the outbox: both commit or neither does.
import { randomUUID } from 'node:crypto';
import type { Deps } from '../../deps.types.js';
import { tx, type Store } from '../../db/connection.js';
import { AppError, quoteValue } from '../../errors.js';
import type { User } from '../../identity.js';
import { enqueueEmails, type EmailMessage } from '../notifications/notifications.outbox.js';
import {
  maintenanceCancelledEmail,
  maintenanceClientEmail,
  maintenanceHostEmail,
  type FailedLine,
  type MachineInfo,
} from './maintenance.mail.js';
import { utc } from '../notifications/notifications.format.js';
import { MaintenanceErrors as E, ENTRY_NOT_FOUND_MSG } from './maintenance.errors.js';
import {
  affectedInstances,
  cancelWindows,
  cancelWindowsOfMachine,
  findOverlaps,
  insertWindows,
  listHostWindows,
  listMachineWindows,
  lockOwnedMachines,
  readMachineWindows,
  type WindowRow,
  machineInfos,
  ownedMachineIds,
  type AffectedInstance,
  type NewWindow,
} from './maintenance.repo.js';
import type { IdEntry, WindowSpec } from './maintenance.validate.js';
import { recordEvents, type NewEvent } from '../webhooks/webhooks.events.js';

// Read and locked by other modules (the instance list's windows, deleting a machine) through
// this file, the module's public face.
export { lockMaintenance, windowsJson } from './maintenance.repo.js';

/**
 * maintenance.scheduled / .cancelled events of windows: one to the host per window, and one per
 * window to each client with instances on the machine (naming them).
 */
function maintenanceEvents(
  type: 'maintenance.scheduled' | 'maintenance.cancelled',
  hostId: number,
  windows: {
    id: number;
    machine_id: number;
    start_time: number;
    end_time: number;
    duration_hours: number;
    category: string;
  }[],
  clients: Map<number, Map<number, AffectedInstance[]>>,
): NewEvent[] {
  const out: NewEvent[] = [];
  for (const w of windows) {
    const data = {
      maintenance_id: w.id,
      machine_id: w.machine_id,
      start_time: w.start_time / 1000,
      end_time: w.end_time / 1000,
      duration_hours: w.duration_hours,
      maintenance_category: w.category,
    };
    const subject = `machine:${w.machine_id}`;
    out.push({ userId: hostId, type, subject, data: { ...data, role: 'host' } });
    for (const [userId, insts] of clients.get(w.machine_id) ?? [])
      out.push({
        userId,
        type,
        subject,
        data: { ...data, role: 'renter', instance_ids: insts.map((i) => i.instance_id) },
      });
  }
  return out;
}

export type EntryResult =
  | { success: true; machine_id: number; notifications_sent: number; maintenance_id: number }
  | { success: false; machine_id: number | null; error: string; msg: string };

export interface ScheduleOutcome {
  results: EntryResult[];
  scheduled: number;
}

type Ctx = Pick<Deps, 'store' | 'clock' | 'log' | 'kickOutbox'>;

/** The machine_id echoed for an entry: the number as submitted, null when it was not a number. */
function echoId(e: IdEntry): number | null {
  if (e.kind === 'invalid') return typeof e.raw === 'number' && Number.isFinite(e.raw) ? e.raw : null;
  return e.id;
}

function groupByClient(rows: AffectedInstance[]): Map<number, Map<number, AffectedInstance[]>> {
  const byMachine = new Map<number, Map<number, AffectedInstance[]>>();
  for (const r of rows) {
    let byUser = byMachine.get(r.machine_id);
    if (!byUser) byMachine.set(r.machine_id, (byUser = new Map<number, AffectedInstance[]>()));
    const list = byUser.get(r.user_id);
    if (list) list.push(r);
    else byUser.set(r.user_id, [r]);
  }
  return byMachine;
}

/**
 * Schedules `window` on every owned machine of `entries`, notifies the clients (one e-mail per
 * client per machine window) and the host (one confirmation for the call), all in one transaction.
 * Throws the 400 of "none owned" or of "none scheduled" with the per-entry results in the
 * body; nothing is written then.
 */
export async function scheduleMaintenance(
  ctx: Ctx,
  host: User,
  entries: IdEntry[],
  window: WindowSpec,
): Promise<ScheduleOutcome> {
  const now = ctx.clock.now();
  const batchId = randomUUID();
  const wanted = entries.flatMap((e) => (e.kind === 'id' ? [e.id] : []));
  const outcome = await tx(ctx.store, async (trx) => {
    ctx.log.debug({ batch_id: batchId, machines: wanted.length }, 'maintenance transaction open');
    const machines = await lockOwnedMachines(trx, ctx.store.dialect, host.id, wanted);
    const owned = new Map<number, MachineInfo>(machines.map((m) => [m.id, m]));
    const overlaps = new Map<number, { start_time: number; end_time: number }>();
    for (const o of await findOverlaps(trx, [...owned.keys()], window.startMs, window.endMs, now)) {
      if (!overlaps.has(o.machine_id)) overlaps.set(o.machine_id, o);
    }
    const toSchedule = [...owned.keys()].filter((id) => !overlaps.has(id));
    const clients = groupByClient(await affectedInstances(trx, toSchedule));

    const rows: NewWindow[] = toSchedule.map((id) => ({
      machine_id: id,
      host_id: host.id,
      batch_id: batchId,
      start_time: window.startMs,
      end_time: window.endMs,
      duration_hours: window.durationHours,
      category: window.category,
      notifications_sent: clients.get(id)?.size ?? 0,
      created_at: now,
    }));

    const failed: FailedLine[] = [];
    const results: EntryResult[] = [];
    // Filled after the insert (window ids); entries keep the submitted order.
    const windowIds = rows.length ? await insertWindows(trx, rows) : new Map<number, number>();
    for (const e of entries) {
      let r: EntryResult;
      if (e.kind === 'invalid') {
        r = {
          success: false,
          machine_id: echoId(e),
          error: 'invalid_id',
          msg: `Not a valid machine ID: ${quoteValue(e.raw)}`,
        };
      } else if (e.kind === 'duplicate') {
        r = {
          success: false,
          machine_id: e.id,
          error: 'duplicate',
          msg: `machine_ids lists ${e.id} more than once; only its first entry is processed`,
        };
      } else if (!owned.has(e.id)) {
        r = { success: false, machine_id: e.id, error: 'not_found', msg: ENTRY_NOT_FOUND_MSG };
      } else if (overlaps.has(e.id)) {
        const o = overlaps.get(e.id)!;
        r = {
          success: false,
          machine_id: e.id,
          error: 'maintenance_overlap',
          msg: `Machine ${e.id} already has a maintenance window from ${utc(o.start_time)} to ${utc(o.end_time)} that overlaps this one; cancel it first`,
        };
      } else {
        r = {
          success: true,
          machine_id: e.id,
          notifications_sent: clients.get(e.id)?.size ?? 0,
          maintenance_id: windowIds.get(e.id)!,
        };
      }
      if (!r.success)
        failed.push({
          machineId: r.machine_id ?? (e.kind === 'invalid' ? e.raw : null),
          error: r.error,
          msg: r.msg,
        });
      results.push(r);
    }
    if (owned.size === 0) throw E.noneOwned(undefined, { success: false, results });
    if (rows.length === 0) throw E.noneScheduled(undefined, { success: false, results });

    const mails: EmailMessage[] = [];
    for (const id of toSchedule) {
      const machine = owned.get(id)!;
      const windowId = windowIds.get(id)!;
      for (const [userId, insts] of clients.get(id) ?? []) {
        const first = insts[0]!;
        const m = maintenanceClientEmail({
          machine,
          window: {
            start: window.startMs,
            end: window.endMs,
            durationHours: window.durationHours,
            category: window.category,
          },
          instanceIds: insts.map((i) => i.instance_id),
          name: first.full_name,
        });
        mails.push({
          key: `maint:${windowId}:client:${userId}`,
          to: first.email,
          ...m,
          category: 'maintenance.client',
        });
      }
    }
    const hostMail = maintenanceHostEmail({
      window: {
        start: window.startMs,
        end: window.endMs,
        durationHours: window.durationHours,
        category: window.category,
      },
      scheduled: toSchedule.map((id) => ({
        machineId: id,
        start: window.startMs,
        end: window.endMs,
        notificationsSent: clients.get(id)?.size ?? 0,
      })),
      failed,
      name: host.full_name,
    });
    mails.push({
      key: `maint-batch:${batchId}:host`,
      to: host.email,
      ...hostMail,
      category: 'maintenance.host',
    });
    // Logged inside the transaction, between the windows and their e-mails (the crash test
    // kills the process when it sees this line): nothing of it may survive a crash here.
    ctx.log.info(
      { batch_id: batchId, windows: rows.length, emails: mails.length },
      'maintenance windows written; enqueueing e-mails',
    );
    await enqueueEmails(trx, now, mails);
    await recordEvents(
      trx,
      now,
      maintenanceEvents(
        'maintenance.scheduled',
        host.id,
        toSchedule.map((id) => ({
          id: windowIds.get(id)!,
          machine_id: id,
          start_time: window.startMs,
          end_time: window.endMs,
          duration_hours: window.durationHours,
          category: window.category,
        })),
        clients,
      ),
    );
    return { results, scheduled: rows.length };
  });
  ctx.kickOutbox();
  return outcome;
}

export interface WindowView {
  id: number;
  machine_id: number;
  start_time: number;
  end_time: number;
  duration_hours: number;
  maintenance_category: string;
}

function view(r: {
  id: number;
  machine_id: number;
  start_time: number;
  end_time: number;
  duration_hours: number;
  category: string;
}): WindowView {
  return {
    id: r.id,
    machine_id: r.machine_id,
    start_time: r.start_time / 1000,
    end_time: r.end_time / 1000,
    duration_hours: r.duration_hours,
    maintenance_category: r.category,
  };
}

export async function listMaintenances(
  ctx: Pick<Deps, 'db' | 'clock'>,
  host: User,
  machineIds: number[] | null,
): Promise<WindowView[]> {
  return (await listHostWindows(ctx.db, host.id, machineIds, ctx.clock.now())).map(view);
}

/**
 * For the renters' views (instance rows, offers): the live (not cancelled, not yet ended)
 * maintenance windows of each machine, by start time. Machines without one are absent.
 * Times in epoch seconds, like every time the API shows.
 */
export async function maintenanceWindowsFor(
  db: Deps['db'],
  machineIds: number[],
  now: number,
): Promise<Map<number, WindowView[]>> {
  return byMachine(await listMachineWindows(db, [...new Set(machineIds)], now));
}

/** maintenanceWindowsFor outside any transaction, on the hot read path (Store.read). */
export async function readMaintenanceWindows(
  store: Store,
  machineIds: number[],
  now: number,
): Promise<Map<number, WindowView[]>> {
  return byMachine(await readMachineWindows(store, [...new Set(machineIds)], now));
}

/** The windows of windowsJson (a JSON string on SQLite, parsed already on PostgreSQL). */
export function windowsFromJson(value: unknown): WindowView[] {
  const rows = (typeof value === 'string' ? JSON.parse(value) : (value ?? [])) as WindowRow[];
  return rows.map(view);
}

function byMachine(rows: Parameters<typeof view>[0][]): Map<number, WindowView[]> {
  const out = new Map<number, WindowView[]>();
  for (const r of rows) {
    const v = view(r);
    const list = out.get(v.machine_id);
    if (list) list.push(v);
    else out.set(v.machine_id, [v]);
  }
  return out;
}

type Cancelled = Awaited<ReturnType<typeof cancelWindows>>;

/**
 * Tells the clients who now have running or stopped instances on the machines that a window was
 * cancelled (one e-mail per client per window), in the transaction that cancels it.
 */
async function notifyCancelled(
  trx: Deps['db'],
  now: number,
  hostId: number,
  cancelled: Cancelled,
): Promise<void> {
  if (cancelled.length === 0) return;
  const machineIds = [...new Set(cancelled.map((c) => c.machine_id))];
  const machines = new Map((await machineInfos(trx, machineIds)).map((m) => [m.id, m]));
  const clients = groupByClient(await affectedInstances(trx, machineIds));
  const mails: EmailMessage[] = [];
  for (const w of cancelled) {
    for (const [userId, insts] of clients.get(w.machine_id) ?? []) {
      const m = maintenanceCancelledEmail({
        machine: machines.get(w.machine_id)!,
        window: {
          start: w.start_time,
          end: w.end_time,
          durationHours: w.duration_hours,
          category: w.category,
        },
        instanceIds: insts.map((i) => i.instance_id),
        name: insts[0]!.full_name,
      });
      mails.push({
        key: `maint:${w.id}:cancel:${userId}`,
        to: insts[0]!.email,
        ...m,
        category: 'maintenance.cancel',
      });
    }
  }
  await enqueueEmails(trx, now, mails);
  await recordEvents(trx, now, maintenanceEvents('maintenance.cancelled', hostId, cancelled, clients));
}

/**
 * Cancels the live windows of a machine its host is deleting, in the deletion's transaction
 * (which holds the machine's maintenance lock and has checked ownership). The host gets the
 * maintenance.cancelled events; renters are e-mailed as for any cancellation, but a machine is
 * deleted only when no renter has a live instance on it, so in practice none is. Returns how
 * many windows ended.
 */
export async function cancelForDeletedMachine(
  trx: Deps['db'],
  hostId: number,
  machineId: number,
  now: number,
): Promise<number> {
  const cancelled = await cancelWindowsOfMachine(trx, machineId, now);
  await notifyCancelled(trx, now, hostId, cancelled);
  return cancelled.length;
}

/** Cancels the live windows of one owned machine; 404 when it isn't the caller's. */
export async function cancelMachine(
  ctx: Pick<Deps, 'store' | 'clock' | 'kickOutbox'>,
  host: User,
  machineId: number,
): Promise<number> {
  const now = ctx.clock.now();
  const n = await tx(ctx.store, async (trx) => {
    const owned = await ownedMachineIds(trx, host.id, [machineId]);
    if (!owned.has(machineId)) throw E.machineNotFound();
    const cancelled = await cancelWindows(trx, host.id, [machineId], now);
    await notifyCancelled(trx, now, host.id, cancelled);
    return cancelled.length;
  });
  if (n > 0) ctx.kickOutbox();
  return n;
}

export type CancelResult =
  | { success: true; machine_id: number; canceled: number }
  | { success: false; machine_id: number | null; error: string; msg: string };

/** Batch cancel: per-entry results in submitted order; 400 when none is owned, as for scheduling. */
export async function cancelBatch(
  ctx: Pick<Deps, 'store' | 'clock' | 'kickOutbox'>,
  host: User,
  entries: IdEntry[],
): Promise<CancelResult[]> {
  const now = ctx.clock.now();
  const wanted = entries.flatMap((e) => (e.kind === 'id' ? [e.id] : []));
  const out = await tx(ctx.store, async (trx) => {
    const owned = await ownedMachineIds(trx, host.id, wanted);
    const results: CancelResult[] = [];
    const counts = new Map<number, number>();
    const cancelled = owned.size > 0 ? await cancelWindows(trx, host.id, [...owned], now) : [];
    for (const r of cancelled) counts.set(r.machine_id, (counts.get(r.machine_id) ?? 0) + 1);
    await notifyCancelled(trx, now, host.id, cancelled);
    for (const e of entries) {
      if (e.kind === 'invalid')
        results.push({
          success: false,
          machine_id: echoId(e),
          error: 'invalid_id',
          msg: `Not a valid machine ID: ${quoteValue(e.raw)}`,
        });
      else if (e.kind === 'duplicate')
        results.push({
          success: false,
          machine_id: e.id,
          error: 'duplicate',
          msg: `machine_ids lists ${e.id} more than once; only its first entry is processed`,
        });
      else if (!owned.has(e.id))
        results.push({ success: false, machine_id: e.id, error: 'not_found', msg: ENTRY_NOT_FOUND_MSG });
      else results.push({ success: true, machine_id: e.id, canceled: counts.get(e.id) ?? 0 });
    }
    if (owned.size === 0) throw E.noneOwned(undefined, { success: false, results });
    return results;
  });
  ctx.kickOutbox();
  return out;
}

/** `PUT /machines/{id}/dnotify/`: one window on one machine; 404 if not the caller's, 409 on overlap. */
export async function scheduleOne(
  ctx: Ctx,
  host: User,
  machineId: number,
  window: WindowSpec,
): Promise<{ notifications_sent: number; maintenance_id: number }> {
  try {
    const { results } = await scheduleMaintenance(ctx, host, [{ kind: 'id', id: machineId }], window);
    const r = results[0]!;
    if (!r.success) throw E.machineNotFound();
    return { notifications_sent: r.notifications_sent, maintenance_id: r.maintenance_id };
  } catch (err) {
    if (err instanceof AppError && err.code === E.noneOwned.code && err.status === E.noneOwned.status)
      throw E.machineNotFound();
    if (err instanceof AppError && err.code === E.noneScheduled.code) {
      const entry = (err.extra.results as EntryResult[] | undefined)?.[0];
      throw E.overlap(entry && !entry.success ? entry.msg : undefined);
    }
    throw err;
  }
}
