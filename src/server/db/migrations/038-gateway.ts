// The HTTPS gateway to instance ports (docs/gateway.md).
// - instances.portal: the ports the renter named at creation, as JSON
//   [{"name": "jupyter", "port": 8888, "public": false}] ('[]' for none, as every older row).
// - gateway_tunnel_requests: a serving process that needs a tunnel from a machine's agent and
//   holds none writes one row (its node id, where the agent dials it) and wakes the agent; the
//   agent claims the rows of its machines (DELETE … RETURNING: each row is claimed once) and dials
//   each node named. Rows are short-lived: the claim deletes them, and a process deletes its own
//   stale ones when it writes a new one.
// Forward-only.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('instances')
    .addColumn('portal', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute();
  await db.schema
    .createTable('gateway_tunnel_requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('machine_id', 'integer', (c) => c.notNull())
    .addColumn('node', 'text', (c) => c.notNull())
    .addColumn('node_url', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('gateway_tunnel_requests_machine')
    .on('gateway_tunnel_requests')
    .column('machine_id')
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
