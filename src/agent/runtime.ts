// What the agent needs from a way of running instances. The process runtime
// (runtime-process.ts) is real; a Docker runtime implements the same five steps later:
// prepare (pull the image, create the disk) → start → stop → destroy → inspect.

import type { VolumeMount, VolumeStore } from './volumes.js';

export interface InstanceSpec {
  id: number;
  image: string;
  /** GB */
  disk: number;
  onstart: string;
  /**
   * Runtype `args`: the main process is the image's entrypoint (or `entrypoint`) with these
   * arguments, and `onstart` is not run. Absent or null: the runtime's own main process runs
   * `onstart` in the background.
   */
  args?: string[] | null;
  /** With `args`: the program replacing the image's entrypoint; null keeps the image's. */
  entrypoint?: string | null;
  /** The instance's env, plus CONTAINER_API_KEY and friends (the agent adds them). */
  env: Record<string, string>;
  /** OpenSSH public key lines the instance's SSH server accepts, and no others. */
  authorizedKeys: string[];
  /** Container ports to publish on free host ports (the `-p` requests of its env). */
  ports?: { container: number; proto: 'tcp' | 'udp' }[];
  /** Registry credentials, `-u USER -p PASSWORD [REGISTRY]`; never logged. */
  imageLogin?: string | null;
  /** The machine's share for the instance: CPU cores and memory (MB). */
  limits?: { cpus: number; memoryMb: number };
  /** GPU indices to hand to the instance (NVIDIA device request); null when GPUs are simulated. */
  gpus?: string[] | null;
  /** The address renters reach the instance at (PUBLIC_IPADDR in its environment). */
  publicHost?: string;
  /**
   * The configuration generation this spec is (1 at creation, one more per update), recorded with
   * what the runtime creates from it, so a container of an older configuration is recognised.
   */
  generation?: number;
  /** The volumes it mounts read-write (volumes.ts): made on first use, kept after it is destroyed. */
  volumes?: VolumeMount[];
}

/** Published ports as clients read them: {"8080/tcp": [{"HostIp": "0.0.0.0", "HostPort": "41001"}]}. */
export type PortMap = Record<string, { HostIp: string; HostPort: string }[]>;

/**
 * What the runtime holds of an instance. `generation`: the configuration generation it was
 * created from (absent: 1, what runtimes recorded before generations existed).
 */
export type ObservedState =
  /** Nothing of this instance on the host. */
  | { state: 'absent' }
  /** Prepared (or stopped): its files are there, nothing runs. */
  | { state: 'stopped'; generation?: number }
  /** Its main process runs and its SSH server accepts connections on `sshPort`. */
  | { state: 'running'; sshPort: number; ports?: PortMap; generation?: number }
  /** Its main process runs but SSH does not accept yet. */
  | { state: 'starting'; generation?: number }
  /** Its main process died without being stopped. */
  | { state: 'exited'; msg: string; generation?: number };

/** The configuration generation of what the runtime holds (1 when it recorded none). */
export function generationOf(st: ObservedState): number {
  return st.state === 'absent' ? 0 : (st.generation ?? 1);
}

/** The bytes an instance's disk holds. */
export interface DiskUsage {
  bytes: number;
  /** Set when `bytes` is a lower bound (a walk cut short, a part unreadable), saying why. */
  partial?: string;
}

/**
 * The most a `logs` request answers: with no `tail`, the last LOGS_MAX_LINES lines; with any tail,
 * never more than the last LOGS_MAX_BYTES bytes of those lines. Read as a stream, so a huge log
 * costs the agent neither memory nor time on its event loop.
 */
export const LOGS_MAX_LINES = 10_000;
export const LOGS_MAX_BYTES = 4 * 1024 * 1024;

export interface Runtime {
  readonly name: 'process' | 'docker';
  /** Where its instances' volumes are kept (absent: a runtime without volumes, such as a test's). */
  readonly volumes?: VolumeStore;
  /** Makes the instance runnable (image, working directory, keys). Idempotent. */
  prepare(spec: InstanceSpec): Promise<void>;
  /** Starts it; resolves once its SSH port accepts connections. Idempotent when it runs. */
  start(spec: InstanceSpec): Promise<{ sshPort: number }>;
  /**
   * Stops every process of it, keeps its files. Idempotent. `graceS`: seconds between SIGTERM and
   * the kill (a preempted instance's grace period); absent: the runtime's own.
   */
  stop(id: number, graceS?: number): Promise<void>;
  /** Stops it and removes everything it had on the host. Idempotent. */
  destroy(id: number): Promise<void>;
  inspect(id: number): Promise<ObservedState>;
  /** Replaces the keys its SSH server accepts (a key attached after creation). */
  updateKeys(id: number, keys: string[]): Promise<void>;
  /** Ids of every instance this runtime holds on the host (for re-adoption after a restart). */
  list(): Promise<number[]>;
  /** Its output (onstart's included), the last `tail` lines or LOGS_MAX_LINES, LOGS_MAX_BYTES at most. */
  logs(id: number, tail: number | null): Promise<string>;
  /** Restarts it, keeping its disk. */
  reboot(spec: InstanceSpec): Promise<void>;
  /** Fetches its image again and recreates it from scratch (same SSH port). */
  recycle(spec: InstanceSpec): Promise<void>;
  /**
   * Replaces what it holds of the instance by a container made from `spec`, a new configuration
   * (an update): the image pulled when missing, the same SSH port and the host ports of the
   * container ports it still publishes, `spec.generation` recorded. What the old one wrote (its
   * disk) is gone. Started when `start`, else left stopped. Safe to run again after a crash
   * part-way: what it finds of the old one is removed.
   */
  recreate(spec: InstanceSpec, opts: { start: boolean }): Promise<void>;
  /** Runs an allow-listed command in it; its stdout and stderr. */
  execute(id: number, argv: string[]): Promise<string>;
  /**
   * The bytes its disk holds now, stopped or not; null when it has nothing on the host. Costly
   * (the agent calls it at most once a minute per instance). A runtime without it reports none.
   */
  diskUsage?(id: number): Promise<DiskUsage | null>;
  /**
   * The host path of its file system's `/` while it runs (copies read from it: copy-runner.ts);
   * null when it does not run here. A runtime without it takes part in no copy from an instance.
   */
  fileRoot?(id: number): Promise<string | null>;
  /**
   * Where the agent connects a gateway stream to the instance's container port (tunnel.ts); null
   * when it does not run. A runtime without it: the port on the host's loopback (the process
   * runtime, whose instances share the host's network).
   */
  gatewayTarget?(id: number, port: number): Promise<{ host: string; port: number } | null>;
}
