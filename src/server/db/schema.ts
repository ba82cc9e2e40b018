// The whole database as Kysely sees it: one interface per module, merged here.
// Each module owns its file under tables/ and its migration under migrations/.
import type { FoundationTables } from './tables/foundation.js';
import type { AccountTokenTables } from './tables/account-tokens.js';
import type { SsoTables } from './tables/sso.js';
import type { MarketTables } from './tables/market.js';
import type { MaintenanceTables } from './tables/maintenance.js';
import type { TwoFactorTables } from './tables/two-factor.js';
import type { AgentTables } from './tables/agent.js';
import type { PlatformTables } from './tables/platform.js';
import type { WebhookTables } from './tables/webhooks.js';
import type { TemplateTables } from './tables/templates.js';
import type { AccountProfileTables } from './tables/account-profiles.js';
import type { AuditTables } from './tables/audit.js';
import type { EnvVarTables } from './tables/env-vars.js';
import type { BillingTables } from './tables/billing.js';
import type { TeamTables } from './tables/teams.js';
import type { QuotaTables } from './tables/quotas.js';
import type { VolumeTables } from './tables/volumes.js';
import type { UsageHistoryTables } from './tables/usage-history.js';
import type { ScheduleTables } from './tables/schedules.js';
import type { BenchmarkTables } from './tables/benchmarks.js';
import type { TrustTables } from './tables/trust.js';
import type { CopyTables } from './tables/copies.js';
import type { GatewayTables } from './tables/gateway.js';

export interface DB
  extends
    FoundationTables,
    AccountTokenTables,
    SsoTables,
    MarketTables,
    MaintenanceTables,
    TwoFactorTables,
    AgentTables,
    PlatformTables,
    WebhookTables,
    TemplateTables,
    AccountProfileTables,
    AuditTables,
    EnvVarTables,
    VolumeTables,
    UsageHistoryTables,
    ScheduleTables,
    BenchmarkTables,
    TrustTables,
    CopyTables,
    GatewayTables,
    QuotaTables,
    TeamTables,
    BillingTables {}
