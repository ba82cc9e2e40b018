// account_profiles: the settings a user changes on their own account with PUT /api/v0/users/
// (the accounts module) beyond users.full_name: the billing address printed on their statements,
// and the balance threshold they last gave. Whether the balance alert is on, and at what
// threshold, is the balance_alerts row (migration 011): the threshold is kept here too so that
// turning the alert off and on again keeps it. One row per user, made at the first update.
// Kept out of `users`, whose row every authenticated request reads. Forward-only.
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, _d: SqlDialect): Promise<void> {
  await db.schema
    .createTable('account_profiles')
    .addColumn('user_id', 'bigint', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('billaddress_line1', 'text')
    .addColumn('billaddress_line2', 'text')
    .addColumn('billaddress_city', 'text')
    .addColumn('billaddress_zip', 'text')
    .addColumn('billaddress_country', 'text')
    .addColumn('billaddress_taxinfo', 'text')
    .addColumn('balance_threshold_micros', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
