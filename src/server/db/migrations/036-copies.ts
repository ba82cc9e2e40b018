// copies: a renter's copy of files from one of their instances (or volumes) into another of their
// instances, carried out by the agents (docs/data.md). The source's agent pushes with rsync over
// SSH to the destination instance's SSH server, logging in as `vastai_kaalia` with a one-time key
// the server made for the copy: its private half sealed with the server's secret (key_enc, handed
// to the source's agent only), its public half's SHA-256 (key_fp) what the destination's SSH
// server asks the server to confirm, once (key_used_at). A copy is active until ended_at is set;
// the unique index on (dst_kind, dst_id) among the active copies decides between two copies into
// the same destination at once: one copy at a time into a destination. Forward-only.
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await d
    .withId(db.schema.createTable('copies'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id'))
    // instance | volume
    .addColumn('src_kind', 'text', (c) => c.notNull())
    .addColumn('src_id', 'bigint', (c) => c.notNull())
    .addColumn('src_machine_id', 'bigint', (c) => c.notNull())
    .addColumn('src_path', 'text', (c) => c.notNull())
    // instance
    .addColumn('dst_kind', 'text', (c) => c.notNull())
    .addColumn('dst_id', 'bigint', (c) => c.notNull())
    .addColumn('dst_machine_id', 'bigint', (c) => c.notNull())
    .addColumn('dst_path', 'text', (c) => c.notNull())
    // JSON array of rsync --exclude patterns
    .addColumn('excludes', 'text', (c) => c.notNull().defaultTo('[]'))
    // queued → running → done | failed | canceled
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('queued'))
    .addColumn('key_enc', 'text', (c) => c.notNull())
    .addColumn('key_fp', 'text', (c) => c.notNull())
    .addColumn('key_used_at', 'bigint')
    .addColumn('progress', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('bytes', 'bigint')
    .addColumn('msg', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('ended_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('copies_active_dst_uq')
    .unique()
    .on('copies')
    .columns(['dst_kind', 'dst_id'])
    .where(sql.ref('ended_at'), 'is', null)
    .execute();
  await db.schema
    .createIndex('copies_src_machine_idx')
    .on('copies')
    .columns(['src_machine_id', 'ended_at'])
    .execute();
  await db.schema.createIndex('copies_user_idx').on('copies').columns(['user_id', 'id']).execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
