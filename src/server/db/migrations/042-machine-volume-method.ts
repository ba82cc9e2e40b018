// machines.volume_method: how the machine's agent keeps volumes, as it says at each registration
// ('ext4-loop': one size-limited ext4 image per volume; 'directory': a plain directory whose size
// is not enforced). Null for a machine whose agent does not say (an older agent, or a machine made
// by `admin create-machines`). Hosts and renters see it on the machine and its volume offers.
// Forward-only.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('machines').addColumn('volume_method', 'text').execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
