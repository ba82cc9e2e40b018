// instance_requests: what a client asked of an instance's host that the agent carries out on its
// next sync: `logs` (the container's output), `command` (an allow-listed command), `reboot`,
// `recycle`. The agent posts back the output of logs and command; the client reads it at an
// unguessable result URL whose token is stored hashed (token_hash), until expires_at. Forward-only.
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await d
    .withId(db.schema.createTable('instance_requests'))
    .addColumn('instance_id', 'bigint', (c) => c.notNull())
    .addColumn('user_id', 'bigint', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('args', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('done_at', 'bigint')
    .addColumn('result', 'text')
    .execute();
  await db.schema
    .createIndex('instance_requests_token_uq')
    .unique()
    .on('instance_requests')
    .column('token_hash')
    .execute();
  // The agent's sync reads the pending requests of its instances.
  await db.schema
    .createIndex('instance_requests_pending_idx')
    .on('instance_requests')
    .columns(['instance_id', 'done_at'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
