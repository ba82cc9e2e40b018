// Table types: agent protocol state. The columns live on the offers module's tables
// (added by migration 005), so they are declared by augmenting those interfaces.
import type { Generated } from 'kysely';
import type { MachinesTable as _M, InstancesTable as _I } from './market.js';

declare module './market.js' {
  interface MachinesTable {
    /** UUID of the agent process (kept in its --state-dir) that registered this machine. */
    agent_uid: string | null;
    /** Which of that agent's `--machines N` slots (0-based). */
    agent_slot: number | null;
    /** Where renters reach its instances (the agent's --public-host); null: OPENRIG_PUBLIC_HOST. */
    public_host: string | null;
    /** 1 when its agent recreates containers by configuration generation (migration 024). */
    agent_config_generations: Generated<number>;
    /** How its agent runs instances ('process' | 'docker'), as said at registration (migration 029). */
    agent_runtime: string | null;
    /** How its agent keeps volumes ('ext4-loop' | 'directory'), as said at registration (migration 042). */
    volume_method: string | null;
  }
  interface InstancesTable {
    /** The instance_api_key sealed with encryptSecret(config.secretKey, key): CONTAINER_API_KEY. */
    container_key_enc: string | null;
    /** Last state the agent reported (loading, running, exited, stopped), for operators. */
    agent_state: string | null;
    agent_reported_at: number | null;
    /** Bytes its disk holds, as its agent last measured (migration 019); null until reported. */
    disk_usage_bytes: number | null;
    /** Mean utilisation of its GPUs, percent, as its agent last measured; null: none known. */
    gpu_util: number | null;
    /** The configuration its container must run: 1 at creation, +1 per update (migration 024). */
    config_generation: Generated<number>;
  }
}

export type AgentMachineColumns = Pick<_M, 'agent_uid' | 'agent_slot' | 'public_host'>;
export type AgentInstanceColumns = Pick<
  _I,
  'container_key_enc' | 'agent_state' | 'agent_reported_at' | 'disk_usage_bytes' | 'gpu_util'
>;

/** A client's request carried out by the instance's agent (logs, command, reboot, recycle). */
export interface InstanceRequestsTable {
  id: Generated<number>;
  instance_id: number;
  user_id: number;
  kind: 'logs' | 'command' | 'reboot' | 'recycle';
  /** JSON: {tail, filter} for logs, {argv} for command, {} otherwise. */
  args: string;
  /** SHA-256 of the result URL's token (logs and command); null when there is no output. */
  token_hash: string | null;
  created_at: number;
  expires_at: number;
  done_at: number | null;
  /** The output the agent sent back (logs, command). */
  result: string | null;
}

export interface AgentTables {
  instance_requests: InstanceRequestsTable;
}
