// The Deps type: what services need, visible in their signatures. Built once by the composition
// root (main.ts, or a test) with makeDeps (deps.ts) and passed down; there are no module-level
// singletons: every piece of state a module keeps (the offer index and replies, rate-limit
// counters, pending heartbeats and key uses, metrics, the SMS provider) is a typed field here,
// made once per process, and a test replaces one by passing another value. Only types: every
// module imports this file, and it loads nothing.
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Clock } from './clock.js';
import type { SqlDialect, Store } from './db/connection.js';
import type { DB } from './db/schema.js';
import type { OfferIndex } from './modules/offers/offers.index.js';
import type { OfferReplies } from './modules/offers/offers.reply.js';
import type { Counters } from './modules/platform/platform.rate-limit.js';
import type { HeartbeatBuffer } from './modules/agent-gateway/agent-gateway.heartbeats.js';
import type { AgentWake } from './modules/agent-gateway/agent-gateway.wake.js';
import type { UsageSampleMemory } from './modules/usage-history/usage-history.service.js';
import type { Metrics } from './modules/platform/platform.metrics.js';
import type { SmsProvider } from './modules/sms/sms.provider.js';
import type { KeyUseBuffer } from './http/key-uses.js';
import type { AddressUseBuffer } from './modules/audit/audit.addresses.js';
import type { AuditWrites } from './modules/audit/audit.writes.js';
import type { OidcClients } from './modules/sso/sso.client.js';

export interface Deps {
  store: Store;
  db: Kysely<DB>;
  dialect: SqlDialect;
  clock: Clock;
  config: Config;
  log: Logger;
  /** Wakes the e-mail relay after a commit that enqueued mail (no-op when none runs). */
  kickOutbox: () => void;
  /** Background loops started by main.ts; tests leave this empty and call the jobs directly. */
  jobs: { stop(): Promise<void> }[];
  /** This process's in-memory offer index (offers.index.ts). */
  offerIndex: OfferIndex;
  /** The search reply's serializers and the offer parts they wrote (offers.reply.ts). */
  offerReplies: OfferReplies;
  /** The distinct GPU names offered, one shared read at a time (offers.service.ts gpuNameRead). */
  gpuNameRead: () => Promise<string[]>;
  /** Rate-limit counters in the store's scratch state (platform.rate-limit.ts). */
  rateLimitCounters: Counters;
  /** Heartbeat times not yet written (agent-gateway.heartbeats.ts). */
  heartbeats: HeartbeatBuffer;
  /** The minute of each instance's usage sample this process last wrote (usage-history.service.ts). */
  usageSamples: UsageSampleMemory;
  /** API key uses not yet written to last_used_at (http/key-uses.ts). */
  keyUses: KeyUseBuffer;
  /** Addresses that used accounts, not yet written (audit/audit.addresses.ts). */
  addressUses: AddressUseBuffer;
  /** Audit rows being written after their replies (audit/audit.hooks.ts). */
  auditWrites: AuditWrites;
  /** This app's Prometheus metrics (a registry of its own). */
  metrics: Metrics;
  /** The SMS provider configured by OPENRIG_SMS_PROVIDER (sms.provider.ts). */
  sms: SmsProvider;
  /** Set once this process stops taking agent requests (read by the heartbeat sweep). */
  agentGateway: { closed: boolean };
  /** The agents' held waits in this process, and waking them in every process (agent-gateway.wake.ts). */
  agentWake: AgentWake;
  /** The configured OpenID Connect providers and their discovered metadata (sso.client.ts). */
  oidc: OidcClients;
  /**
   * Set in a cluster worker (cluster.ts): the Prometheus text of every worker's metrics together,
   * gathered by the primary; null when it could not be had (then the worker's own are served).
   */
  clusterMetrics?: () => Promise<string | null>;
}

/** What a caller must give; every other field has a default built from these. */
export type DepsInput = Pick<Deps, 'store' | 'clock' | 'config' | 'log'> &
  Partial<Pick<Deps, 'kickOutbox' | 'offerIndex' | 'rateLimitCounters' | 'heartbeats' | 'sms'>>;
