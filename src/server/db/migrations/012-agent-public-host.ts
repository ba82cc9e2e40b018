// machines.public_host: the address renters reach a machine's instances at, as its agent
// registered it (`--public-host`, by default the address the agent reaches the server from).
// Instances of that machine report it as ssh_host and public_ipaddr; null (machines without an
// agent, or registered before this column) falls back to the server's OPENRIG_PUBLIC_HOST.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('machines').addColumn('public_host', 'text').execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
