// Table types of the account settings a user changes themselves (migration 023).

/** One row per user who changed a setting kept here; absent: every field null. */
export interface AccountProfilesTable {
  user_id: number;
  billaddress_line1: string | null;
  billaddress_line2: string | null;
  billaddress_city: string | null;
  billaddress_zip: string | null;
  billaddress_country: string | null;
  billaddress_taxinfo: string | null;
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
