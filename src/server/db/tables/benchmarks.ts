// Table types of the benchmarks module (migration 039): the agent's benchmark measurements and
// every change of a machine's verification.

/** One measurement of one benchmark run; a run's rows share machine_id and run_at. */
export interface MachineBenchmarksTable {
  id: import('kysely').Generated<number>;
  machine_id: number;
  /** When the agent ran the benchmarks, epoch ms (as the server received them). */
  run_at: number;
  /** What was measured: cpu_ghz, cpu_score, mem_bw, disk_bw, inet_up, inet_down, gpu_mem_bw, pcie_bw, total_flops, dlperf. */
  name: string;
  /** The hardware measured: the GPU model for GPU figures, the CPU model for CPU figures, "disk" or "network". */
  model: string;
  score: number;
  unit: string;
  num_gpus: number;
  /** The agent's version that measured it. */
  agent_version: string;
}

/** A change of a machine's verification, with its reason. */
export interface MachineVerificationsTable {
  id: import('kysely').Generated<number>;
  machine_id: number;
  from_state: string;
  to_state: string;
  reason: string;
  /** Who changed it: 'operator' or 'rule'. */
  actor: string;
  created_at: number;
}

export interface BenchmarkTables {
  machine_benchmarks: MachineBenchmarksTable;
  machine_verifications: MachineVerificationsTable;
}
