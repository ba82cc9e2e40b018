// Table types of the volumes module (migration 026): hosts' volume listings and renters' volumes.
// Times are epoch ms; sizes whole GB; prices $ per GB-month.
import type { Generated } from 'kysely';

/** Disk a host lists on one machine for volumes. At most one listed row per machine. */
export interface VolumeAsksTable {
  id: Generated<number>;
  machine_id: number;
  host_id: number;
  /** GB offered in all; volumes made from it take from it. */
  size_gb: number;
  /** GB its live volumes take (never above size_gb). */
  used_gb: Generated<number>;
  /** $ per GB-month, what a volume made from it is charged. */
  price_disk: number;
  /** End of the listing (ms); null = open-ended. */
  end_date: number | null;
  listed: number;
  created_at: number;
  unlisted_at: number | null;
}

/** A renter's volume on one machine. */
export interface VolumesTable {
  id: Generated<number>;
  user_id: number;
  ask_id: number;
  machine_id: number;
  host_id: number;
  label: string;
  size_gb: number;
  /** $ per GB-month, locked at creation. */
  storage_cost: number;
  /** 'ready' | 'deleted' */
  status: string;
  /** The instance that mounts it, or last mounted it (free again once that one is destroyed). */
  instance_id: number | null;
  mount_path: string | null;
  created_at: number;
  deleted_at: number | null;
  /** Last time the meter charged it (ms). */
  billed_until: number;
  accrued_micros: number;
  /** When its owner's balance was first found exhausted while it was kept (null: paid up). */
  unpaid_since: number | null;
}

export interface VolumeTables {
  volume_asks: VolumeAsksTable;
  volumes: VolumesTable;
}
