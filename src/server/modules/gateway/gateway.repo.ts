// Every SQL statement of the gateway module: the instance a gateway request names, the machines
// an agent's tunnel serves, and the tunnel requests (migration 038).
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';

export interface GatewayInstanceRow {
  id: number;
  user_id: number;
  machine_id: number;
  portal: string;
  env: string;
  actual_status: string | null;
  intended_status: string;
  destroyed_at: number | null;
}

/** The instance a gateway request names (destroyed or not); undefined when there is none. */
export function gatewayInstance(db: Kysely<DB>, id: number): Promise<GatewayInstanceRow | undefined> {
  return db
    .selectFrom('instances')
    .select([
      'id',
      'user_id',
      'machine_id',
      'portal',
      'env',
      'actual_status',
      'intended_status',
      'destroyed_at',
    ])
    .where('id', '=', id)
    .executeTakeFirst();
}

/** The live machines of this host's agent `agentUid` (those a tunnel from it may serve). */
export async function agentMachineIds(db: Kysely<DB>, hostId: number, agentUid: string): Promise<number[]> {
  const rows = await db
    .selectFrom('machines')
    .select('id')
    .where('host_id', '=', hostId)
    .where('agent_uid', '=', agentUid)
    .where('deleted_at', 'is', null)
    .execute();
  return rows.map((r) => r.id);
}

/** A process's call for a tunnel from a machine's agent; its own calls older than `staleBefore` go. */
export async function askTunnel(
  db: Kysely<DB>,
  row: { id: string; machine_id: number; node: string; node_url: string | null; created_at: number },
  staleBefore: number,
): Promise<void> {
  await db
    .deleteFrom('gateway_tunnel_requests')
    .where('node', '=', row.node)
    .where('created_at', '<', staleBefore)
    .execute();
  await db.insertInto('gateway_tunnel_requests').values(row).execute();
}

/** Claims (deletes) the tunnel requests of these machines: each is returned to one caller only. */
export async function claimTunnels(
  db: Kysely<DB>,
  machineIds: number[],
): Promise<{ node: string; node_url: string | null }[]> {
  if (machineIds.length === 0) return [];
  return db
    .deleteFrom('gateway_tunnel_requests')
    .where('machine_id', 'in', machineIds)
    .returning(['node', 'node_url'])
    .execute();
}
