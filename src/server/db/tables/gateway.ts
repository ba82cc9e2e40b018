// Table types of the gateway module (migration 038; instances.portal is in market.ts).
// Times are epoch ms.

/** A serving process's call for a tunnel from a machine's agent, claimed (deleted) by the agent. */
export interface GatewayTunnelRequestsTable {
  id: string;
  machine_id: number;
  /** The process that asked (its random node id). */
  node: string;
  /** Where the agent dials that process; null: the server URL the agent uses. */
  node_url: string | null;
  created_at: number;
}

export interface GatewayTables {
  gateway_tunnel_requests: GatewayTunnelRequestsTable;
}
