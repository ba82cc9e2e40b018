// instances.running_since: when the instance last became running (epoch ms), set by the status
// transition into `running` (instances.moves, setActualStatus); null until then. Rows show it as
// `uptime_mins` while the instance runs. Instances running before this column have no start to
// show until their next start. Forward-only.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('instances').addColumn('running_since', 'bigint').execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
