// Table types of the quotas module (migration 034-quotas): subaccounts, team and member limits,
// API key budgets, which key created an instance, and the budget alerts sent.
import type { Generated } from 'kysely';

export interface SubaccountsTable {
  user_id: number;
  /** The account that made it (`create subaccount`). */
  parent_id: number;
  username: string;
  /** 1: made for hosting only (the official CLI's --type host). */
  host_only: number;
  created_at: number;
}

/**
 * A team's limits (user_id 0) or a member's within the team (user_id: the person, not the team's
 * account); null: no limit of that kind.
 */
export interface QuotaLimitsTable {
  team_id: number;
  user_id: number;
  max_gpus: number | null;
  /** $/hour running at once, in micro-dollars per hour. */
  max_dph_micros: number | null;
  /** Spend per calendar month (UTC), micro-dollars. */
  month_budget_micros: number | null;
  /** Bumped by each create checked against the row: its lock orders concurrent creates. */
  holds: Generated<number>;
  updated_by: number | null;
  updated_at: number;
}

export interface ApiKeyLimitsTable {
  api_key_id: number;
  user_id: number;
  month_budget_micros: number;
  holds: Generated<number>;
  updated_at: number;
}

export interface QuotaInstanceOriginsTable {
  instance_id: number;
  /** The API key the create was made with (or whose 2FA login made its session); null: none. */
  api_key_id: number | null;
  /** The team the create was made for (a team context), else null. */
  team_id: number | null;
  /** The member acting for that team (AuthContext.member), else null. */
  member_id: number | null;
  created_at: number;
}

export interface QuotaAlertsTable {
  /** 'team:T', 'member:T:U' or 'key:K' */
  scope: string;
  /** 'YYYY-MM', UTC */
  month: string;
  /** 80 or 100 (percent of the budget) */
  level: number;
  spent_micros: number;
  created_at: number;
}

export interface QuotaTables {
  subaccounts: SubaccountsTable;
  quota_limits: QuotaLimitsTable;
  api_key_limits: ApiKeyLimitsTable;
  quota_instance_origins: QuotaInstanceOriginsTable;
  quota_alerts: QuotaAlertsTable;
}
