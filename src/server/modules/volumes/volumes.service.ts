// Volumes: disk on one machine that outlives the instances using it (docs/volumes.md).
// A host lists GB of a machine for volumes (a volume offer, held from the machine's disk so
// instances and offer search see it taken); a renter makes volumes from it; an instance on that
// machine mounts one (volumes.link.ts, from the create body's volume_info). The races are decided
// by the database (volumes.repo.ts says how).
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import { tx, isUniqueViolation } from '../../db/connection.js';
import { balanceOf } from '../billing/billing.service.js';
import { OPEN_ENDED_DURATION_S } from '../offers/offers.fields.js';
import { assertPlainText } from '../../http/plain-text.js';
import { VolumeErrors } from './volumes.errors.js';
import * as repo from './volumes.repo.js';
import { compileVolumeSearch, selectVolumeOffers, type VolumeOfferRow } from './volumes.search.js';
import { settleVolume } from './volumes.billing.js';
import { copyReadingVolume, endCopiesIntoVolume } from '../copies/copies.clones.js';

export type { VolumeRow, VolumeAskRow } from './volumes.repo.js';

const MB_PER_GB = 1000;
const secs = (ms: number | null): number | null => (ms === null ? null : ms / 1000);

export interface VolumeAskView {
  id: number;
  machine_id: number;
  size: number;
  used: number;
  price_disk: number;
  end_date: number | null;
}

const askView = (a: repo.VolumeAskRow): VolumeAskView => ({
  id: Number(a.id),
  machine_id: Number(a.machine_id),
  size: Number(a.size_gb),
  used: Number(a.used_gb),
  price_disk: a.price_disk,
  end_date: secs(a.end_date === null ? null : Number(a.end_date)),
});

export interface ListVolumeInput {
  size: number;
  machine: number | number[];
  price_disk: number;
  end_date?: number | null;
}

/**
 * Lists (or re-lists with new terms) `size` GB of each machine for volumes. The GB are held from
 * the machine's disk: a listing never takes more than the machine has free (its agent's reported
 * disk less what instances and other holds take), nor shrinks below what its volumes use.
 */
export async function listVolumeSpace(
  deps: Deps,
  auth: AuthContext,
  body: ListVolumeInput,
): Promise<{ msg: string; asks: VolumeAskView[] }> {
  const machines = [...new Set([body.machine].flat())];
  const now = deps.clock.now();
  let endMs: number | null = null;
  if (body.end_date !== undefined && body.end_date !== null) {
    endMs = Math.round(body.end_date * 1000);
    if (endMs <= now) throw VolumeErrors.badRequest('end_date must be in the future (epoch seconds)');
  }
  const hostId = auth.user.id;
  try {
    const asks = await tx(deps.store, async (db) => {
      const out: VolumeAskView[] = [];
      for (const machineId of machines) {
        const m = await repo.hostMachine(db, hostId, machineId);
        if (!m) throw VolumeErrors.machineNotFound(`No machine ${machineId} of yours`);
        const old = await repo.listedAskOfMachine(db, machineId);
        const delta = (body.size - Number(old?.size_gb ?? 0)) * MB_PER_GB;
        if (delta !== 0 && !(await repo.holdMachineDisk(db, machineId, delta))) {
          const free = Math.max(0, m.disk_space - Math.max(0, Number(m.disk_held_mb)) / MB_PER_GB);
          const room = free + Number(old?.size_gb ?? 0);
          throw VolumeErrors.badRequest(
            `size ${body.size} GB exceeds the ${Math.floor(room)} GB free for volumes on machine ${machineId} (${m.disk_space} GB, the rest held by instances)`,
          );
        }
        if (old) {
          const terms = { size_gb: body.size, price_disk: body.price_disk, end_date: endMs };
          if (!(await repo.updateAsk(db, Number(old.id), terms))) {
            throw VolumeErrors.badRequest(
              `size ${body.size} GB is less than the ${Number(old.used_gb)} GB the volumes of offer ${Number(old.id)} on machine ${machineId} use`,
            );
          }
          out.push(askView({ ...old, ...terms }));
        } else {
          const id = await repo.insertAsk(db, {
            machine_id: machineId,
            host_id: hostId,
            size_gb: body.size,
            price_disk: body.price_disk,
            end_date: endMs,
            now,
          });
          out.push(askView((await repo.askById(db, id))!));
        }
      }
      return out;
    });
    const msg = asks
      .map(
        (a) => `Volume offer ${a.id}: ${a.size} GB on machine ${a.machine_id} at $${a.price_disk}/GB/month`,
      )
      .join('; ');
    return { msg, asks };
  } catch (err) {
    // Two listings of one machine at once: the partial unique index let one in.
    if (isUniqueViolation(err))
      throw VolumeErrors.conflict('Another listing of that machine was made at the same moment; retry');
    throw err;
  }
}

