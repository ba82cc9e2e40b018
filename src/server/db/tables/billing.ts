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

export interface BillingTables {
  instance_deposits: InstanceDepositsTable;
}
