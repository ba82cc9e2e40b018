// Volume clones (`clone volume`, docs/volumes.md) are copies whose destination is a new volume on
// another machine: copies.dst_kind 'volume', dst_id the new volume. No instance's SSH server is
// there to receive it, so the destination's agent opens one for the copy and reports its port:
// copies.dst_port (null until then, and for copies into an instance, which use the instance's).
// copies.compress: rsync compresses the data on the way (a clone's default; `-d` turns it off).
// Forward-only.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('copies').addColumn('dst_port', 'integer').execute();
  await db.schema
    .alterTable('copies')
    .addColumn('compress', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
