// Every module's routes, registered in one place. Each module owns its `<m>.routes.ts`.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.types.js';
import { accountsRoutes } from './accounts/accounts.routes.js';
import { apiKeysRoutes } from './api-keys/api-keys.routes.js';
import { sshKeysRoutes } from './ssh-keys/ssh-keys.routes.js';
import { marketRoutes } from './offers/offers.routes.js';
import { instancesRoutes } from './instances/instances.routes.js';
import { billingRoutes } from './billing/billing.routes.js';
import { machinesRoutes } from './machines/machines.routes.js';
import { maintenanceRoutes } from './maintenance/maintenance.routes.js';
import { twoFactorRoutes } from './two-factor/two-factor.routes.js';
import { agentGatewayRoutes } from './agent-gateway/agent-gateway.routes.js';
import { platformRoutes } from './platform/platform.routes.js';
import { webhooksRoutes } from './webhooks/webhooks.routes.js';
import { templatesRoutes } from './templates/templates.routes.js';
import { auditRoutes } from './audit/audit.routes.js';
import { envVarsRoutes } from './env-vars/env-vars.routes.js';
import { compatRoutes } from './compat/compat.routes.js';
import { teamsRoutes } from './teams/teams.routes.js';
import { volumesRoutes } from './volumes/volumes.routes.js';
import { usageHistoryRoutes } from './usage-history/usage-history.routes.js';
import { ssoRoutes } from './sso/sso.routes.js';
import { trustRoutes } from './trust/trust.routes.js';

export async function registerModules(app: FastifyInstance, deps: Deps): Promise<void> {
  await accountsRoutes(app, deps);
  await apiKeysRoutes(app, deps);
  await sshKeysRoutes(app, deps);
  await marketRoutes(app, deps);
  await instancesRoutes(app, deps);
  await billingRoutes(app, deps);
  await machinesRoutes(app, deps);
  await maintenanceRoutes(app, deps);
  await twoFactorRoutes(app, deps);
  await agentGatewayRoutes(app, deps);
  await platformRoutes(app, deps);
  await webhooksRoutes(app, deps);
  await templatesRoutes(app, deps);
  await auditRoutes(app, deps);
  await envVarsRoutes(app, deps);
  await usageHistoryRoutes(app, deps);
  await ssoRoutes(app, deps);
  await volumesRoutes(app, deps);
  await trustRoutes(app, deps);
  await teamsRoutes(app, deps);
  await compatRoutes(app, deps);
}
