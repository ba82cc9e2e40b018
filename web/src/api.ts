// The console talks to the public API only, with the session cookie set by the login. Every write
// carries the X-Openrig-Csrf header the server requires of cookie-authenticated writes.
import type { AccountSettings } from '../../src/contract/api-types';
import { ApiError, OpenrigClient } from '../../src/client/client';

export { ApiError };

/** The typed client, signed in by the browser's session cookie, on the console's own origin. */
export const client = new OpenrigClient({ url: location.origin, cookieSession: true, timeoutMs: 0 });

export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method !== 'GET') headers['x-openrig-csrf'] = '1';
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(
      0,
      'network',
      'The server cannot be reached. Check your connection and retry.',
      {},
      '',
    );
  }
  const text = await res.text();
  let parsed: unknown = {};
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    parsed = { msg: text.slice(0, 200) };
  }
  // Error fields are read from an object reply; a bare array (a listing) has none.
  const data = (parsed !== null && typeof parsed === 'object' ? parsed : {}) as Record<string, unknown>;
  if (!res.ok || data.success === false) {
    const msg = typeof data.msg === 'string' && data.msg ? data.msg : `${res.status} ${res.statusText}`;
    const code = typeof data.error === 'string' ? data.error : String(res.status);
    throw new ApiError(res.status, code, msg, data, text);
  }
  return parsed as T;
}

export const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

// Shapes of the replies the console reads (fields it does not read are left out).
// Those the CLI reads too are the contract's wire types (types only: nothing of src/ is bundled).

export type { AuditLogRow, IpAddrsReply } from '../../src/contract/api-types';

/** The user object; GET /users/current adds the account settings (PUT /api/v0/users/). */
export interface User extends Partial<AccountSettings> {
  id: number;
  email: string;
  full_name: string | null;
  tfa_status: 'enabled' | 'disabled' | 'legacy';
  tfa_enabled?: boolean;
  email_verified?: boolean;
  balance?: number;
  is_admin?: boolean;
}

export interface LoginMethod {
  id: number;
  method: string;
  label: string;
  is_primary: boolean;
}

export interface Offer {
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
}

export interface Instance {
  id: number;
  machine_id: number;
  actual_status: string | null;
  intended_status: string;
  allowed_actions: string[];
  status_msg: string | null;
  label: string | null;
  image_uuid: string;
  gpu_name: string;
  num_gpus: number;
  ssh_host: string | null;
  ssh_port: number | null;
  dph_total: number;
  accrued_cost: number;
  disk_space: number;
  /** GB the instance uses on its host, as its agent last measured; null until measured. */
  disk_usage?: number | null;
  /** Percent, the mean of the instance's GPUs while it runs; null otherwise or with simulated GPUs. */
  gpu_util?: number | null;
  start_date: number;
  geolocation: string | null;
  /** The configuration an update starts from: the on-start script, the env without port requests, the ports. */
  onstart?: string | null;
  extra_env?: [string, string][];
  ports?: Record<string, unknown>;
  template_hash_id?: string | null;
}

export interface Window {
  id: number;
  machine_id: number;
  start_time: number;
  end_time: number;
  duration_hours: number;
  maintenance_category: string;
}

export interface Machine {
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
  maintenances: Window[];
}

export interface TfaMethod {
  id: number;
  method: 'sms' | 'totp';
  label: string;
  phone_number?: string | null;
  is_primary: boolean;
  fail_count: number;
  locked_until: number | null;
  created_at: number;
  last_used: number | null;
}

export interface TfaStatus {
  tfa_enabled: boolean;
  methods: TfaMethod[];
  backup_codes_remaining: number;
  new_method_authorized: boolean;
}
