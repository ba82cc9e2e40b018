// Machines of hosts: making them (admin create-machines, the agent), the host's
// listing, and listing/unlisting them as offers. A listed machine is an offer; its id is the
// offer id. Prices: GPU $/hour per GPU, disk $/GB-month, minimum bid $/hour (whole machine; the
// CLI form of the list call gives it per GPU, and the host's rows show both).
import { roundPrice } from '../../../contract/money.js';
import { sql, type Insertable, type Kysely, type UpdateObject } from 'kysely';
import type { DB } from '../../db/schema.js';
import type { MachinesTable } from '../../db/tables/market.js';
import type { Store } from '../../db/connection.js';
import { tx } from '../../db/connection.js';
import { MachineErrors } from './machines.errors.js';
import * as repo from './machines.repo.js';
import { verificationOf } from '../offers/offers.fields.js';
import type { MachineRow } from './machines.repo.js';
import { maintenanceWindowsFor, type WindowView } from '../maintenance/maintenance.service.js';
import { chunks } from '../../db/chunks.js';

export type { MachineRow } from './machines.repo.js';

// The machine claims other modules take part in (renting, settling, holding a disk), from this
// module's repo: this file is the module's public face.
export {
  claimMachine,
  claimState,
  holdDisk,
  lockMachine,
  releaseMachine,
  setMachineHolder,
} from './machines.repo.js';

/** Per-GPU memory (MB) and DLPerf per GPU of models we know; others get a generic default. */
const KNOWN_GPUS: Record<string, { ram: number; dlperf: number }> = {
  'RTX 3090': { ram: 24576, dlperf: 20 },
  'RTX 4090': { ram: 24564, dlperf: 40 },
  'RTX A6000': { ram: 49140, dlperf: 28 },
  'A100 PCIE': { ram: 40960, dlperf: 50 },
  'A100 SXM4': { ram: 81920, dlperf: 60 },
  'H100 PCIE': { ram: 81559, dlperf: 90 },
  'H100 SXM': { ram: 81559, dlperf: 110 },
  L40S: { ram: 46068, dlperf: 45 },
};

export interface MachineSpec {
  hostId: number;
  gpuName: string;
  numGpus: number;
  priceGpu?: number;
  priceDisk?: number;
  minBid?: number;
  listed?: boolean;
  hostname?: string;
  verified?: boolean;
  hardware?: Partial<Insertable<MachinesTable>>;
}

/** The machine row for a spec, with plausible hardware defaults for a simulated machine. */
export function machineValues(spec: MachineSpec, now: number): Insertable<MachinesTable> {
  const known = KNOWN_GPUS[spec.gpuName] ?? { ram: 16384, dlperf: 15 };
  const price = spec.priceGpu ?? 0.4;
  return {
    host_id: spec.hostId,
    hostname: spec.hostname ?? '',
    gpu_name: spec.gpuName,
    num_gpus: spec.numGpus,
    gpu_ram: known.ram,
    cpu_name: 'AMD EPYC 7B13',
    cpu_cores: 8 * spec.numGpus,
    cpu_ghz: 3.0,
    cpu_ram: 32768 * spec.numGpus,
    disk_space: 500,
    disk_bw: 2000,
    inet_up: 1000,
    inet_down: 1000,
    pcie_bw: 25,
    direct_port_count: 100,
    cuda_max_good: 12.4,
    driver_version: '550.54.15',
    reliability: 0.99,
    verified: spec.verified === false ? 0 : 1,
    geolocation: 'US',
    dlperf: known.dlperf * spec.numGpus,
    listed: spec.listed === false ? 0 : 1,
    price_gpu_dph: price,
    price_disk_gb_month: spec.priceDisk ?? 0.1,
    min_bid_dph: spec.minBid ?? Math.round(price * spec.numGpus * 0.5 * 1e6) / 1e6,
    rented: 0,
    listed_until: null,
    online_state: 'offline',
    last_heartbeat_at: null,
    created_at: now,
    deleted_at: null,
    ...spec.hardware,
  };
}