/** Withdraws a volume offer of the host's, and frees its GB; refused while a volume uses it. */
export async function unlistVolumeSpace(deps: Deps, auth: AuthContext, id: number): Promise<string> {
  return tx(deps.store, async (db) => {
    const done = await repo.unlistAsk(db, auth.user.id, id, deps.clock.now());
    if (!done) {
      const a = await repo.askById(db, id);
      if (!a || Number(a.host_id) !== auth.user.id || a.listed !== 1)
        throw VolumeErrors.askNotFound(`No listed volume offer ${id} of yours`);
      throw VolumeErrors.conflict(
        `Volume offer ${id} has volumes (${Number(a.used_gb)} GB): they must be deleted before it is unlisted`,
      );
    }
    await repo.holdMachineDisk(db, Number(done.machine_id), -Number(done.size_gb) * MB_PER_GB);
    return `Unlisted volume offer ${id} (${Number(done.size_gb)} GB on machine ${Number(done.machine_id)})`;
  });
}

/** The volume offers a search body selects, as the official CLI reads them. */
export async function searchVolumeOffers(deps: Deps, body: unknown): Promise<{ offers: VolumeOfferRow[] }> {
  const plan = compileVolumeSearch(body);
  const now = deps.clock.now();
  const rows = (await repo.listedAsks(deps.db, now)).map((a): VolumeOfferRow => {
    const left = Number(a.size_gb) - Number(a.used_gb);
    const end = a.end_date === null ? null : Number(a.end_date);
    return {
      id: Number(a.id),
      ask_contract_id: Number(a.id),
      machine_id: Number(a.machine_id),
      host_id: Number(a.m_host_id),
      disk_space: left,
      storage_cost: a.price_disk,
      storage_total_cost: a.price_disk * plan.storage,
      score: a.price_disk > 0 ? left / a.price_disk : left,
      disk_bw: a.disk_bw,
      disk_name: '',
      inet_up: a.inet_up,
      inet_down: a.inet_down,
      reliability: a.reliability,
      reliability2: a.reliability,
      verified: a.verified === 1,
      verification: a.verified === 1 ? 'verified' : 'unverified',
      geolocation: a.geolocation,
      driver_version: a.driver_version,
      cuda_max_good: a.cuda_max_good,
      cpu_ghz: a.cpu_ghz,
      duration: end === null ? OPEN_ENDED_DURATION_S : (end - now) / 1000,
      end_date: secs(end),
      external: false,
    };
  });
  // score orders the offers; it is no field of the reply.
  return { offers: selectVolumeOffers(rows, plan).map(({ score: _score, ...o }) => o) };
}

/**
 * Makes a volume of `size` GB from a volume offer, in the caller's transaction: takes the GB from
 * the offer (a conditional UPDATE: two creates never take more than it has), then the row.
 */
