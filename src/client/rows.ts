// The records as the console reads them: the contract's type of each, with the fields the console
// shows named and typed as the server always sends them. Where the contract names a field already,
// the intersection keeps the narrower of the two. The replies the contract does not describe yet
// (the billing summary and ledger, a maintenance cancel's count) are described here too.
import type {
  ApiKey,
  Instance,
  Machine,
  Maintenance,
  Offer,
  SshKey,
  SuccessReply,
  User,
} from '../contract/api-types.js';

/** An instance row of GET /instances/: the fields every reply carries. */
export type InstanceRow = Instance & {
  id: number;
  machine_id: number;
  intended_status: string;
  /** What the caller may do now: start, stop, … (from the state machine). */
  allowed_actions: string[];
  status_msg: string | null;
  label: string | null;
  image_uuid: string;
  gpu_name: string;
  num_gpus: number;
  ssh_host: string | null;
  ssh_port: number | null;
  dph_total: number;
  /** Dollars so far, compute and disk. */
  accrued_cost: number;
  disk_space: number;
  start_date: number;
  geolocation: string | null;
  /** The configuration an update starts from: the on-start script, the env pairs, the published ports. */
  onstart?: string | null;
  extra_env?: [string, string][];
  ports?: Record<string, unknown>;
  template_hash_id?: string | null;
};

/** An offer of POST /bundles/ (fields in docs/market.md). */
export type OfferRow = Offer & {
  id: number;
  gpu_name: string;
  num_gpus: number;
  gpu_ram: number;
  gpu_total_ram: number;
  cpu_cores_effective: number;
  cpu_ram: number;
  disk_space: number;
  inet_down: number;
  inet_up: number;
  reliability: number;
  verified: boolean;
  geolocation: string | null;
  dph_base: number;
  dph_total: number;
  storage_cost: number;
  dlperf: number;
  direct_port_count: number;
  cuda_max_good: number;
};

/** One of the host's machines (GET /machines/), with its upcoming maintenance windows. */
export type MachineRow = Machine & {
  id: number;
  gpu_name: string;
  num_gpus: number;
  listed: boolean;
  rented: boolean;
  online: boolean;
  online_state?: string;
  listed_gpu_cost: number | null;
  listed_storage_cost: number | null;
  current_rentals_running: number;
  maintenances: MaintenanceWindow[];
};

/** A maintenance window as GET /machines/maintenances lists it (it always has an id there). */
export type MaintenanceWindow = Maintenance & {
  id: number;
  machine_id: number;
  start_time: number;
  end_time: number;
  maintenance_category: string;
};

/** An API key as listed (the key itself only in the create reply). */
export type ApiKeyRow = ApiKey & {
  id: number;
  name: string;
  key_prefix: string;
  /** `full`, `read_only`, or `{family: read|write}`. */
  permissions: string | Record<string, string>;
  created_at: number;
  last_used_at: number | null;
};

export type SshKeyRow = SshKey & {
  id: number;
  key_type: string;
  fingerprint: string;
  comment: string | null;
  created_at: number;
};

/** The signed-in user as GET /users/current shows it to its owner. */
export type CurrentUser = User & {
  id: number;
  email: string;
  full_name: string | null;
  tfa_status: 'enabled' | 'disabled' | 'legacy';
  tfa_enabled?: boolean;
  email_verified?: boolean;
  /** Dollars. */
  balance?: number;
  is_admin?: boolean;
};

/** A 2FA method as the sign-in challenge lists it (email among them). */
export interface LoginMethod {
  id: number;
  method: string;
  label: string;
  is_primary: boolean;
}

/** POST /users/login/: the user with a session cookie, or a 2FA challenge to complete. */
export type PasswordLoginReply = Partial<CurrentUser> & {
  tfa_required?: boolean;
  tfa_secret?: string;
  methods?: LoginMethod[];
};

/** GET /billing/: the balance and the live instances with what each costs per hour now. */
export interface BillingSummary {
  balance: number;
  instances: {
    id: number;
    actual_status: string | null;
    accrued_cost: number;
    compute_dph: number;
    disk_dph: number;
  }[];
}

/** A row of the ledger (GET /billing/charges/): a credit is a negative amount. */
export interface LedgerRow {
  id: number;
  instance_id: number | null;
  /** The volume of a `volume` charge. */
  volume_id?: number | null;
  kind: string;
  amount: number;
  period_start: number;
  period_end: number;
}

export interface LedgerPage {
  charges: LedgerRow[];
}

/** PUT /machines/{id}/cancel_maint/: how many windows were cancelled. */
export interface CancelMaintenanceReply extends SuccessReply {
  canceled: number;
}
