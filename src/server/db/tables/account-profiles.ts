// Table types of the account settings a user changes themselves (migration 023).
import type { BillingAddress } from '../../../contract/api-types.js';

/** One row per user who changed a setting kept here (the address as shown); absent: every field null. */
export interface AccountProfilesTable extends BillingAddress {
  user_id: number;
  /**
   * The balance threshold last given, micro-dollars (null: none). Whether the alert is on is
   * the balance_alerts row; this keeps the value while it is off.
   */
  balance_threshold_micros: number | null;
  updated_at: number;
}

export interface AccountProfileTables {
  account_profiles: AccountProfilesTable;
}