export async function makeVolume(
  db: Kysely<DB>,
  v: {
    userId: number;
    askId: number;
    size: number;
    label: string;
    now: number;
    machineId?: number;
    status?: string;
  },
): Promise<{ id: number; machineId: number }> {
  const ask = await repo.takeFromAsk(db, v.askId, v.size, v.now);
  if (!ask) {
    const a = await repo.askById(db, v.askId);
    if (!a || a.listed !== 1 || (a.end_date !== null && Number(a.end_date) <= v.now))
      throw VolumeErrors.askNotFound(`No listed volume offer ${v.askId}`);
    throw VolumeErrors.badRequest(
      `size ${v.size} GB exceeds the ${Number(a.size_gb) - Number(a.used_gb)} GB left on volume offer ${v.askId}`,
    );
  }
  const machineId = Number(ask.machine_id);
  if (v.machineId !== undefined && v.machineId !== machineId) {
    throw VolumeErrors.badRequest(
      `volume_info.volume_id: volume offer ${v.askId} is on machine ${machineId}, the instance's offer is machine ${v.machineId}: a volume and its instance must be on the same machine`,
    );
  }
  const id = await repo.insertVolume(db, {
    user_id: v.userId,
    ask_id: v.askId,
    machine_id: machineId,
    host_id: Number(ask.host_id),
    label: v.label,
    size_gb: v.size,
    storage_cost: ask.price_disk,
    now: v.now,
    ...(v.status !== undefined ? { status: v.status } : {}),
  });
  return { id, machineId };
}

/** A label as given (plain text, at most 64 characters), or "" when none. */
export function volumeLabel(field: string, v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string' || v.length > 64)
    throw VolumeErrors.badRequest(`${field} must be a string of at most 64 characters`);
  assertPlainText(field, v);
  return v;
}

export async function createVolume(
  deps: Deps,
  auth: AuthContext,
  body: { size: number; id: number; name?: string },
): Promise<{ id: number; msg: string }> {
  const label = volumeLabel('name', body.name);
  const now = deps.clock.now();
  const userId = auth.user.id;
  return tx(deps.store, async (db) => {
    if ((await balanceOf(db, userId)) <= 0) throw VolumeErrors.insufficientBalance();
    const v = await makeVolume(db, { userId, askId: body.id, size: body.size, label, now });
    return { id: v.id, msg: `Created volume ${v.id}: ${body.size} GB on machine ${v.machineId}` };
  });
}

export interface VolumeView {
  id: number;
  label: string;
  disk_space: number;
  /** ready; a clone's `cloning`, `cloning N%` or `clone failed: why`. */
  status: string;
  type: 'local_volume';
  machine_id: number;
  host_id: number;
  ask_id: number;
  geolocation: string;
  reliability2: number;
  verification: string;
  inet_up: number;
  inet_down: number;
  driver_version: string;
  disk_name: string;
  cluster_id: null;
  storage_cost: number;
  total_cost: number;
  start_date: number;
  instances: number[];
  mount_path: string | null;
}

/** The caller's live volumes; `type` network_volume lists none (openrig has local volumes only). */
export async function showVolumes(
  deps: Deps,
  auth: AuthContext,
  type: string | undefined,
): Promise<VolumeView[]> {
  if (type === 'network_volume') return [];
  const rows = await repo.volumesOf(deps.db, auth.user.id);
  return rows.map((r) => ({
    id: Number(r.id),
    label: r.label,
    disk_space: Number(r.size_gb),
    status: r.status,
    type: 'local_volume',
    machine_id: Number(r.machine_id),
    host_id: Number(r.host_id),
    ask_id: Number(r.ask_id),
    geolocation: r.geolocation,
    reliability2: r.reliability,
    verification: r.verified === 1 ? 'verified' : 'unverified',
    inet_up: r.inet_up,
    inet_down: r.inet_down,
    driver_version: r.driver_version,
    disk_name: '',
    cluster_id: null,
    storage_cost: r.storage_cost,
    total_cost: Number(r.accrued_micros) / 1_000_000,
    start_date: Number(r.created_at) / 1000,
    instances: r.live_instance_id === null ? [] : [Number(r.live_instance_id)],
    mount_path: r.live_instance_id === null ? null : r.mount_path,
  }));
}

