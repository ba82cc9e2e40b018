// Local volumes (the volumes module): storage on one machine that outlives the instances using it.
// volume_asks: disk a host lists on a machine for volumes (one live listing per machine, decided by
// a partial unique index), with the GB its volumes take (used_gb, moved by conditional UPDATEs of
// the listing's row, so a create and an unlist of one listing are decided by the database); volumes: a renter's volume made from a listing, with the instance that
// last mounted it. "At most one live instance mounts a volume" is decided by a conditional UPDATE
// of volumes.instance_id (volumes.repo.ts), "one listing per machine" by the index here.
// Forward-only.
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await d
    .withId(db.schema.createTable('volume_asks'))
    .addColumn('machine_id', 'bigint', (c) => c.notNull().references('machines.id'))
    .addColumn('host_id', 'bigint', (c) => c.notNull().references('users.id'))
    .addColumn('size_gb', 'bigint', (c) => c.notNull())
    .addColumn('used_gb', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('price_disk', 'double precision', (c) => c.notNull())
    .addColumn('end_date', 'bigint')
    .addColumn('listed', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('unlisted_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('volume_asks_listed_machine_uq')
    .unique()
    .on('volume_asks')
    .column('machine_id')
    .where(sql.ref('listed'), '=', 1)
    .execute();

  await d
    .withId(db.schema.createTable('volumes'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id'))
    .addColumn('ask_id', 'bigint', (c) => c.notNull().references('volume_asks.id'))
    .addColumn('machine_id', 'bigint', (c) => c.notNull().references('machines.id'))
    .addColumn('host_id', 'bigint', (c) => c.notNull())
    .addColumn('label', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('size_gb', 'bigint', (c) => c.notNull())
    .addColumn('storage_cost', 'double precision', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('instance_id', 'bigint')
    .addColumn('mount_path', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('deleted_at', 'bigint')
    .addColumn('billed_until', 'bigint', (c) => c.notNull())
    .addColumn('accrued_micros', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('unpaid_since', 'bigint')
    .execute();
  await db.schema.createIndex('volumes_user_idx').on('volumes').column('user_id').execute();
  await db.schema
    .createIndex('volumes_live_machine_idx')
    .on('volumes')
    .column('machine_id')
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();
  await db.schema.createIndex('volumes_instance_idx').on('volumes').column('instance_id').execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
