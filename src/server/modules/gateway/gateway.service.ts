// The gateway's JSON routes: a signed link for an instance's owner, and the agent's claim of the
// tunnels serving processes asked of its machines (gateway.tunnels.ts).
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import { GatewayErrors } from './gateway.errors.js';
import { agentMachineIds, claimTunnels, gatewayInstance } from './gateway.repo.js';
import { portalOf } from './gateway.portal.js';
import { makeToken } from './gateway.tokens.js';
import { TOKEN_PARAM } from './gateway.access.js';

/** The URL of an instance's port: by host with a gateway domain, else the server's path. */
export function portUrl(deps: Deps, instanceId: number, port: number): string {
  const base = deps.config.accounts.publicUrl.replace(/\/+$/, '');
  const domain = deps.config.gateway.domain;
  if (domain === null) return `${base}/i/${instanceId}/${port}/`;
  const proto = base.startsWith('https:') ? 'https' : 'http';
  return `${proto}://${instanceId}-${port}.${domain}/`;
}

/** A signed link to one of the caller's instance's served ports (the first when none is named). */
export async function gatewayLink(
  deps: Deps,
  auth: AuthContext,
  instanceId: number,
  port: number | undefined,
): Promise<{ success: true; url: string; expires_at: number }> {
  const inst = await gatewayInstance(deps.db, instanceId);
  if (!inst || inst.destroyed_at !== null || inst.user_id !== auth.user.id)
    throw GatewayErrors.notFound(`No instance ${instanceId} of yours`);
  let env: Record<string, string> = {};
  try {
    env = JSON.parse(inst.env) as Record<string, string>;
  } catch {
    env = {};
  }
  const served = portalOf(inst.id, inst.portal, env);
  const entry = port === undefined ? served[0] : served.find((p) => p.port === port);
  if (!entry)
    throw GatewayErrors.noPort(
      port === undefined
        ? `Instance ${instanceId} serves no port through the gateway (its create body named no portal and no -p port)`
        : `Instance ${instanceId} does not serve port ${port} through the gateway`,
    );
  const e = deps.clock.now() + deps.config.gateway.linkTtlS * 1000;
  const token = makeToken(deps.config.secretKey, { i: inst.id, u: inst.user_id, e });
  return {
    success: true,
    url: `${portUrl(deps, inst.id, entry.port)}?${TOKEN_PARAM}=${encodeURIComponent(token)}`,
    expires_at: e / 1000,
  };
}

/** The tunnels asked of this agent's machines, claimed once each; one per node. */
export async function claimAgentTunnels(
  deps: Deps,
  auth: AuthContext,
  body: { agent_uid: string; machine_ids: number[] },
): Promise<{ success: true; tunnels: { node: string; url: string | null }[] }> {
  const own = new Set(await agentMachineIds(deps.db, auth.user.id, body.agent_uid));
  const ids = [...new Set(body.machine_ids)].filter((id) => own.has(id));
  const rows = await claimTunnels(deps.db, ids);
  const seen = new Map<string, string | null>();
  for (const r of rows) seen.set(r.node, r.node_url);
  return { success: true, tunnels: [...seen].map(([node, url]) => ({ node, url })) };
}
