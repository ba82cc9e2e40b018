// Agent protocol state. Columns added to the offers module's tables (002 is theirs):
// - machines.agent_uid / agent_slot: which agent process (a UUID kept in its --state-dir) and
//   which of its `--machines N` slots registered the machine. Unique together, so a restarted
//   agent re-registers the same machines (an upsert decided by the index, never read-then-write).
// - instances.container_key_enc: the instance_api_key, AES-256-GCM with the server's secret key,
//   so the agent can inject it as CONTAINER_API_KEY (the key itself is otherwise stored hashed).
// - instances.agent_state / agent_reported_at: what the agent last said it saw, for operators.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('machines').addColumn('agent_uid', 'text').execute();
  await db.schema.alterTable('machines').addColumn('agent_slot', 'integer').execute();
  await db.schema
    .createIndex('machines_agent_slot_uq')
    .unique()
    .on('machines')
    .columns(['agent_uid', 'agent_slot'])
    .execute();
  await db.schema.alterTable('instances').addColumn('container_key_enc', 'text').execute();
  await db.schema.alterTable('instances').addColumn('agent_state', 'text').execute();
  await db.schema.alterTable('instances').addColumn('agent_reported_at', 'bigint').execute();
  // The heartbeat sweep scans machines by heartbeat age.
  await db.schema
    .createIndex('machines_heartbeat_idx')
    .on('machines')
    .columns(['online_state', 'last_heartbeat_at'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
