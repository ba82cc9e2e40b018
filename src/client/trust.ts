// The shapes of the host-trust and payout routes as the client returns them (docs/trust.md,
// docs/benchmarks.md, docs/payouts.md): a machine's reliability with its parts, its verification
// and benchmark rows, renters' reports, and the host's payouts with where it is paid.

import type {
  BenchmarkRow,
  ReportProblem,
  VerificationEvent,
  VerificationState,
} from '../contract/benchmarks.js';

export type { BenchmarkRow, ReportProblem, VerificationEvent, VerificationState };
export { REPORT_PROBLEMS } from '../contract/benchmarks.js';

export interface ReliabilityFactors {
  uptime: number;
  starts: number;
  endings: number;
  reports: number;
}

/** GET /machines/ID/reliability/: the number offers show and the record it is computed from. */
export interface MachineReliability {
  machine_id: number;
  reliability: number;
  /** false for a machine no agent ever ran: it keeps the reliability the operator gave it. */
  judged: boolean;
  computed_at: number | null;
  window_days: number;
  listed_hours: number;
  online_hours: number;
  starts: number;
  start_failures: number;
  ended: number;
  interrupted: number;
  reporters: number;
  factors: ReliabilityFactors;
  formula: string;
}

/** One of the host's machines on GET /trust/machines/ (reliability parts and report count). */
export type HostTrustMachine = Omit<MachineReliability, 'window_days' | 'formula'> & {
  hostname: string;
  gpu_name: string;
  num_gpus: number;
  online_state: string;
  reports: number;
};

/** GET /machines/ID/verification: the state, its history newest first, the benchmark rows. */
export interface MachineVerification {
  machine_id: number;
  verification: VerificationState;
  verification_rule?: string;
  history: VerificationEvent[];
  benchmarks: BenchmarkRow[];
}

export interface MachineReport {
  id: number;
  machine_id: number;
  problem: ReportProblem;
  message: string;
  created_at: number;
  /** The renter who reported: the operator sees it, the host does not. */
  reporter_id?: number;
}

export type PayoutMethod = 'paypal_manual' | 'wise_manual' | 'internal' | 'none';

export interface Payout {
  id: number;
  host_id: number;
  status: 'pending' | 'paid' | 'failed';
  method: PayoutMethod;
  destination: string;
  period_start: number;
  period_end: number;
  gross: number;
  cut_percent: number;
  cut_amount: number;
  amount: number;
  note: string;
  created_at: number;
  settled_at: number | null;
}

export interface PayoutDestination {
  method: PayoutMethod;
  destination: string;
  updated_at: number;
}

export interface MyPayouts {
  payouts: Payout[];
  destination: PayoutDestination | null;
}
