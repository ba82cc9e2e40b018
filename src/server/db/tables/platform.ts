// Table types: rate limits and other cross-cutting tables.

/**
 * Fixed-window rate-limit counters, shared by every `serve` process on the database. One row per
 * (bucket, window): `bucket` is `family:who` (`search:u:42`, `logins:ip:10.0.0.1`), `window_start`
 * the window's start in epoch ms. `hits` is incremented by one atomic upsert per request.
 */
export interface RateLimitCountersTable {
  bucket: string;
  window_start: number;
  hits: number;
  /** When the row may be deleted (window end), epoch ms. */
  expires_at: number;
}

export interface PlatformTables {
  rate_limit_counters: RateLimitCountersTable;
}
