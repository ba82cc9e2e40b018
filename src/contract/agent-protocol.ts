// The agent protocol (docs/agent.md): what `openrig agent` and the server's agent gateway say to each
// other, under /api/agent/v1/, authenticated as the host with its API key (scope `machines`).
//
// 1. POST register  — once at start (and again when the server forgets a machine): the agent
//    sends its stable `agent_uid` (kept in --state-dir) and each machine's hardware; the server
//    upserts one machine per (agent_uid, slot) and answers their ids and the timing to use.
// 2. POST sync      — every heartbeat_s (sooner after a local change): the heartbeat itself, plus
//    what the agent actually sees for each instance it holds; the answer is every instance the
//    agent should hold and in which state (`desired`), with what it needs to run it.
// 3. POST shutdown  — a clean agent stop: its machines and their instances go `offline` at once.
//
// Reported states are the instance-state machine's REPORTED_STATUSES; the server decides with
// applyAgentReport and writes conditionally, so a stale or duplicated report changes nothing.

export const AGENT_API_PREFIX = '/api/agent/v1';

export interface AgentMachineHardware {
  /** 0-based slot of this machine in the agent (`--machines N`). */
  slot: number;
  hostname: string;
  gpu_name: string;
  num_gpus: number;
  /** Per-GPU memory, MB. */
  gpu_ram: number;
  cpu_name: string;
  cpu_cores: number;
  cpu_ghz: number;
  /** MB */
  cpu_ram: number;
  /** GB */
  disk_space: number;
  driver_version: string;
  cuda_max_good: number;
  dlperf: number;
}

export interface RegisterRequest {
  agent_uid: string;
  version: string;
  runtime: 'process' | 'docker';
  /** How the agent keeps volumes: size-limited ext4 images, or plain directories. Omitted: not said. */
  volume_method?: 'ext4-loop' | 'directory';
  /**
   * The address renters reach these machines' instances at (`--public-host`; by default the
   * address the agent reaches the server from). Reported as their ssh_host and public_ipaddr.
   */
  public_host?: string;
  /** $/hour per GPU; lists every machine as an on-demand offer. Omitted: listing unchanged. */
  price_gpu?: number;
  /** $ per GB-month of disk. Omitted: unchanged. */
  price_disk?: number;
  /**
   * True when the agent recreates an instance's container whose configuration generation is older
   * than the one the server hands out (`DesiredInstance.generation`). The server refuses to update
   * the instances of a machine whose agent did not say so: an older agent would ignore the update.
   */
  config_generations?: boolean;
  /**
   * Where the machines are, as renters search for it (`--location`): "City, CC" or a bare ISO
   * country code "CC". Omitted: unchanged.
   */
  location?: string;
  machines: AgentMachineHardware[];
}

export interface RegisterResponse {
  success: boolean;
  /**
   * `verification`: whether renters' default searches (openrig's CLI, the official client) show
   * the machine; absent from older servers.
   */
  machines: {
    slot: number;
    machine_id: number;
    verification?: 'verified' | 'unverified' | 'deverified';
  }[];
  /** The operator's rule for how an unverified machine becomes verified; absent from older servers. */
  verification_rule?: string;
  /**
   * The agent's machines (by slot) that their host deleted: refused for good, and not in
   * `machines`. The agent serves them no more. Absent from older servers.
   */
  deleted_machines?: { slot: number; machine_id: number }[];
  heartbeat_s: number;
  unknown_after_s: number;
  offline_after_s: number;
  /**
   * True when the server takes `disk_usage_bytes` and `gpu_util` in instance reports. A server
   * refuses a sync carrying fields it does not know (400), so an agent sends them only when this
   * is true; older servers do not send it.
   */
  usage_reports?: boolean;
  /**
   * True when the server hands out configuration generations and takes `generation` in instance
   * reports (which, like the usage fields, an agent sends only when this is true).
   */
  config_generations?: boolean;
  /** True when the server takes `event_loop_delay_ms` in a sync (an agent sends it only then). */
  loop_delay_reports?: boolean;
  /**
   * True when the server answers POST wait (WaitRequest): the agent holds one at all times and
   * syncs as soon as it answers `wake`, so a client's request reaches it at once. Older servers do
   * not send it; their agents sync every heartbeat only.
   */
  long_polls?: boolean;
  /**
   * True when the server takes POST benchmarks (contract/benchmarks.ts): the agent runs its
   * benchmarks after registering and every `benchmark_interval_s`, and posts each run. Older
   * servers do not send it; their agents run none.
   */
  benchmarks?: boolean;
  benchmark_interval_s?: number;
}

