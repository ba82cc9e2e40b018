// Table types of the usage-history module (migration 030): an instance's measurements over time.

/** One bucket of one instance: (instance_id, span_s, t) is the primary key. */
export interface UsageSamplesTable {
  instance_id: number;
  /** The bucket's length in seconds: 60 (the last day) or 3600 (rolled up). */
  span_s: number;
  /** The bucket's start, epoch ms (a multiple of span_s × 1000). */
  t: number;
  /** Mean utilisation of the instance's GPUs, percent; null when not measured. */
  gpu_util: number | null;
  /** GPU memory the instance holds, bytes; null when not measured. */
  gpu_mem_bytes: number | null;
  /** Bytes on the instance's disk; null when not measured. */
  disk_usage_bytes: number | null;
}

export interface UsageHistoryTables {
  usage_samples: UsageSamplesTable;
}
