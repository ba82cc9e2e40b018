// Table types: machines (offers), instances, billing. The offers module owns this file
// and migration 002; other modules read these columns.
import type { Generated, GeneratedAlways } from 'kysely';

export interface MachinesTable {
  id: Generated<number>;
  /** The host: the user who owns the machine. */
  host_id: number;
  hostname: string;
  gpu_name: string;
  num_gpus: number;
  /** Per-GPU memory in MB, the API's unit for gpu_ram. */
  gpu_ram: number;
  cpu_name: string;
  cpu_cores: number;
  cpu_ghz: number;
  /** MB */
  cpu_ram: number;
  /** GB available for instance disks */
  disk_space: number;
  disk_bw: number;
  /** Mbps */
  inet_up: number;
  inet_down: number;
  pcie_bw: number;
  direct_port_count: number;
  cuda_max_good: number;
  driver_version: string;
  reliability: number;
  verified: number;
  geolocation: string;
  dlperf: number;
  /** 1 when offered for rent (an ask exists). */
  listed: number;
  /** On-demand price per GPU, $/hour (an offer's dph_base = price_gpu_dph * num_gpus). */
  price_gpu_dph: number;
  /** Disk price, $ per GB-month. */
  price_disk_gb_month: number;
  /** Minimum bid for interruptible rentals, $/hour for the whole machine. */
  min_bid_dph: number;
  /** 1 while an ACTIVE instance (not destroyed, not stopped) holds the machine; flipped by
   *  conditional updates in the transactions that start/stop/create/destroy (the race is decided
   *  there and by the partial unique index). Stopped instances do not hold it. */
  rented: number;
  /** Disk held on the machine by its live (not destroyed) instances, stopped ones included, in
   *  MB (an integer counter, moved by atomic increments in the create and destroy transactions). */
  disk_held_mb: Generated<number>;
  /** End of the listing (ms), null = open-ended; an offer's `duration` counts down to it. */
  listed_until: number | null;
  /** Stored, generated: dlperf / (price_gpu_dph × num_gpus) × reliability (0 when free). */
  score: GeneratedAlways<number>;
  /** 'online' | 'offline' (agent heartbeats decide). */
  online_state: string;
  last_heartbeat_at: number | null;
  created_at: number;
  deleted_at: number | null;
  /** Set by triggers (migration 007) whenever a column search reads changes (heartbeats that only
   *  move last_heartbeat_at do not): the offer index fetches rows changed since its last read. */
  row_version: Generated<number>;
  /** PostgreSQL only (absent on SQLite): the transaction that last bumped row_version (xid8, as
   *  text), so a reader can tell which changes its last snapshot did not see. */
  row_xid: Generated<string | null>;
  // Measured by the agent's benchmarks (migration 039, docs/benchmarks.md); 0 or '' until measured.
  /** GB/s per GPU, device memory copy. */
  gpu_mem_bw: Generated<number>;
  /** TFLOPS of the whole machine (all its GPUs), FP16 matrix multiply. */
  total_flops: Generated<number>;
  pci_gen: Generated<number>;
  /** CUDA compute capability × 100 (890 for 8.9). */
  compute_cap: Generated<number>;
  cpu_arch: Generated<string>;
  has_avx: Generated<number>;
  ubuntu_version: Generated<string>;
  gpu_arch: Generated<string>;
  /** W per GPU (power limit). */
  gpu_max_power: Generated<number>;
  /** °C (the GPU's slowdown temperature). */
  gpu_max_temp: Generated<number>;
  gpu_display_active: Generated<number>;
  /** GB/s of NVLink per GPU (0: none). */
  bw_nvlink: Generated<number>;
  mobo_name: Generated<string>;
  /** 1 when the host declares its public address static. */
  static_ip: Generated<number>;
  /** 'unverified' | 'verified' | 'deverified' (verified = 1 exactly when 'verified'). */
  verification: Generated<string>;
  verification_changed_at: Generated<number | null>;
  /** When the last benchmark run was received (ms); null: never. */
  benchmarked_at: Generated<number | null>;
  /** What the agent claimed at its last registration (migration 044); null: not known. */
  claimed_num_gpus: Generated<number | null>;
  /** MB per GPU, as claimed at the last registration. */
  claimed_gpu_ram: Generated<number | null>;
  claimed_dlperf: Generated<number | null>;
}

export interface InstancesTable {
  id: Generated<number>;
  machine_id: number;
  /** The renter. */
  user_id: number;
  team_id: number | null;
  image: string;
  /** GB */
  disk: number;
  onstart: string;
  /** JSON object of environment variables. */
  env: string;
  label: string;
  runtype: string;
  args: string | null;
  is_bid: number;
  /** $/hour locked at creation (bid price for interruptible). */
  dph_compute: number;
  /** $/hour for the disk, locked at creation. */
  dph_disk: number;
  /** What the client asked for: 'running' | 'stopped'. */
  intended_status: string;
  /** null, loading, running, exited, unknown, offline (and stopped). */
  actual_status: string | null;
  status_msg: string;
  ssh_host: string | null;
  ssh_port: number | null;
  /** JSON: {"22/tcp": [{"HostIp", "HostPort"}]} */
  ports: string;
  start_date: number | null;
  created_at: number;
  /** Set once; a destroyed instance is never shown again and bills nothing. */
  destroyed_at: number | null;
  /** Micro-dollars accrued so far (compute + disk). */
  accrued_micros: number;
  /** Last time the meter charged this instance (ms). */
  billed_until: number;
  /** Registry login (`image_login`), AES-GCM encrypted; null when none. */
  image_login_enc: string | null;
  /** The client's `extra` docker arguments, as given. */
  extra: string | null;
  /** When it last became running (ms); null before its first start. */
  running_since: number | null;
  /** The template it was created from, copied at creation (a later rename does not follow);
   *  null when none (migration 020). */
  template_id: number | null;
  template_name: string | null;
  template_hash_id: string | null;
  /** JSON: the gateway's ports the renter named, [{"name", "port", "public"}] (migration 038). */
  portal: Generated<string>;
}

/** SSH keys attached to an instance (authorized_keys of its container). */
export interface InstanceSshKeysTable {
  id: Generated<number>;
  instance_id: number;
  ssh_key_id: number;
  public_key: string;
  fingerprint: string;
  created_at: number;
}

/** Idempotency-Key of instance creation: the same key and body replay the first reply. */
export interface IdempotencyKeysTable {
  id: Generated<number>;
  user_id: number;
  idem_key: string;
  /** SHA-256 of the canonical request (offer id + body). */
  request_hash: string;
  instance_id: number;
  /** The reply, AES-GCM encrypted (it holds the instance_api_key). */
  response_enc: string;
  created_at: number;
}

/** Every charge or credit, written in the same transaction as the balance change. */
export interface BillingLedgerTable {
  id: Generated<number>;
  user_id: number;
  instance_id: number | null;
  /** 'compute' | 'disk' | 'credit' | 'volume' (and others: see billing) */
  kind: string;
  /** The volume a `volume` charge is for (migration 041); null on every other row. */
  volume_id: number | null;
  /** Micro-dollars; positive for a charge, negative for a credit. */
  amount_micros: number;
  period_start: number;
  period_end: number;
  created_at: number;
}

export interface MarketTables {
  machines: MachinesTable;
  instances: InstancesTable;
  instance_ssh_keys: InstanceSshKeysTable;
  idempotency_keys: IdempotencyKeysTable;
  billing_ledger: BillingLedgerTable;
}