export type AgentObservedState = 'loading' | 'running' | 'exited' | 'stopped';

export interface InstanceReport {
  id: number;
  state: AgentObservedState;
  status_msg?: string;
  /** The instance's SSH port on this host, once it accepts connections. */
  ssh_port?: number | null;
  /** Published ports, {"8080/tcp": [{"HostIp", "HostPort"}]} (SSH's 22/tcp included). */
  ports?: Record<string, { HostIp: string; HostPort: string }[]>;
  /**
   * Bytes the instance's disk holds (Docker: the container's writable layer; process runtime: its
   * directory), as last measured. Absent: the server keeps what it has; null: not known.
   */
  disk_usage_bytes?: number | null;
  /**
   * Mean utilisation of the instance's GPUs in percent (0–100, nvidia-smi), as last measured; null
   * with simulated GPUs or while it does not run. Absent: the server keeps what it has.
   */
  gpu_util?: number | null;
  /**
   * The configuration generation of what this report describes (the container, or the one being
   * created). A report of an older generation than the server's describes a container an update
   * replaces: it moves nothing. Absent (an older agent): taken as current.
   */
  generation?: number;
}

export interface SyncRequest {
  agent_uid: string;
  machine_ids: number[];
  instances: InstanceReport[];
  /** How late the agent's event loop ran since its last sync, in milliseconds. */
  event_loop_delay_ms?: LoopDelay;
}

/** Percentiles and maximum of an event loop's delay over a span, in milliseconds. */
export interface LoopDelay {
  p50: number;
  p99: number;
  max: number;
}

export type DesiredState = 'running' | 'stopped' | 'destroyed';

export interface DesiredInstance {
  id: number;
  machine_id: number;
  desired: DesiredState;
  /**
   * The server's actual_status. An instance whose process died stays `exited` on the host until
   * the server shows null or `stopped` again (a client start of an exited instance): then the
   * agent starts it afresh. It never restarts one by itself.
   */
  actual_status: string | null;
  image: string;
  disk: number;
  onstart: string;
  env: Record<string, string>;
  label: string;
  /** The instance_api_key, injected as CONTAINER_API_KEY. Null only for destroyed ones. */
  container_api_key: string | null;
  /** OpenSSH public key lines the instance's SSH server must accept (and no others). */
  authorized_keys: string[];
  /** Container ports to publish (the `-p` requests of the instance's env). */
  ports?: { container: number; proto: 'tcp' | 'udp' }[];
  /** Registry credentials for pulling `image` (`-u USER -p PASSWORD [REGISTRY]`), or null. */
  image_login?: string | null;
  /**
   * Set for an instance created with runtype `args`: its main process is the image's entrypoint
   * (or `entrypoint`) run with these arguments, as `docker run [--entrypoint E] IMAGE ARGS…` runs
   * it, and its end is the instance's; `onstart` is not run. Absent (an older server) or null: the
   * agent's own main process, which runs `onstart` in the background. An agent that does not know
   * the field runs the instance the older way.
   */
  args?: string[] | null;
  /**
   * With `args`: the program that replaces the image's entrypoint, one path or name as `docker run
   * --entrypoint` takes it (the official client sends its `--entrypoint` as `onstart`); null keeps
   * the image's own.
   */
  entrypoint?: string | null;
  /**
   * The instance's configuration generation: 1 at creation, one more after each update (`update
   * instance`). An agent whose container of the instance is of an older generation removes it and
   * creates one from this configuration (its writable layer, the instance's disk, starts afresh).
   * Absent from older servers and for destroyed instances.
   */
  generation?: number;
  /**
   * Set while the instance is preempted (desired `stopped`): the seconds left of its grace period.
   * The agent sends SIGTERM and stops it at the latest then; another instance of the machine
   * starts only once it has stopped. Absent: an ordinary stop.
   */
  stop_grace_s?: number;
  /**
   * The volumes the instance mounts (docs/volumes.md): the agent makes each on first use (of
   * `size_gb`, size-limited where its method can) and mounts it read-write at `mount_path`.
   * Absent from older servers and for destroyed instances.
   */
  volumes?: { id: number; mount_path: string; size_gb: number }[];
}

/**
 * Something a client asked of an instance that its agent carries out once: `logs` (the
 * container's output, or with `daemon` the agent's own lines about the instance; last `tail`
 * lines, only lines containing `filter`), `command` (an
 * allow-listed argv run in the container), `reboot` (restart, disk kept), `recycle` (pull the
 * image again and recreate the container). The agent answers with POST results.
 */
export interface AgentRequest {
  id: number;
  instance_id: number;
  kind: 'logs' | 'command' | 'reboot' | 'recycle';
  tail?: number | null;
  filter?: string | null;
  daemon?: boolean;
  argv?: string[];
}

