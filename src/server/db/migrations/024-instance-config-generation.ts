// instances.config_generation: which configuration of the instance its container must run. Creation
// is generation 1; each `update instance` (PUT /instances/update_template/{id}/) writes the new
// configuration and moves it up by one in the same statement, and the agent recreates a container
// of an older generation. machines.agent_config_generations: 1 when the machine's agent said at
// registration that it recreates containers by generation (0 for agents older than this, which
// would ignore an update, so the server refuses updates of their instances). Forward-only.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('instances')
    .addColumn('config_generation', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
  await db.schema
    .alterTable('machines')
    .addColumn('agent_config_generations', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