export async function insertMachines(db: Kysely<DB>, specs: MachineSpec[], now: number): Promise<number[]> {
  const ids: number[] = [];
  for (const s of specs) ids.push(...(await repo.insertMachineRows(db, [machineValues(s, now)])));
  return ids;
}

export interface CreateMachinesInput {
  ownerEmail: string;
  gpuName: string;
  numGpus: number;
  count: number;
  priceGpu?: number;
}

/** `admin create-machines` (operator contract): listed machines with no agent. */
export async function createMachines(
  deps: { store: Store; clock: { now(): number } },
  input: CreateMachinesInput,
): Promise<{ machine_ids: number[] }> {
  if (!input.gpuName.trim()) throw MachineErrors.badRequest('--gpu-name must not be empty');
  if (!Number.isInteger(input.numGpus) || input.numGpus < 1 || input.numGpus > 64)
    throw MachineErrors.badRequest('--num-gpus must be an integer from 1 to 64');
  if (!Number.isInteger(input.count) || input.count < 1 || input.count > 100000)
    throw MachineErrors.badRequest('--count must be an integer from 1 to 100000');
  if (
    input.priceGpu !== undefined &&
    !(Number.isFinite(input.priceGpu) && input.priceGpu >= 0 && input.priceGpu <= 1000)
  )
    throw MachineErrors.badPrice('--price-gpu must be a number of $/hour per GPU, from 0 to 1000');
  const now = deps.clock.now();
  return tx(deps.store, async (db) => {
    const ownerId = await repo.userIdByEmail(db, input.ownerEmail.trim().toLowerCase());
    if (ownerId === undefined) throw MachineErrors.noOwner(`No user with e-mail ${input.ownerEmail}`);
    const spec: MachineSpec = {
      hostId: ownerId,
      gpuName: input.gpuName.trim(),
      numGpus: input.numGpus,
      priceGpu: input.priceGpu,
    };
    const ids: number[] = [];
    // 200 rows of a machine's columns to a statement keep it under SQLite's parameter limit.
    const rows = Array.from({ length: input.count }, () => machineValues(spec, now));
    for (const part of chunks(rows, 200)) ids.push(...(await repo.insertMachineRows(db, part)));
    return { machine_ids: ids.sort((a, b) => a - b) };
  });
}

export interface MachineView {
  id: number;
  machine_id: number;
  hostname: string;
  gpu_name: string;
  num_gpus: number;
  gpu_ram: number;
  cpu_cores: number;
  cpu_ram: number;
  disk_space: number;
  listed: boolean;
  rented: boolean;
  online: boolean;
  online_state: string;
  last_heartbeat_at: number | null;
  listed_gpu_cost: number;
  listed_storage_cost: number;
  min_bid: number;
  end_date: number | null;
  reliability: number;
  verified: boolean;
  current_rentals_running: number;
  /** Current and upcoming maintenance windows (not cancelled, not ended). */
  maintenances: WindowView[];
  // The columns of the established CLI's machines table (docs/market.md says why each value is
  // what it is).
  reliability2: number;
  verification: 'verified' | 'unverified' | 'deverified';
  driver_version: string;
  /** The address renters reach its instances at, when its agent gave one. */
  public_ipaddr: string | null;
  /** How its agent runs instances and keeps volumes, as it said at registration; null: not said. */
  runtime: 'process' | 'docker' | null;
  volume_method: 'ext4-loop' | 'directory' | null;
  geolocation: string;
  /** The minimum bid per GPU, $/hour (min_bid / num_gpus). */
  min_bid_price: number;
  /** GPUs rented / GPUs: an instance rents every GPU of the machine or none. */
  gpu_occupancy: string;
  /** openrig takes no reports about machines. */
  num_reports: 0;
  /** openrig gives no long-term discount (reserved is priced as on-demand). */
  credit_discount_max: 0;
  /** openrig charges no bandwidth, $/GB. */
  listed_inet_up_cost: 0;
  listed_inet_down_cost: 0;
}

