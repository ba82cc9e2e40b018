// machines.agent_runtime: how the machine's agent runs instances, as it says at each registration
// ('process': plain host processes with no isolation, as the demo runs them; 'docker': containers).
// Null for a machine registered before this column, or made by `admin create-machines`. Renters
// see it on their instances (`machine_runtime`), so a console can say when there is no isolation.
// Forward-only.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('machines').addColumn('agent_runtime', 'text').execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
