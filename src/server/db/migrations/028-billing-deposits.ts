// instance_deposits: the prepaid (reserved) deposit of an on-demand instance, one row per
// instance, written by billing only. A prepay moves credit from the balance into remaining_micros
// and sets the discount; the meter draws the instance's charges from it first; destroying the
// instance refunds what is left (refunded_at, set once, decides that it happens once). The
// counters always satisfy prepaid = drawn + refunded + remaining. Forward-only.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('instance_deposits')
    .addColumn('instance_id', 'bigint', (c) => c.primaryKey().references('instances.id'))
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id'))
    .addColumn('remaining_micros', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('prepaid_micros', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('drawn_micros', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('discount_micros', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('refunded_micros', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('discount_rate', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('discount_months', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('refunded_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('instance_deposits_user_idx')
    .on('instance_deposits')
    .column('user_id')
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
