// `openrig serve --demo` (operator-contract "Install and run"): a demo user with a fresh API key,
// printed with the base URL and example commands. The demo fleet (hosts, machines, agents) is
// added by the agent module.
import { createUser, insertApiKey } from './modules/accounts/accounts.service.js';
import { findUserByEmail } from './modules/accounts/accounts.repo.js';
import type { Server } from './main.js';

export const DEMO_EMAIL = 'demo@openrig.local';

export async function ensureDemoUser(server: Server): Promise<{ id: number; apiKey: string }> {
  const { deps } = server;
  const existing = await findUserByEmail(deps.db, DEMO_EMAIL);
  if (existing) {
    // Keys are stored as hashes only, so a restart mints a new key rather than reprinting one.
    const k = await insertApiKey(deps.db, { userId: existing.id, teamId: null, name: 'demo', permissions: null, now: deps.clock.now() });
    return { id: existing.id, apiKey: k.key };
  }
  const u = await createUser(deps, { email: DEMO_EMAIL, password: 'demo-password', fullName: 'Demo User', emailVerified: true, balanceUsd: 100 });
  return { id: u.id, apiKey: u.api_key };
}

export async function startDemo(server: Server): Promise<void> {
  const user = await ensureDemoUser(server);
  const u = server.url;
  const lines = [
    `openrig is running at ${u}`,
    `demo user: ${DEMO_EMAIL} (password demo-password)`,
    `demo API key: ${user.apiKey}`,
    '',
    'Try:',
    `  curl -s -H "Authorization: Bearer ${user.apiKey}" ${u}/api/v0/users/current/`,
    `  curl -s -H "Authorization: Bearer ${user.apiKey}" -H "Content-Type: application/json" -d '{"limit": 5}' ${u}/api/v0/bundles/`,
    `  curl -s -H "Authorization: Bearer ${user.apiKey}" ${u}/api/v0/instances/`,
    '',
  ];
  process.stdout.write(lines.join('\n') + '\n');
}
