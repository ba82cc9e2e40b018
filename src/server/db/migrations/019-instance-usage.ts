// instances.disk_usage_bytes and instances.gpu_util: what the instance's agent last measured of it
// (agent-gateway sync): the bytes its disk holds (Docker: the container's writable layer; process
// runtime: its directory) and the mean utilisation of its GPUs in percent (null with simulated
// GPUs, or while it does not run). Null until an agent reports them; rows show them as disk_usage
// (GB), disk_util and gpu_util. Forward-only.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('instances').addColumn('disk_usage_bytes', 'bigint').execute();
  await db.schema.alterTable('instances').addColumn('gpu_util', 'double precision').execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
