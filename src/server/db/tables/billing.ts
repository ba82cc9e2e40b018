// Billing's own tables (the ledger itself is in market.ts, with the instances it charges).
import type { Generated } from 'kysely';

/** The prepaid deposit of an instance (migration 028-billing-deposits). Amounts in micro-dollars. */
export interface InstanceDepositsTable {
  instance_id: number;
  /** The renter who paid it, whose balance a refund goes back to. */
  user_id: number;
  /** What is left: the refundable deposit. */
  remaining_micros: Generated<number>;
  /** Every prepay added up. prepaid = drawn + refunded + remaining. */
  prepaid_micros: Generated<number>;
  /** Charges paid from the deposit (at the discounted rate). */
  drawn_micros: Generated<number>;
  /** What the discount took off those charges, added up. */
  discount_micros: Generated<number>;
  /** What destroying the instance gave back to the balance. */
  refunded_micros: Generated<number>;
  /** The discount (a fraction) of charges paid from the deposit, set at each prepay. */
  discount_rate: Generated<number>;
  /** The months of list-price charges the deposit covered at the last prepay. */
  discount_months: Generated<number>;
  created_at: number;
  updated_at: number;
  /** Set once, by the destroy that refunded the deposit; null while the instance lives. */
  refunded_at: number | null;
}

/** A host's payout for a period (migration 032-billing-payouts). Amounts in micro-dollars. */
export interface PayoutsTable {
  id: Generated<number>;
  host_id: number;
  /** It covers the host's charges whose billed period ended in (period_start, period_end] (ms). */
  period_start: number;
  period_end: number;
  /** What renters paid for the host's machines over the period. gross = net + cut. */
  gross_micros: number;
  /** The platform fee in percent (OPENRIG_PLATFORM_FEE_PERCENT when it was made). */
  cut_percent: number;
  cut_micros: number;
  net_micros: number;
  /** 'pending' | 'paid' | 'failed' */
  status: Generated<string>;
  /** 'paypal_manual' | 'wise_manual' | 'internal' | 'none' */
  method: string;
  destination: Generated<string>;
  /** The operator's note when marking it (a transfer reference, a reason it failed). */
  note: Generated<string>;
  created_at: number;
  settled_at: number | null;
}

/** Where a host is paid (migration 032-billing-payouts). */
export interface PayoutDestinationsTable {
  host_id: number;
  /** 'paypal_manual' | 'wise_manual' | 'internal' */
  method: string;
  /** An e-mail for PayPal and Wise; free text for an internal account. */
  destination: string;
  updated_at: number;
}

export interface BillingTables {
  instance_deposits: InstanceDepositsTable;
  payouts: PayoutsTable;
  payout_destinations: PayoutDestinationsTable;
}
