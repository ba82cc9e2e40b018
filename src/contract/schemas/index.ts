// Every module's route contracts, by module: each export that has method, url and schema is one
// route's contract (the OpenAPI test checks the served document against them).
export * as instances from './instances.js';
export * as offers from './offers.js';
export * as machines from './machines.js';
export * as accounts from './accounts.js';
export * as audit from './audit.js';
export * as sshKeys from './ssh-keys.js';
export * as envVars from './env-vars.js';
export * as templates from './templates.js';
export * as apiKeys from './api-keys.js';
export * as maintenance from './maintenance.js';
export * as billing from './billing.js';
export * as webhooks from './webhooks.js';
export * as twoFactor from './two-factor.js';
export * as agentGateway from './agent-gateway.js';
export * as platform from './platform.js';
export * as compat from './compat.js';
export * as teams from './teams.js';
export * as volumes from './volumes.js';
export * as usageHistory from './usage-history.js';
export * as benchmarks from './benchmarks.js';
export * as sso from './sso.js';
export * as trust from './trust.js';
export * as payouts from './payouts.js';
export * as schedules from './schedules.js';
export * as copies from './copies.js';
export * as gateway from './gateway.js';