/** A machine-wide price per GPU, to the micro-dollar (a machine without GPUs: the price itself). */
function perGpu(dph: number, numGpus: number): number {
  return numGpus > 0 ? roundPrice(dph / numGpus) : dph;
}

export function machineView(m: MachineRow, running: number, maintenances: WindowView[] = []): MachineView {
  return {
    id: m.id,
    machine_id: m.id,
    hostname: m.hostname,
    gpu_name: m.gpu_name,
    num_gpus: m.num_gpus,
    gpu_ram: m.gpu_ram,
    cpu_cores: m.cpu_cores,
    cpu_ram: m.cpu_ram,
    disk_space: m.disk_space,
    listed: m.listed === 1,
    rented: m.rented === 1,
    online: m.online_state === 'online',
    online_state: m.online_state,
    last_heartbeat_at: m.last_heartbeat_at === null ? null : m.last_heartbeat_at / 1000,
    listed_gpu_cost: m.price_gpu_dph,
    listed_storage_cost: m.price_disk_gb_month,
    min_bid: m.min_bid_dph,
    end_date: m.listed_until === null ? null : m.listed_until / 1000,
    reliability: m.reliability,
    verified: m.verified === 1,
    current_rentals_running: running,
    maintenances,
    reliability2: m.reliability,
    // Deverified (docs/trust.md): its hardware, driver or benchmarks changed, or an operator withdrew it.
    verification:
      m.verified === 1 ? 'verified' : m.verification === 'deverified' ? 'deverified' : verificationOf(0),
    driver_version: m.driver_version,
    public_ipaddr: m.public_host ?? null,
    runtime: m.agent_runtime === 'process' || m.agent_runtime === 'docker' ? m.agent_runtime : null,
    volume_method:
      m.volume_method === 'ext4-loop' || m.volume_method === 'directory' ? m.volume_method : null,
    geolocation: m.geolocation,
    min_bid_price: perGpu(m.min_bid_dph, m.num_gpus),
    gpu_occupancy: `${m.rented === 1 ? m.num_gpus : 0}/${m.num_gpus}`,
    num_reports: 0,
    credit_discount_max: 0,
    listed_inet_up_cost: 0,
    listed_inet_down_cost: 0,
  };
}

/** The caller's machines (GET /api/v0/machines/), with their maintenance windows. */
export async function listHostMachines(db: Kysely<DB>, hostId: number, now: number): Promise<MachineView[]> {
  return hostMachineViews(db, await repo.hostMachines(db, hostId), now);
}

/** One of the host's machines; not found when it is not theirs. Only that machine is read. */
export async function showHostMachine(
  db: Kysely<DB>,
  hostId: number,
  machineId: number,
  now: number,
): Promise<MachineView> {
  const [m] = await hostMachineViews(db, await repo.hostMachines(db, hostId, machineId), now);
  if (!m) throw MachineErrors.notFound();
  return m;
}

/** The views of these machine rows: each with its running instances and live maintenance windows. */
async function hostMachineViews(db: Kysely<DB>, rows: MachineRow[], now: number): Promise<MachineView[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const byId = await repo.runningCounts(db, ids);
  const windows = await maintenanceWindowsFor(db, ids, now);
  return rows.map((r) => machineView(r, byId.get(r.id) ?? 0, windows.get(r.id) ?? []));
}

export interface ListPrices {
  price_gpu?: number;
  price_disk?: number;
  /** $/hour for the whole machine. */
  min_bid?: number;
  /** $/hour per GPU (the CLI's price_min_bid): stored as this × the machine's GPUs. */
  min_bid_per_gpu?: number;
  /** Epoch seconds; null/absent = open-ended. */
  end_date?: number | null;
}

function checkPrice(name: string, v: unknown, max: number): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > max)
    throw MachineErrors.badRequest(`${name} must be a number from 0 to ${max}`);
  return roundPrice(v);
}