export interface ResultsRequest {
  agent_uid: string;
  machine_ids: number[];
  /** `output`: the text for logs and command (an error's text when `ok` is false). */
  results: { id: number; ok: boolean; output: string }[];
}

export interface SyncResponse {
  success: boolean;
  heartbeat_s: number;
  /** Machine ids the server does not know for this agent (deleted, or not this host's): re-register. */
  unknown_machine_ids: number[];
  /**
   * Those of `unknown_machine_ids` that their host deleted: refused for good. The agent drops
   * them (no new registration for them) and ends their instances. Absent from older servers.
   */
  deleted_machine_ids?: number[];
  instances: DesiredInstance[];
  /** Pending client requests for these instances (absent from older servers). */
  requests?: AgentRequest[];
  /** Server clock, epoch seconds. */
  server_time: number;
  /**
   * Every live volume of the agent's machines. The agent deletes the data of a volume it holds
   * that is not listed (its owner deleted it). Absent from older servers: the agent deletes none.
   */
  volumes?: { id: number; machine_id: number; size_gb: number }[];
}

export interface ShutdownRequest {
  agent_uid: string;
  machine_ids: number[];
}

/** Asked by an instance's SSH server before it accepts a key: the keys the server holds now. */
export interface AuthorizedKeysRequest {
  instance_id: number;
}

/** Empty when the instance is not this host's, or is destroyed. */
export interface AuthorizedKeysResponse {
  authorized_keys: string[];
}

/**
 * POST wait (when the register answer says `long_polls`): held by the server until something is
 * queued for one of `machine_ids` (a client's request of one of their instances, a change of what
 * one of them should run) or `timeout_s` passed; then the agent syncs at once (`wake`) or waits
 * again. A request queued after the agent's last sync, whose id is above `after_request_id` (the
 * highest request id the agent has been handed), answers at once.
 */
export interface WaitRequest {
  agent_uid: string;
  machine_ids: number[];
  after_request_id?: number;
  /** How long the server may hold the call, in seconds; it holds at most its own limit. */
  timeout_s?: number;
}

export interface WaitResponse {
  success: boolean;
  /** True: sync now. False: nothing came before the timeout (or the server is shutting down). */
  wake: boolean;
}

/**
 * POST copies (docs/data.md), by the agent of a copy's source: `reports` on the copies it carries
 * out, answered with every active copy whose source is on its machines. The agent pushes each with
 * rsync over SSH to `dst_host:dst_port` (the destination instance's SSH server) as `vastai_kaalia`
 * with `key`, the copy's one-time private key, into module `dst_id` at `dst_path`. A copy it
 * carries out that is no longer listed was canceled: it stops it.
 */
export interface CopiesRequest {
  agent_uid: string;
  machine_ids: number[];
  reports: CopyReport[];
  /**
   * The volume clones this agent receives (listed in `receives`), each with the port of the SSH
   * server it opened for it: the server hands that port to the source's agent.
   */
  receiving?: { id: number; port: number }[];
}

export interface CopyReport {
  id: number;
  state: 'running' | 'done' | 'failed';
  /** rsync's progress line (bytes, percent, speed). */
  progress?: string;
  bytes?: number;
  /** Why it failed. */
  msg?: string;
}

export interface AgentCopy {
  id: number;
  /** queued: not started yet; running: started (by this agent before a restart, or now). */
  status: string;
  src_kind: 'instance' | 'volume';
  src_id: number;
  src_path: string;
  dst_id: number;
  dst_path: string;
  dst_host: string;
  dst_port: number;
  excludes: string[];
  key: string;
  /**
   * `volume`: into volume `dst_id`: a volume of this same agent is written on the host (`dst_host`
   * is '' and `dst_port` 0); a volume clone into another agent's volume goes to the SSH server
   * that agent opened for it. Absent: an instance.
   */
  dst_kind?: 'instance' | 'volume';
  /** A destination volume's size, GB (made on the host with it if nothing made it yet). */
  dst_size_gb?: number;
  /** rsync compresses the data on the way. */
  compress?: boolean;
}

/**
 * A volume clone into a volume of this agent's machines from another agent's: the agent makes the
 * volume, opens an SSH server that serves it (rsync's daemon protocol, the copy's one-time key
 * only) and reports its port in `receiving`; it closes it once the clone is no longer listed.
 */
export interface CopyReceive {
  id: number;
  volume_id: number;
  size_gb: number;
}

export interface CopiesResponse {
  success: boolean;
  copies: AgentCopy[];
  receives?: CopyReceive[];
}
