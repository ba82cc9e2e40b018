// makeDeps: builds every field of Deps (deps.types.ts) once per process, for the composition root
// (main.ts) and tests. Nothing but them imports this file.
import type { Deps, DepsInput } from './deps.types.js';
import { OfferIndex } from './modules/offers/offers.index.js';
import { OfferReplies } from './modules/offers/offers.reply.js';
import { gpuNameRead } from './modules/offers/offers.service.js';
import { makeCounters } from './modules/platform/platform.rate-limit.js';
import { HeartbeatBuffer } from './modules/agent-gateway/agent-gateway.heartbeats.js';
import { AgentWake } from './modules/agent-gateway/agent-gateway.wake.js';
import { UsageSampleMemory } from './modules/usage-history/usage-history.service.js';
import { makeMetrics } from './modules/platform/platform.metrics.js';
import { smsProvider } from './modules/sms/sms.provider.js';
import { KeyUseBuffer } from './http/key-uses.js';
import { AddressUseBuffer } from './modules/audit/audit.addresses.js';
import { AuditWrites } from './modules/audit/audit.writes.js';
import { OidcClients } from './modules/sso/sso.client.js';

export type { Deps, DepsInput };

export function makeDeps(p: DepsInput): Deps {
  const base = { ...p, db: p.store.db, dialect: p.store.dialect };
  return {
    ...base,
    kickOutbox: p.kickOutbox ?? (() => {}),
    jobs: [],
    offerIndex: p.offerIndex ?? new OfferIndex(p.store),
    offerReplies: new OfferReplies(),
    gpuNameRead: gpuNameRead(p.store),
    rateLimitCounters: p.rateLimitCounters ?? makeCounters(p.store),
    heartbeats: p.heartbeats ?? new HeartbeatBuffer(),
    usageSamples: new UsageSampleMemory(),
    keyUses: new KeyUseBuffer(),
    addressUses: new AddressUseBuffer(),
    auditWrites: new AuditWrites(),
    metrics: makeMetrics(base),
    sms: p.sms ?? smsProvider(p.config, p.clock),
    agentGateway: { closed: false },
    oidc: new OidcClients(p.config.oidc.providers),
    agentWake: new AgentWake((err) => p.log.warn({ err }, 'waking agents in the other processes failed')),
  };
}