/**
 * Deletes a volume of the caller's: charged up to now, its GB given back to its offer, and its
 * data deleted by its host's agent at its next sync; a clone into it (or a copy) is canceled.
 * Refused while a live instance mounts it, and while a copy or clone reads from it.
 */
export async function deleteVolume(deps: Deps, auth: AuthContext, id: number): Promise<string> {
  const now = deps.clock.now();
  const woken: number[] = [];
  const msg = await tx(deps.store, async (db) => {
    const before = await repo.volumeById(db, id);
    const gone = await repo.deleteVolume(db, auth.user.id, id, now);
    if (!gone) {
      if (!before || Number(before.user_id) !== auth.user.id || before.deleted_at !== null)
        throw VolumeErrors.notFound(`No volume ${id} of yours`);
      throw VolumeErrors.inUse(
        `Volume ${id} is mounted by instance ${Number(before.instance_id)}: destroy that instance first`,
      );
    }
    // A copy reading it would copy a volume being deleted: it ends first. Checked once the delete's
    // write holds the row, so a clone committed meanwhile is seen (and this delete undone).
    const reading = await copyReadingVolume(db, id);
    if (reading)
      throw VolumeErrors.conflict(
        `Volume ${id} is being copied into ${reading.dst_kind} ${Number(reading.dst_id)}: wait for the copy to end, or delete (cancel) that first`,
      );
    await settleVolume(db, before!, now);
    await repo.giveBackToAsk(db, Number(gone.ask_id), Number(gone.size_gb));
    // A clone (or copy) into it ends with it: its source's agent stops.
    woken.push(...(await endCopiesIntoVolume(db, id, now)));
    return `Deleted volume ${id}; its data is deleted from machine ${Number(gone.machine_id)}`;
  });
  if (woken.length > 0) deps.agentWake.notify([...new Set(woken)]);
  return msg;
}

/** One volume as an instance row's volume_info shows it. */
export interface InstanceVolume {
  id: number;
  label: string;
  mount_path: string | null;
  total_space: number;
}

export { mountsJson } from './volumes.repo.js';

/** The volumes of mountsJson (a JSON string on SQLite, parsed already on PostgreSQL). */
export function volumeInfoFromJson(value: unknown): InstanceVolume[] {
  const rows = (typeof value === 'string' ? JSON.parse(value) : (value ?? [])) as {
    id: number | string;
    label: string;
    mount_path: string | null;
    size_gb: number | string;
  }[];
  return rows.map((v) => ({
    id: Number(v.id),
    label: v.label,
    mount_path: v.mount_path,
    total_space: Number(v.size_gb),
  }));
}

/**
 * What an agent keeps of volumes, in one query: every live volume of its machines, and by
 * instance the ones it mounts (a volume's instance_id is the live instance mounting it, or one
 * destroyed since: the caller asks only for its live instances).
 */
export async function agentVolumes(db: Kysely<DB>, machineIds: readonly number[]) {
  const rows = await repo.volumesOfMachines(db, machineIds);
  const byInstance = new Map<number, { id: number; mount_path: string; size_gb: number }[]>();
  for (const r of rows) {
    if (r.instance_id === null || r.mount_path === null) continue;
    const id = Number(r.instance_id);
    byInstance.set(id, [
      ...(byInstance.get(id) ?? []),
      { id: Number(r.id), mount_path: r.mount_path, size_gb: Number(r.size_gb) },
    ]);
  }
  return {
    list: rows.map((r) => ({
      id: Number(r.id),
      machine_id: Number(r.machine_id),
      size_gb: Number(r.size_gb),
    })),
    byInstance,
  };
}
