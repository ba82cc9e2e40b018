// billing_ledger (user_id, kind, period_end) and (instance_id, period_end): the billing history
// and host earnings read a date range of one user's (or one host's instances') rows of some
// kinds, and the meter writes two rows (compute, disk) per running instance every interval (about
// 17,000 a day at 10 s), so without them such a read scans every row the account ever had.
// Forward-only.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('billing_ledger_user_kind_end_idx')
    .on('billing_ledger')
    .columns(['user_id', 'kind', 'period_end'])
    .execute();
  await db.schema
    .createIndex('billing_ledger_instance_end_idx')
    .on('billing_ledger')
    .columns(['instance_id', 'period_end'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('openrig migrations are forward-only');
}