/**
 * Lists a machine (makes it an offer) with its prices; prices not given keep their value. The
 * host must own it. A rented machine can be listed: it is offered again once its rental ends.
 */
export async function listMachine(
  deps: { db: Kysely<DB>; clock: { now(): number } },
  hostId: number,
  machineId: number,
  p: ListPrices,
): Promise<MachineView> {
  const priceGpu = checkPrice('price_gpu', p.price_gpu, 1000);
  const priceDisk = checkPrice('price_disk', p.price_disk, 1000);
  const minBid = checkPrice('min_bid', p.min_bid, 100000);
  const minBidPerGpu = checkPrice('price_min_bid', p.min_bid_per_gpu, 100000);
  const now = deps.clock.now();
  let until: number | null = null;
  if (p.end_date !== undefined && p.end_date !== null) {
    const maxEnd = now + 10 * 365 * 86400 * 1000;
    if (
      typeof p.end_date !== 'number' ||
      !Number.isFinite(p.end_date) ||
      p.end_date * 1000 <= now ||
      p.end_date * 1000 > maxEnd
    ) {
      throw MachineErrors.badRequest(
        'end_date must be a future Unix timestamp (seconds), at most 10 years ahead',
      );
    }
    until = Math.round(p.end_date * 1000);
  }
  const set: UpdateObject<DB, 'machines'> = { listed: 1, listed_until: until };
  if (priceGpu !== undefined) set.price_gpu_dph = priceGpu;
  if (priceDisk !== undefined) set.price_disk_gb_month = priceDisk;
  if (minBid !== undefined) set.min_bid_dph = minBid;
  else if (minBidPerGpu !== undefined) set.min_bid_dph = wholeMachineBid(minBidPerGpu);
  const row = await repo.updateHostMachine(deps.db, hostId, machineId, set);
  if (!row) throw MachineErrors.notFound();
  return machineView(row, 0);
}

/**
 * A per-GPU minimum bid as the machine's: × its GPU count, in the UPDATE itself (an agent may
 * re-register the machine with another count meanwhile), to the micro-dollar as roundPrice keeps
 * prices.
 */
function wholeMachineBid(perGpu: number) {
  return sql<number>`round(cast(${perGpu} as double precision) * num_gpus * 1000000.0) / 1000000.0`;
}

/**
 * Sets the minimum bid of one of the host's machines, per GPU (the CLI's `set min-bid`), and
 * nothing else: an unlisted machine stays unlisted. 0 takes no bids.
 */
export async function setMinBid(
  db: Kysely<DB>,
  hostId: number,
  machineId: number,
  perGpu: unknown,
): Promise<MachineView> {
  if (perGpu === undefined || perGpu === null)
    throw MachineErrors.badRequest('price is required: the minimum bid in $/hour per GPU');
  const price = checkPrice('price', perGpu, 100000)!;
  const row = await repo.updateHostMachine(db, hostId, machineId, { min_bid_dph: wholeMachineBid(price) });
  if (!row) throw MachineErrors.notFound();
  return machineView(row, 0);
}

/** Unlists a machine: no new rentals; a current rental goes on. Repeats are harmless. */
export async function unlistMachine(db: Kysely<DB>, hostId: number, machineId: number): Promise<MachineView> {
  const row = await repo.updateHostMachine(db, hostId, machineId, { listed: 0 });
  if (!row) throw MachineErrors.notFound();
  return machineView(row, 0);
}

/** `openrig admin verify-machine --id ID [--unverify]`: sets and prints the verification. */
export async function verifyMachine(
  deps: { db: Kysely<DB> },
  id: number,
  verified: boolean,
): Promise<{ id: number; verification: 'verified' | 'unverified' }> {
  const row = await repo.setMachineVerified(deps.db, id, verified);
  if (!row) throw new Error(`no machine with id ${id}`);
  return { id: row.id, verification: verificationOf(row.verified) };
}
