// What an agent's benchmark run reports (POST /api/agent/v1/benchmarks, docs/benchmarks.md): shared
// by the agent, which measures it, and the server, which stores it and fills the offer fields.

/** The GPU part of a run: measured with the NVIDIA driver, or why there is none. */
export type GpuBenchmark =
  | { error: string }
  | {
      /** Market name ("RTX 4090"), as registration names it. */
      name: string;
      count: number;
      /** MB per GPU. */
      ram_mb: number;
      driver: string;
      /** CUDA compute capability × 100 (890 for 8.9); 0 when the driver does not say. */
      compute_cap: number;
      /** The links' PCIe generation (the highest the GPU and slot allow). */
      pci_gen: number;
      /** GB/s host to device per GPU: measured with CUDA when it ran, else the link's rate. */
      pcie_bw: number;
      /** GB/s device memory copy per GPU (0: not measured, no CUDA runtime). */
      gpu_mem_bw: number;
      /** TFLOPS of FP16 matrix multiply, all GPUs (0: not measured, no CUDA runtime). */
      total_flops: number;
      /** W per GPU. */
      power_limit: number;
      /** °C, the slowdown temperature (0: not reported). */
      max_temp: number;
      display_active: boolean;
      /** GB/s per GPU over NVLink (0: no links up). */
      nvlink_bw: number;
      /** How the CUDA figures were measured, or why not ("no CUDA runtime: …"). */
      cuda: string;
    };

export interface BenchmarkReport {
  agent_uid: string;
  machine_id: number;
  /** The agent's version (openrig's). */
  version: string;
  /** Why this run: "registration", "hardware change", "schedule". */
  trigger: string;
  cpu: {
    name: string;
    /** "amd64", "arm64", … */
    arch: string;
    cores: number;
    /** The highest clock the CPU reports, GHz. */
    ghz: number;
    /** The fixed workload's score on one core (higher is faster). */
    score: number;
    has_avx: boolean;
  };
  /** GB/s of a memory copy. */
  mem_bw: number;
  /** MB/s of a synced write. */
  disk_bw: number;
  /** Mbps to and from the server. */
  inet_up: number;
  inet_down: number;
  system: { ubuntu_version: string; mobo_name: string };
  gpu: GpuBenchmark;
  /** Seconds the whole run took. */
  seconds: number;
}

export interface BenchmarkReply {
  success: boolean;
  verification: 'unverified' | 'verified' | 'deverified';
  /** Why the verification is what it is now (the last change's reason, or what is missing). */
  verification_reason: string;
}

/** A benchmark row as `search benchmarks` lists it. */
export interface BenchmarkRow {
  id: number;
  contract_id: null;
  machine_id: number;
  name: string;
  model: string;
  /** "openrig-agent VERSION": what measured it. */
  image: string;
  num_gpus: number;
  score: number;
  unit: string;
  last_update: number;
}

/** The most bytes a network benchmark moves each way. */
export const NET_BENCH_MAX_BYTES = 8 * 1024 * 1024;

/** A machine's verification (docs/trust.md). */
export type VerificationState = 'unverified' | 'verified' | 'deverified';

/** One change of a machine's verification, as GET /machines/ID/verification lists it. */
export interface VerificationEvent {
  id: number;
  from: VerificationState;
  to: VerificationState;
  reason: string;
  by: 'operator' | 'rule';
  at: number;
}

/** The problems a renter can report about a machine (docs/trust.md). */
export const REPORT_PROBLEMS = [
  'offline',
  'start_failed',
  'slow',
  'gpu',
  'network',
  'disk',
  'other',
] as const;

export type ReportProblem = (typeof REPORT_PROBLEMS)[number];
